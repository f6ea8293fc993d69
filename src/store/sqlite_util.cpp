// SPDX-License-Identifier: Apache-2.0
#include "store/sqlite_util.hpp"

#include <cstdio>

namespace gpuwhy::store {

Error sqlite_error(sqlite3* db, std::string_view what) {
  return Error{std::string(what) + ": " + (db ? sqlite3_errmsg(db) : "out of memory")};
}

Status exec(sqlite3* db, std::string_view sql, std::string_view what) {
  char* msg = nullptr;
  const std::string text(sql);
  if (sqlite3_exec(db, text.c_str(), nullptr, nullptr, &msg) == SQLITE_OK) return {};
  Error e{std::string(what) + ": " + (msg ? msg : sqlite3_errmsg(db))};
  sqlite3_free(msg);
  return e;
}

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    sqlite3_finalize(s_);
    s_ = o.s_;
    o.s_ = nullptr;
  }
  return *this;
}

Result<Stmt> Stmt::prepare(sqlite3* db, std::string_view sql, std::string_view what) {
  sqlite3_stmt* s = nullptr;
  // PERSISTENT: these statements live as long as the writer and are reused for every batch.
  if (sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                         &s, nullptr) != SQLITE_OK)
    return sqlite_error(db, what);
  return Stmt(s);
}

Result<bool> has_table(sqlite3* db, std::string_view name) {
  auto q = Stmt::prepare(db, "SELECT 1 FROM main.sqlite_schema WHERE type = 'table' AND name = ?",
                         "reading the schema");
  if (!q) return q.error();
  q->text(1, name);
  const int rc = sqlite3_step(q->get());
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sqlite_error(db, "reading the schema");
  return rc == SQLITE_ROW;
}

std::string file_uri(const std::string& path, std::string_view query) {
  // RFC 3986 path characters pass through; '?', '#' and '%' would end or corrupt the path.
  // An absolute path gets an empty authority ("file:///a/b") so "//x" cannot read as a host.
  std::string uri = path.starts_with('/') ? "file://" : "file:";
  for (unsigned char c : path) {
    if (c == '?' || c == '#' || c == '%' || c < 0x21 || c >= 0x7f) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      uri += buf;
    } else {
      uri += static_cast<char>(c);
    }
  }
  if (!query.empty()) {
    uri += '?';
    uri += query;
  }
  return uri;
}

}  // namespace gpuwhy::store
