// SPDX-License-Identifier: Apache-2.0
// `gpuwhy query [--db FILE] "SQL" [--format table|csv|json]`: read-only SQL over a trace file,
// with the shipped views (v_calls, v_call_offcpu, ...) installed. Works on a copied file without
// root. `--list-views` prints the views and the question each one answers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "store/store.hpp"

namespace gpuwhy::cli {
namespace {

using store::ValueType;

struct QueryOptions {
  std::string db = kDefaultDb;
  std::string sql;
  std::string format = "table";
  bool list_views = false;
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

// A cell on one table line: control characters would break the alignment.
std::string table_cell(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else
      out += c;
  }
  return out;
}

// Aligned columns, a header line and a dashed rule; numbers right-aligned; NULL shown empty.
void write_table(const store::QueryResult& r) {
  const size_t n = r.columns.size();
  std::vector<size_t> width(n);
  std::vector<bool> right(n, false), any_value(n, false);
  std::vector<std::vector<std::string>> cells(r.rows.size());
  for (size_t c = 0; c < n; ++c) {
    width[c] = display_width(r.columns[c]);
    right[c] = true;
  }
  for (size_t i = 0; i < r.rows.size(); ++i) {
    cells[i].resize(n);
    for (size_t c = 0; c < n; ++c) {
      cells[i][c] = table_cell(r.rows[i][c]);
      width[c] = std::max(width[c], display_width(cells[i][c]));
      if (r.types[i][c] == ValueType::Null) continue;
      any_value[c] = true;
      if (!numeric(r.types[i][c])) right[c] = false;
    }
  }
  auto line = [&](auto&& cell_of, auto&& right_of) {
    std::string out;
    for (size_t c = 0; c < n; ++c) {
      const std::string& v = cell_of(c);
      const std::string pad(width[c] - display_width(v), ' ');
      if (c) out += "  ";
      out += right_of(c) ? pad + v : v + pad;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    put(out);
    put("\n");
  };
  // A header is right-aligned over a column of numbers only.
  line([&](size_t c) -> const std::string& { return r.columns[c]; },
       [&](size_t c) { return right[c] && any_value[c]; });
  std::vector<std::string> rule(n);
  for (size_t c = 0; c < n; ++c) rule[c] = std::string(width[c], '-');
  line([&](size_t c) -> const std::string& { return rule[c]; }, [](size_t) { return false; });
  for (size_t i = 0; i < cells.size(); ++i)
    line([&](size_t c) -> const std::string& { return cells[i][c]; },
         [&](size_t c) { return numeric(r.types[i][c]); });
}

// RFC 4180: CRLF line ends; a field with a comma, quote or line break is quoted, quotes doubled.
void write_csv_record(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    const std::string& f = fields[i];
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

// Object keys must be unique: a second "ts" becomes "ts_2".
std::vector<std::string> unique_keys(const std::vector<std::string>& columns) {
  std::vector<std::string> keys;
  for (const std::string& c : columns) {
    std::string k = c;
    for (int i = 2; std::find(keys.begin(), keys.end(), k) != keys.end(); ++i)
      k = c + "_" + std::to_string(i);
    keys.push_back(std::move(k));
  }
  return keys;
}

nlohmann::ordered_json json_value(const std::string& v, ValueType t) {
  switch (t) {
    case ValueType::Null:
      return nullptr;
    case ValueType::Integer:
      return std::strtoll(v.c_str(), nullptr, 10);
    case ValueType::Real: {
      const double d = std::strtod(v.c_str(), nullptr);
      return std::isfinite(d) ? nlohmann::ordered_json(d) : nlohmann::ordered_json(nullptr);
    }
    default:
      return v;
  }
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
  auto file = store::TraceFile::open(o.db);
  if (!file) return fail(file.error().line(), file.error().exit_code);
  const store::TraceFile& f = **file;
  if (const std::string w = f.incomplete_warning(); !w.empty()) fail("warning: " + w, 0);

  Status st;
  if (o.format == "table") {
    auto r = store::run_query(f, o.sql);
    if (!r) return fail(r.error().line(), r.error().exit_code);
    write_table(*r);
  } else if (o.format == "csv") {
    st = store::for_each_row(
        f, o.sql, [](const std::vector<std::string>& cols) { write_csv_record(cols); },
        [](const std::vector<std::string>& values, const std::vector<ValueType>&) {
          write_csv_record(values);
        });
  } else {
    std::vector<std::string> keys;
    bool first = true;
    st = store::for_each_row(
        f, o.sql, [&](const std::vector<std::string>& cols) { keys = unique_keys(cols); },
        [&](const std::vector<std::string>& values, const std::vector<ValueType>& types) {
          nlohmann::ordered_json row = nlohmann::ordered_json::object();
          for (size_t i = 0; i < keys.size(); ++i) row[keys[i]] = json_value(values[i], types[i]);
          put(first ? "[\n" : ",\n");
          first = false;
          // Task names and paths may hold bytes that are not UTF-8: replace, do not throw.
          put(row.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
        });
    if (st) put(first ? "[]\n" : "\n]\n");
  }
  std::fflush(stdout);
  if (!st) return fail(st.error().line(), st.error().exit_code);
  return 0;
}

}  // namespace

void add_query_command(CLI::App& root, Runner& run) {
  auto opts = std::make_shared<QueryOptions>();
  CLI::App* cmd = root.add_subcommand(
      "query", "Run read-only SQL on a trace file (tables: docs/schema.md; views: --list-views)");
  cmd->add_option("sql", opts->sql, "One SQL statement, e.g. \"SELECT * FROM v_losses\"");
  cmd->add_option("--db", opts->db, "Trace file to read")->capture_default_str();
  cmd->add_option("--format", opts->format, "Output format")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  cmd->add_flag("--list-views", opts->list_views,
                "List the shipped views and the question each one answers");
  cmd->callback([&run, opts] { run = [opts] { return run_query_command(*opts); }; });
}

}  // namespace gpuwhy::cli
