// SPDX-License-Identifier: Apache-2.0
#include "export/text_export.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/cleanup.hpp"
#include "core/untrusted.hpp"
#include "export/parquet_writer.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::exporter {
namespace {

namespace fs = std::filesystem;

struct FileCloser {
  void operator()(FILE* f) const {
    if (f && f != stdout) std::fclose(f);
  }
};
using File = std::unique_ptr<FILE, FileCloser>;

// RFC 4180, as `gpuwhy query --format csv` writes it; NULL is an empty field. RFC 4180's text
// has no control characters: a name's escape codes and line breaks are written as
// untrusted::shown() escapes (\x1b, \n), so `cat` of an export cannot drive the terminal and
// every record is one line.
void csv_field(std::string& line, const char* v, int n) {
  const std::string escaped = untrusted::shown(std::string_view(v, static_cast<size_t>(n)));
  const std::string_view s(escaped);
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) {
    line.append(s);
    return;
  }
  line += '"';
  for (char c : s) {
    if (c == '"') line += '"';
    line += c;
  }
  line += '"';
}

void json_string(std::string& line, const char* v, int n) {
  // Task names and paths may hold bytes that are not UTF-8: replaced, never an exception.
  line += nlohmann::json(std::string(v, n))
              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<uint64_t> write_rows(const store::TraceFile& file, const std::string& select,
                            TextFormat format, FILE* out, const std::string& what) {
  auto s = store::Stmt::prepare(file.db(), select, "reading " + what);
  if (!s) return s.error();
  sqlite3_stmt* st = s->get();
  const int n = sqlite3_column_count(st);
  std::vector<std::string> keys(n);
  std::string line;
  for (int i = 0; i < n; ++i) {
    keys[i] = sqlite3_column_name(st, i);
    if (format == TextFormat::Csv) {
      if (i) line += ',';
      csv_field(line, keys[i].data(), static_cast<int>(keys[i].size()));
    } else {
      std::string k;
      json_string(k, keys[i].data(), static_cast<int>(keys[i].size()));
      keys[i] = k + ":";
    }
  }
  if (format == TextFormat::Csv) {
    line += "\r\n";
    std::fwrite(line.data(), 1, line.size(), out);
  }
  uint64_t rows = 0;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    line.clear();
    if (format == TextFormat::Jsonl) line += '{';
    for (int i = 0; i < n; ++i) {
      if (i) line += ',';
      if (format == TextFormat::Jsonl) line += keys[i];
      const int type = sqlite3_column_type(st, i);
      if (type == SQLITE_NULL) {
        if (format == TextFormat::Jsonl) line += "null";
      } else if (type == SQLITE_INTEGER) {
        line += std::to_string(sqlite3_column_int64(st, i));
      } else if (type == SQLITE_FLOAT) {
        const double d = sqlite3_column_double(st, i);
        line += format == TextFormat::Jsonl
                    ? nlohmann::json(d).dump()
                    : reinterpret_cast<const char*>(sqlite3_column_text(st, i));
      } else {
        const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
        const int len = sqlite3_column_bytes(st, i);
        format == TextFormat::Csv ? csv_field(line, t, len) : json_string(line, t, len);
      }
    }
    line += format == TextFormat::Csv ? "\r\n" : "}\n";
    if (std::fwrite(line.data(), 1, line.size(), out) != line.size())
      return errno_error("cannot write " + what);
    ++rows;
  }
  if (rc != SQLITE_DONE) return store::sqlite_error(file.db(), "reading " + what);
  return rows;
}

// A Parquet column's type from the SQLite column's declared type, or, for an expression (the
// rowid as row_id, the rollups' sums), from the first row's value. Wall-clock columns are
// timestamps.
parquet::ColumnType parquet_type(sqlite3_stmt* st, int i, const std::string& table) {
  const std::string name = sqlite3_column_name(st, i);
  const char* decl = sqlite3_column_decltype(st, i);
  std::string d = decl ? decl : "";
  for (char& c : d) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  bool integer = d.find("INT") != std::string::npos;
  bool real =
      !integer && (d.find("REAL") != std::string::npos || d.find("FLOA") != std::string::npos ||
                   d.find("DOUB") != std::string::npos);
  if (!decl) {  // an expression (row_id, a rollup's sums): what its first value is
    const int t = sqlite3_column_type(st, i);
    real = t == SQLITE_FLOAT;
    // NULL first (a sum of no bytes) or no row: the expressions here are counts and sums; a text
    // value later fails the export with one line rather than being written wrong.
    integer = t == SQLITE_INTEGER || t == SQLITE_NULL;
  }
  if (integer) {
    const bool wall = name == "ts" || name == "first_seen_ns" || name == "exit_ns" ||
                      (table == "session" && (name == "start_ns" || name == "end_ns" ||
                                              name == "last_commit_ns" || name == "last_event_ns"));
    return wall ? parquet::ColumnType::TimestampNs : parquet::ColumnType::Int64;
  }
  return real ? parquet::ColumnType::Double : parquet::ColumnType::Text;
}

Result<uint64_t> write_parquet(const store::TraceFile& file, const std::string& select, FILE* out,
                               const std::string& what, std::vector<std::string>* timestamps) {
  auto s = store::Stmt::prepare(file.db(), select, "reading " + what);
  if (!s) return s.error();
  sqlite3_stmt* st = s->get();
  const int n = sqlite3_column_count(st);
  int rc = sqlite3_step(st);  // the first row, for the types of expression columns
  std::vector<parquet::Column> columns;
  for (int i = 0; i < n; ++i) {
    columns.push_back({sqlite3_column_name(st, i), parquet_type(st, i, what)});
    if (timestamps && columns.back().type == parquet::ColumnType::TimestampNs)
      timestamps->push_back(columns.back().name);
  }
  parquet::Writer w(out, std::move(columns));
  for (; rc == SQLITE_ROW; rc = sqlite3_step(st)) {
    for (int i = 0; i < n; ++i) {
      switch (sqlite3_column_type(st, i)) {
        case SQLITE_NULL:
          w.null();
          break;
        case SQLITE_INTEGER:
          w.int64(sqlite3_column_int64(st, i));
          break;
        case SQLITE_FLOAT:
          w.dbl(sqlite3_column_double(st, i));
          break;
        default: {
          const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
          w.text(t ? t : "", static_cast<size_t>(sqlite3_column_bytes(st, i)));
        }
      }
    }
    if (!w.end_row()) return errno_error("cannot write " + what);
  }
  if (rc != SQLITE_DONE) return store::sqlite_error(file.db(), "reading " + what);
  if (!w.finish()) return errno_error("cannot write " + what);
  if (w.mismatched() > 0)
    return Error{what + ": " + std::to_string(w.mismatched()) +
                     " values do not have their column's declared type (a damaged file?)",
                 "export it with --format csv or jsonl, which keep every value as it is"};
  return w.rows();
}

const char* extension(TextFormat f) {
  return f == TextFormat::Csv ? ".csv" : f == TextFormat::Jsonl ? ".jsonl" : ".parquet";
}

Result<uint64_t> write_table(const store::TraceFile& file, const Scope& scope, TextFormat format,
                             const TableInfo& t, const std::string& path,
                             std::vector<std::string>* timestamps = nullptr) {
  auto select = select_sql(t, scope);
  if (!select) return select.error();
  const cleanup::Guard partial(path == "-" ? std::string() : path + ".tmp");
  File out(path == "-" ? stdout : std::fopen((path + ".tmp").c_str(), "wb"));
  if (!out) return errno_error("cannot create " + path, errno, "check the output directory");
  auto rows = format == TextFormat::Parquet
                  ? write_parquet(file, select.value(), out.get(), t.name, timestamps)
                  : write_rows(file, select.value(), format, out.get(), t.name);
  if (path == "-") {
    std::fflush(stdout);
    return rows;
  }
  const bool flushed = std::fflush(out.get()) == 0;
  out.reset();
  if (!rows || !flushed) {
    std::remove((path + ".tmp").c_str());
    if (!rows) return rows.error();
    return errno_error("cannot write " + path);
  }
  if (std::rename((path + ".tmp").c_str(), path.c_str()) != 0) {
    const Error e = errno_error("cannot rename " + path + ".tmp to " + path);
    std::remove((path + ".tmp").c_str());
    return e;
  }
  return rows;
}

// The shipped views in an order DuckDB can create them in (it binds a view when it is made, so
// one that reads another comes after it); those the export holds as tables (the rollups) left out.
std::vector<store::ViewInfo> views_in_order() {
  std::vector<store::ViewInfo> left = store::shipped_views(), out;
  while (!left.empty()) {
    const size_t before = left.size();
    for (auto it = left.begin(); it != left.end();) {
      const bool waits = std::any_of(left.begin(), left.end(), [&](const store::ViewInfo& o) {
        return o.name != it->name && it->sql.find(o.name + " ") != std::string_view::npos;
      });
      if (waits) {
        ++it;
      } else {
        out.push_back(*it);
        it = left.erase(it);
      }
    }
    if (left.size() == before) {  // a cycle cannot be: keep the rest as they are
      out.insert(out.end(), left.begin(), left.end());
      break;
    }
  }
  return out;
}

// duckdb.sql beside a Parquet export: each file as a DuckDB table (timestamps as epoch ns again,
// the integers the views compute with; event tables in row_id order), then gpuwhy's views.
std::string duckdb_script(
    const std::vector<std::pair<TableInfo, std::vector<std::string>>>& tables) {
  std::string out =
      "-- gpuwhy's Parquet export as DuckDB tables, and gpuwhy's views over them "
      "(docs/export.md).\n"
      "-- Run it from this directory: duckdb trace.duckdb < duckdb.sql\n";
  for (const auto& [t, timestamps] : tables) {
    const std::string q = "\"" + t.name + "\"";
    std::string replace;
    for (const std::string& c : timestamps)
      replace +=
          (replace.empty() ? "" : ", ") + std::string("epoch_ns(\"") + c + "\") AS \"" + c + "\"";
    out += "CREATE TABLE " + q + " AS SELECT *" +
           (replace.empty() ? "" : " REPLACE (" + replace + ")") + " FROM read_parquet('" + t.name +
           ".parquet')" + (t.chunked ? " ORDER BY row_id" : "") + ";\n";
  }
  for (const store::ViewInfo& v : views_in_order()) {
    if (std::any_of(tables.begin(), tables.end(),
                    [&](const auto& t) { return t.first.name == v.name; }))
      continue;
    std::string sql(v.sql);
    while (!sql.empty() && std::isspace(static_cast<unsigned char>(sql.back()))) sql.pop_back();
    out += sql + (sql.ends_with(";") ? "\n" : ";\n");
  }
  return out;
}

}  // namespace

// A file per table, all or none: a table that cannot be written (disk full, a name taken by a
// directory) removes the tables written before it, and the directory if the export made it, so a
// directory that is there afterwards holds a whole export. A signal that ends the export removes
// them too (core/cleanup.hpp).
Result<ExportStats> export_text_dir(const store::TraceFile& file, const Scope& scope,
                                    TextFormat format, const std::string& dir) {
  std::error_code ec;
  const bool existed = fs::is_directory(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) return Error{"cannot create " + dir + ": " + ec.message(), "pass a writable -o DIR"};
  std::vector<cleanup::Guard> guards;
  if (!existed) guards.emplace_back(dir, true);
  std::vector<std::string> written;
  auto undo = [&] {
    for (const std::string& p : written) std::remove(p.c_str());
    if (!existed) fs::remove(dir, ec);  // only when empty: never what someone else put there
  };
  auto tables = list_tables(file);
  if (!tables) {
    undo();
    return tables.error();
  }
  ExportStats stats;
  std::vector<std::pair<TableInfo, std::vector<std::string>>> parquet_tables;
  for (const TableInfo& t : tables.value()) {
    const std::string path = dir + "/" + t.name + extension(format);
    guards.emplace_back(path);
    std::vector<std::string> timestamps;
    auto rows = write_table(file, scope, format, t, path, &timestamps);
    if (!rows) {
      undo();
      return Error{rows.error().what + " (the files written before it were removed)",
                   rows.error().hint, rows.error().exit_code};
    }
    written.push_back(path);
    stats.rows += rows.value();
    ++stats.tables;
    if (format == TextFormat::Parquet) parquet_tables.emplace_back(t, std::move(timestamps));
  }
  if (format == TextFormat::Parquet) {
    const std::string path = dir + "/duckdb.sql";
    guards.emplace_back(path);
    const std::string script = duckdb_script(parquet_tables);
    File out(std::fopen(path.c_str(), "wb"));
    const bool ok = out &&
                    std::fwrite(script.data(), 1, script.size(), out.get()) == script.size() &&
                    std::fflush(out.get()) == 0;
    out.reset();
    if (!ok) {
      written.push_back(path);
      undo();
      return errno_error("cannot write " + path + " (the files written before it were removed)");
    }
    written.push_back(path);
  }
  return stats;
}

Result<ExportStats> export_text_table(const store::TraceFile& file, const Scope& scope,
                                      TextFormat format, const std::string& table,
                                      const std::string& out_path) {
  auto tables = list_tables(file);
  if (!tables) return tables.error();
  std::string names;
  for (const TableInfo& t : tables.value()) {
    if (t.name == table) {
      auto rows = write_table(file, scope, format, t, out_path);
      if (!rows) return rows.error();
      return ExportStats{rows.value(), 1};
    }
    names += (names.empty() ? "" : ", ") + t.name;
  }
  return Error{"no table '" + table + "' in this trace",
               "the tables are: " + names + " (views: use gpuwhy query --format csv)", 2};
}

}  // namespace gpuwhy::exporter
