// SPDX-License-Identifier: Apache-2.0
// `gpuwhy query [--db FILE] "SQL" [--format table|csv|json]`: read-only SQL over a trace file,
// with the shipped views (v_calls, v_call_offcpu, ...) installed. Works on a copied file without
// root. `--list-views` prints the views and the question each one answers.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/untrusted.hpp"
#include "store/json_cell.hpp"
#include "store/store.hpp"

namespace gpuwhy::cli {
namespace {

using store::ValueType;

struct QueryOptions {
  std::vector<std::string> dbs = {kDefaultDb};  // several: one row stream, with a host column
  std::string sql;
  std::string format = "table";
  bool list_views = false;
  unsigned timeout_s = 60;       // 0: no limit
  int64_t max_memory_mb = 4096;  // SQLite's own heap; 0: no limit
};

void put(std::string_view s) { std::fwrite(s.data(), 1, s.size(), stdout); }

bool numeric(ValueType t) { return t == ValueType::Integer || t == ValueType::Real; }

// Terminal columns taken by UTF-8 text: one per code point (task names and paths are mostly
// ASCII; wide CJK glyphs would need wcwidth and are not worth a dependency).
size_t display_width(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// A cell on one table line: control characters would break the alignment, and a name a traced
// process chose must not drive the terminal (untrusted::shown()).
std::string table_cell(std::string_view v) { return untrusted::shown(v); }

// Aligned columns, a header line and a dashed rule; numbers right-aligned; NULL shown empty.
// Streamed: widths come from the header and the first kTableSampleRows rows, which are held back
// until then; later rows are written as they come (a wider cell pushes its line's later columns
// right rather than the whole table being buffered).
class TableWriter {
 public:
  static constexpr size_t kTableSampleRows = 200;

  void header(const std::vector<std::string>& columns) { columns_ = columns; }

  void row(const std::vector<std::string>& values, const std::vector<ValueType>& types) {
    std::vector<std::string> cells(values.size());
    for (size_t c = 0; c < values.size(); ++c) cells[c] = table_cell(values[c]);
    if (started_) return line(cells, [&](size_t c) { return numeric(types[c]); });
    held_.push_back({std::move(cells), types});
    if (held_.size() >= kTableSampleRows) start();
  }

  void end() {
    if (!started_) start();
  }

 private:
  void start() {
    started_ = true;
    const size_t n = columns_.size();
    width_.assign(n, 0);
    std::vector<bool> right(n, true), any_value(n, false);
    for (size_t c = 0; c < n; ++c) width_[c] = display_width(columns_[c]);
    for (const auto& [cells, types] : held_) {
      for (size_t c = 0; c < n; ++c) {
        width_[c] = std::max(width_[c], display_width(cells[c]));
        if (types[c] == ValueType::Null) continue;
        any_value[c] = true;
        if (!numeric(types[c])) right[c] = false;
      }
    }
    // A header is right-aligned over a column of numbers only.
    line(columns_, [&](size_t c) { return right[c] && any_value[c]; });
    std::vector<std::string> rule(n);
    for (size_t c = 0; c < n; ++c) rule[c] = std::string(width_[c], '-');
    line(rule, [](size_t) { return false; });
    for (const auto& held : held_)  // no structured binding: clang 14 cannot capture one
      line(held.first, [&](size_t c) { return numeric(held.second[c]); });
    held_.clear();
    held_.shrink_to_fit();
  }

  template <class RightOf>
  void line(const std::vector<std::string>& cells, RightOf right_of) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string& v = cells[c];
      const size_t w = display_width(v);
      const std::string pad(width_[c] > w ? width_[c] - w : 0, ' ');
      if (c) out += "  ";
      out += right_of(c) ? pad + v : v + pad;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
    put(out);
  }

  std::vector<std::string> columns_;
  std::vector<std::pair<std::vector<std::string>, std::vector<ValueType>>> held_;
  std::vector<size_t> width_;
  bool started_ = false;
};

// RFC 4180: CRLF line ends; a field with a comma or quote is quoted, quotes doubled. Control
// characters (RFC 4180 text has none) as untrusted::shown() escapes, as `gpuwhy export` writes.
void write_csv_record(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    const std::string f = untrusted::shown(fields[i]);
    if (f.find_first_of(",\"\r\n") == std::string::npos) {
      out += f;
      continue;
    }
    out += '"';
    for (char c : f) {
      if (c == '"') out += '"';
      out += c;
    }
    out += '"';
  }
  out += "\r\n";
  put(out);
}

int list_views() {
  for (const store::ViewInfo& v : store::shipped_views()) {
    put(v.name);
    put("\n");
    size_t i = 0;
    while (i <= v.description.size()) {
      const size_t nl = v.description.find('\n', i);
      const size_t end = nl == std::string::npos ? v.description.size() : nl;
      put("    ");
      put(std::string_view(v.description).substr(i, end - i));
      put("\n");
      i = end + 1;
    }
    put("\n");
  }
  return 0;
}

int run_query_command(const QueryOptions& o) {
  if (o.list_views) return list_views();
  if (o.sql.empty())
    return fail(
        "no SQL given; try: gpuwhy query \"SELECT * FROM v_losses\" (views: gpuwhy query "
        "--list-views, tables: docs/schema.md)",
        2);
  // Several files (one per host): the statement runs on each in turn, read-only as on one, and
  // every row comes back with the file's host first. Each file keeps its own connection and
  // guard: no ATTACH, so one statement never sees two files at once (aggregate across hosts in
  // the fleet store, docs/fleet.md).
  const bool several = o.dbs.size() > 1;
  std::vector<std::unique_ptr<store::TraceFile>> files;
  for (const std::string& db : o.dbs) {
    auto file = store::TraceFile::open(db);
    if (!file) return fail(file.error().line(), file.error().exit_code);
    const store::TraceFile& f = **file;
    if (const std::string w = f.incomplete_warning(); !w.empty()) fail("warning: " + w, 0);
    if (!f.wal_warning().empty()) fail("warning: " + f.wal_warning(), 0);
    // A runaway statement (a cross join, a recursive CTE) ends with a clear line instead of
    // running or growing forever.
    (**file).set_limits(o.timeout_s, o.max_memory_mb << 20);
    files.push_back(std::move(file.value()));
  }

  TableWriter table;
  std::vector<std::string> keys, first_columns;
  bool first_row = true, mismatch = false;
  std::string host;  // of the file being read, when several
  auto on_header = [&](const std::vector<std::string>& raw) {
    std::vector<std::string> cols = raw;
    if (several) cols.insert(cols.begin(), "host");
    if (!first_columns.empty()) {
      mismatch = mismatch || cols != first_columns;
      return;
    }
    first_columns = cols;
    if (o.format == "table")
      table.header(cols);
    else if (o.format == "csv")
      write_csv_record(cols);
    else
      keys = store::unique_keys(cols);
  };
  auto on_row = [&](const std::vector<std::string>& raw, const std::vector<ValueType>& raw_types) {
    if (mismatch) return;
    std::vector<std::string> values = raw;
    std::vector<ValueType> types = raw_types;
    if (several) {
      values.insert(values.begin(), host);
      types.insert(types.begin(), ValueType::Text);
    }
    if (o.format == "table") {
      table.row(values, types);
    } else if (o.format == "csv") {
      write_csv_record(values);
    } else {
      nlohmann::ordered_json row = nlohmann::ordered_json::object();
      for (size_t i = 0; i < keys.size(); ++i) row[keys[i]] = store::json_cell(values[i], types[i]);
      put(first_row ? "[\n" : ",\n");
      first_row = false;
      // Task names and paths may hold bytes that are not UTF-8: replace, do not throw.
      put(row.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    }
  };
  Status st;
  for (const auto& f : files) {
    if (several) {
      host = "?";
      (void)store::for_each_row(
          *f, "SELECT host FROM session", [](const std::vector<std::string>&) {},
          [&](const std::vector<std::string>& v, const std::vector<ValueType>&) {
            if (!v.empty() && !v[0].empty()) host = v[0];
          });
    }
    st = store::for_each_row(*f, o.sql, on_header, on_row);
    if (!st) break;
    if (mismatch) {
      std::fflush(stdout);
      return fail("the statement gives other columns on " + f->path() + " than on " +
                      files.front()->path() +
                      " (traces of different gpuwhy versions?); name "
                      "the columns you want",
                  2);
    }
  }
  if (st) {
    if (o.format == "table")
      table.end();
    else if (o.format == "json")
      put(first_row ? "[]\n" : "\n]\n");
  }
  std::fflush(stdout);
  if (!st) {
    const std::string& what = st.error().what;
    if (what.find("interrupted") != std::string::npos)
      return fail("the query ran longer than --timeout " + std::to_string(o.timeout_s) +
                  " s and was stopped; narrow it (WHERE ts BETWEEN ..., LIMIT) or raise --timeout");
    if (what.find("out of memory") != std::string::npos)
      return fail("the query needed more than --max-memory " + std::to_string(o.max_memory_mb) +
                  " MiB and was stopped; narrow it or raise --max-memory");
    return fail(st.error().line(), st.error().exit_code);
  }
  return 0;
}

}  // namespace

void add_query_command(CLI::App& root, Runner& run) {
  auto opts = std::make_shared<QueryOptions>();
  CLI::App* cmd = root.add_subcommand(
      "query", "Run read-only SQL on a trace file (tables: docs/schema.md; views: --list-views)");
  cmd->add_option("sql", opts->sql, "One SQL statement, e.g. \"SELECT * FROM v_losses\"");
  cmd->add_option("--db", opts->dbs,
                  "Trace file to read; repeat it to run the statement on each file, every row "
                  "led by its file's host")
      ->allow_extra_args(false)  // one file per --db: the SQL positional is not a file
      ->capture_default_str();
  cmd->add_option("--format", opts->format, "Output format")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  cmd->add_option("--timeout", opts->timeout_s,
                  "Stop a statement that runs longer than this many seconds (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--max-memory", opts->max_memory_mb,
                  "Stop a statement once SQLite holds this many MiB (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--list-views", opts->list_views,
                "List the shipped views and the question each one answers");
  cmd->callback([&run, opts] { run = [opts] { return run_query_command(*opts); }; });
}

}  // namespace gpuwhy::cli
