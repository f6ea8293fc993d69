// SPDX-License-Identifier: Apache-2.0
// The shipped views: sql/views/v_*.sql, one "CREATE VIEW name AS ..." per file, after a header
// comment that says what question the view answers. The other files there define the rollup
// tables as views over the events, for files that predate them.
#include <algorithm>
#include <cctype>

#include "store/embedded_sql.hpp"
#include "store/rollups.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::store {
namespace {

constexpr std::string_view kCreate = "CREATE VIEW ";

// Offset of "CREATE VIEW" after the leading comments and blank lines; npos if the file does not
// start that way.
size_t create_offset(std::string_view sql) {
  size_t i = 0;
  while (i < sql.size()) {
    if (std::isspace(static_cast<unsigned char>(sql[i]))) {
      ++i;
    } else if (sql.substr(i, 2) == "--") {
      const size_t nl = sql.find('\n', i);
      i = nl == std::string_view::npos ? sql.size() : nl + 1;
    } else {
      break;
    }
  }
  return sql.substr(i).starts_with(kCreate) ? i : std::string_view::npos;
}

std::string header_comment(std::string_view sql) {
  std::string out;
  size_t i = 0;
  while (i < sql.size()) {
    const size_t nl = sql.find('\n', i);
    std::string_view line = sql.substr(i, nl == std::string_view::npos ? sql.npos : nl - i);
    i = nl == std::string_view::npos ? sql.size() : nl + 1;
    if (!line.starts_with("--")) break;
    line.remove_prefix(2);
    if (line.starts_with(' ')) line.remove_prefix(1);
    if (line.starts_with("SPDX-License-Identifier")) continue;
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}

// `sql` (sql/views/<file>) with its CREATE VIEW made CREATE TEMP VIEW when `temp`.
Result<std::string> view_sql(std::string_view sql, std::string_view file, bool temp) {
  const size_t at = create_offset(sql);
  if (at == std::string_view::npos)
    return Error{"internal: sql/views/" + std::string(file) + " does not start with CREATE VIEW"};
  std::string out(sql);
  if (temp) out.replace(at, kCreate.size(), "CREATE TEMP VIEW ");
  return out;
}

// A file written before the rollup tables existed gets each one as a TEMP view of the same name
// computing its rows from the events (sql/views/<table>.sql): the views that read the rollups
// then answer as they always did, at per-row speed.
Status install_rollup_fallbacks(sqlite3* db) {
  for (std::string_view table : rollup_tables()) {
    auto stored = has_table(db, table);
    if (!stored) return stored.error();
    if (*stored) continue;
    const std::string file = std::string(table) + ".sql";
    const auto files = embedded_sql();
    const auto f = std::find_if(files.begin(), files.end(),
                                [&](const EmbeddedSql& e) { return e.name == file; });
    if (f == files.end()) return Error{"internal: sql/views/" + file + " is not embedded"};
    auto sql = view_sql(f->text, file, /*temp=*/true);
    if (!sql) return sql.error();
    if (auto st = exec(db, *sql, "presenting " + std::string(table) + " over the events"); !st)
      return st;
  }
  return {};
}

// A file written before Python frames were recorded: an empty python_frames, so v_call_sites and
// v_python_sites answer (with no Python sites) instead of failing.
Status install_python_frames_fallback(sqlite3* db) {
  auto stored = has_table(db, "python_frames");
  if (!stored) return stored.error();
  if (*stored) return {};
  return exec(db,
              "CREATE TEMP VIEW python_frames AS SELECT NULL AS py_stack_id, NULL AS depth, "
              "NULL AS pid, NULL AS file, NULL AS function, NULL AS line, NULL AS source, "
              "NULL AS code_addr, NULL AS instr WHERE 0",
              "presenting an empty python_frames");
}

}  // namespace

std::vector<ViewInfo> shipped_views() {
  std::vector<ViewInfo> views;
  for (const EmbeddedSql& f : embedded_sql()) {
    if (!f.name.starts_with("v_") || !f.name.ends_with(".sql")) continue;
    std::string name(f.name.substr(0, f.name.size() - 4));
    views.push_back({std::move(name), header_comment(f.text), f.text});
  }
  std::sort(views.begin(), views.end(),
            [](const ViewInfo& a, const ViewInfo& b) { return a.name < b.name; });
  return views;
}

Status install_views(sqlite3* db, bool temp) {
  if (temp) {
    if (auto st = install_rollup_fallbacks(db); !st) return st;
    if (auto st = install_python_frames_fallback(db); !st) return st;
  }
  std::vector<std::string> pending;
  for (const ViewInfo& v : shipped_views()) {
    auto sql = view_sql(v.sql, v.name + ".sql", temp);
    if (!sql) return sql.error();
    pending.push_back(std::move(sql.value()));
  }
  // SQLite resolves a view's tables only when it is used, but refuses a view whose name is
  // taken; the loop also tolerates any future check on dependencies by retrying in rounds.
  while (!pending.empty()) {
    std::vector<std::string> failed;
    std::string last_error;
    for (std::string& sql : pending) {
      if (auto st = exec(db, sql, "installing the shipped views"); !st) {
        last_error = st.error().what;
        failed.push_back(std::move(sql));
      }
    }
    if (failed.size() == pending.size()) return Error{last_error};
    pending = std::move(failed);
  }
  return {};
}

}  // namespace gpuwhy::store
