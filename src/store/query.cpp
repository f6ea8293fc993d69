// SPDX-License-Identifier: Apache-2.0
// run_query / for_each_row: one read-only statement over an open TraceFile.
#include <cctype>
#include <cstring>

#include "store/chunked_tables.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::store {
namespace {

Error sql_error(std::string message) {
  Error e{"SQL error: " + std::move(message)};
  e.exit_code = 2;
  return e;
}

// The first keyword of a statement, upper-cased, after blanks and comments.
std::string first_keyword(const char* p) {
  while (*p) {
    if (std::isspace(static_cast<unsigned char>(*p))) {
      ++p;
    } else if (p[0] == '-' && p[1] == '-') {
      while (*p && *p != '\n') ++p;
    } else if (p[0] == '/' && p[1] == '*') {
      const char* end = std::strstr(p + 2, "*/");
      p = end ? end + 2 : p + std::strlen(p);
    } else {
      break;
    }
  }
  std::string word;
  while (std::isalpha(static_cast<unsigned char>(*p)))
    word += static_cast<char>(std::toupper(*p++));
  return word;
}

bool only_space_or_comments(const char* p) {
  while (*p) {
    if (std::isspace(static_cast<unsigned char>(*p)) || *p == ';') {
      ++p;
    } else if (p[0] == '-' && p[1] == '-') {
      while (*p && *p != '\n') ++p;
    } else if (p[0] == '/' && p[1] == '*') {
      const char* end = std::strstr(p + 2, "*/");
      if (!end) return true;  // SQLite treats an unterminated comment as the end, too
      p = end + 2;
    } else {
      return false;
    }
  }
  return true;
}

std::string blob_literal(const void* data, int n) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const auto* b = static_cast<const unsigned char*>(data);
  std::string out = "X'";
  for (int i = 0; i < n; ++i) {
    out += kHex[b[i] >> 4];
    out += kHex[b[i] & 15];
  }
  return out + "'";
}

}  // namespace

Status for_each_row(const TraceFile& file, const std::string& sql, const HeaderFn& on_header,
                    const RowFn& on_row) {
  sqlite3* db = file.db();
  sqlite3_stmt* s = nullptr;
  const char* tail = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &s, &tail) != SQLITE_OK) {
    std::string msg = sqlite3_errmsg(db);
    if ((sqlite3_errcode(db) & 0xff) == SQLITE_AUTH)
      msg += " (the trace is opened read-only: only SELECT and read-only PRAGMAs are allowed)";
    // A table added after this file was written: an event table is absent when its chunks are
    // (attach_chunked_tables skipped it), stack_frames when it is.
    constexpr std::string_view kNoSuchTable = "no such table: ";
    if (msg.starts_with(kNoSuchTable)) {
      const std::string name = msg.substr(kNoSuchTable.size());
      const ChunkedTable* t = find_chunked_table(name);
      if (t || name == "stack_frames")
        if (auto present = has_table(db, t ? t->chunks() : name); present && !*present)
          msg += " (this trace predates that table: it was recorded by an older gpuwhy)";
    }
    return sql_error(msg);
  }
  if (!s) return sql_error("no SQL statement given");
  struct Finalize {
    sqlite3_stmt* s;
    ~Finalize() { sqlite3_finalize(s); }
  } finalize{s};
  // One statement: the output formats carry one result, and a second statement would run
  // unseen after the first.
  if (tail && !only_space_or_comments(tail))
    return sql_error("more than one statement; gpuwhy query runs one statement at a time");
  // Catches BEGIN IMMEDIATE / EXCLUSIVE, which the authorizer cannot tell from BEGIN. SQLite
  // calls every PRAGMA possibly-writing; the authorizer's pragma allow-list is their gate.
  if (!sqlite3_stmt_readonly(s) && first_keyword(sqlite3_sql(s)) != "PRAGMA")
    return sql_error("only read-only statements are allowed (the trace is opened read-only)");

  const int n = sqlite3_column_count(s);
  std::vector<std::string> columns(n);
  for (int i = 0; i < n; ++i) columns[i] = sqlite3_column_name(s, i);
  if (on_header) on_header(columns);

  std::vector<std::string> values(n);
  std::vector<ValueType> types(n);
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    for (int i = 0; i < n; ++i) {
      switch (sqlite3_column_type(s, i)) {
        case SQLITE_NULL:
          types[i] = ValueType::Null;
          values[i].clear();
          break;
        case SQLITE_INTEGER:
          types[i] = ValueType::Integer;
          values[i] = std::to_string(sqlite3_column_int64(s, i));
          break;
        case SQLITE_FLOAT:
          types[i] = ValueType::Real;
          values[i] = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
          break;
        case SQLITE_BLOB:
          types[i] = ValueType::Blob;
          values[i] = blob_literal(sqlite3_column_blob(s, i), sqlite3_column_bytes(s, i));
          break;
        default: {
          types[i] = ValueType::Text;
          const auto* t = sqlite3_column_text(s, i);
          values[i].assign(reinterpret_cast<const char*>(t), sqlite3_column_bytes(s, i));
        }
      }
    }
    if (on_row) on_row(values, types);
  }
  if (rc != SQLITE_DONE) return sql_error(sqlite3_errmsg(db));
  return {};
}

Result<QueryResult> run_query(const TraceFile& file, const std::string& sql) {
  QueryResult r;
  Status st = for_each_row(
      file, sql, [&](const std::vector<std::string>& cols) { r.columns = cols; },
      [&](const std::vector<std::string>& values, const std::vector<ValueType>& types) {
        r.rows.push_back(values);
        r.types.push_back(types);
        std::vector<bool> nulls(types.size());
        for (size_t i = 0; i < types.size(); ++i) nulls[i] = types[i] == ValueType::Null;
        r.is_null.push_back(std::move(nulls));
      });
  if (!st) return st.error();
  return r;
}

}  // namespace gpuwhy::store
