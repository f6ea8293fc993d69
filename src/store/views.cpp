// SPDX-License-Identifier: Apache-2.0
// The shipped views: sql/views/v_*.sql, one "CREATE VIEW name AS ..." per file, after a header
// comment that says what question the view answers.
#include <algorithm>
#include <cctype>

#include "store/embedded_sql.hpp"
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
  std::vector<std::string> pending;
  for (const ViewInfo& v : shipped_views()) {
    const size_t at = create_offset(v.sql);
    if (at == std::string_view::npos)
      return Error{"internal: sql/views/" + v.name + ".sql does not start with CREATE VIEW"};
    std::string sql(v.sql);
    if (temp) sql.replace(at, kCreate.size(), "CREATE TEMP VIEW ");
    pending.push_back(std::move(sql));
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
