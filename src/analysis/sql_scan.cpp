// SPDX-License-Identifier: Apache-2.0
#include "analysis/sql_scan.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>

namespace gpuwhy::analysis {
namespace {

std::string uri_for(const std::string& path, bool immutable) {
  static const char* kHex = "0123456789ABCDEF";
  std::string u = "file:";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '-' || c == '_' || c == '~') {
      u += static_cast<char>(c);
    } else {
      u += '%';
      u += kHex[c >> 4];
      u += kHex[c & 15];
    }
  }
  return u + (immutable ? "?mode=ro&immutable=1" : "?mode=ro");
}

bool exists(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0;
}

// A second read-only connection to `path`, usable (it has read the schema), or nullptr. Like
// TraceFile::open: immutable when no -wal exists (nothing to merge, and no -shm to create in a
// directory we may not write), plain read-only otherwise.
sqlite3* open_reader(const std::string& path) {
  sqlite3* c = nullptr;
  const bool immutable = !exists(path + "-wal");
  if (sqlite3_open_v2(uri_for(path, immutable).c_str(), &c,
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    sqlite3_close_v2(c);
    return nullptr;
  }
  sqlite3_busy_timeout(c, 2000);
  sqlite3_stmt* s = nullptr;
  const bool ok =
      sqlite3_prepare_v2(c, "SELECT count(*) FROM sqlite_schema", -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW;
  sqlite3_finalize(s);
  if (!ok) {
    sqlite3_close_v2(c);
    return nullptr;
  }
  return c;
}

}  // namespace

Query::Query(sqlite3* db, const std::string& sql) : db_(db) {
  rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr);
}

Error Query::error(const std::string& what) const {
  return Error{"cannot read the trace (" + what + "): " + sqlite3_errmsg(db_),
               "is the file a gpuwhy trace of this version?"};
}

std::string Query::text(int c) const {
  const auto* t = sqlite3_column_text(s_, c);
  return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
}

ScanPool::ScanPool(sqlite3* db, unsigned workers) : db_(db) {
  const char* file = sqlite3_db_filename(db, "main");
  if (!file || !*file || workers <= 1) return;
  const std::string path(file);
  for (unsigned i = 1; i < workers; ++i) {
    sqlite3* c = open_reader(path);
    if (!c) break;
    extra_.push_back(c);
  }
}

ScanPool::~ScanPool() {
  for (sqlite3* c : extra_) sqlite3_close_v2(c);
}

std::vector<std::pair<int64_t, int64_t>> ScanPool::ranges(const std::string& table,
                                                          int64_t rows_per_worker) const {
  int64_t lo = 0, hi = -1;
  // min/max of the rowid read the two ends of the b-tree: O(log n).
  (void)each_row(db_, "SELECT min(rowid), max(rowid) FROM " + table, table, [&](Query& q) {
    lo = q.i64(0);
    hi = q.i64(1);
  });
  const int64_t n = hi - lo + 1;
  const int64_t parts =
      std::clamp<int64_t>(n / std::max<int64_t>(rows_per_worker, 1), 1, static_cast<int64_t>(extra_.size()) + 1);
  std::vector<std::pair<int64_t, int64_t>> out;
  if (n <= 0) return {{0, 1}};
  const int64_t step = (n + parts - 1) / parts;
  for (int64_t k = 0; k < parts; ++k) {
    const int64_t a = lo + k * step;
    out.emplace_back(a, k + 1 == parts ? hi + 1 : std::min(a + step, hi + 1));
  }
  return out;
}

}  // namespace gpuwhy::analysis
