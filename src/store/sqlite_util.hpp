// SPDX-License-Identifier: Apache-2.0
// Small RAII helpers over the SQLite C API, private to the store module. They keep error text
// close to the call so every Error names what was being done and SQLite's own message.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace gpuwhy::store {

// "<what>: <sqlite message>" from the connection's last error.
Error sqlite_error(sqlite3* db, std::string_view what);

// Runs one or more statements that return no rows we need.
Status exec(sqlite3* db, std::string_view sql, std::string_view what);

// A prepared statement, finalized on destruction. Bind indexes are 1-based as in SQLite.
class Stmt {
 public:
  Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt(Stmt&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept;
  ~Stmt() { sqlite3_finalize(s_); }

  static Result<Stmt> prepare(sqlite3* db, std::string_view sql, std::string_view what);

  sqlite3_stmt* get() const { return s_; }
  explicit operator bool() const { return s_ != nullptr; }

  void i64(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  // 64-bit unsigned values (addresses, sectors) keep their bits; SQLite has no unsigned type.
  void u64(int i, uint64_t v) { sqlite3_bind_int64(s_, i, static_cast<int64_t>(v)); }
  void null(int i) { sqlite3_bind_null(s_, i); }
  void text(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  // Binds NULL for an empty string: "not known" reads better than '' in queries.
  void text_or_null(int i, std::string_view v) { v.empty() ? null(i) : text(i, v); }
  template <class T>
  void opt(int i, bool present, T v) {
    present ? i64(i, static_cast<int64_t>(v)) : null(i);
  }

  // Steps a statement that returns no row, then resets it for the next use.
  int run() {
    const int rc = sqlite3_step(s_);
    sqlite3_reset(s_);
    return rc;
  }

 private:
  explicit Stmt(sqlite3_stmt* s) : s_(s) {}
  sqlite3_stmt* s_ = nullptr;
};

// Whether the main database has a table of that name (features a file may predate).
Result<bool> has_table(sqlite3* db, std::string_view name);

// The file: URI for a path, with the characters URIs reserve percent-encoded.
std::string file_uri(const std::string& path, std::string_view query);

}  // namespace gpuwhy::store
