// SPDX-License-Identifier: Apache-2.0
// Reading rows out of SQLite fast enough for a 10-million-event trace: prepared statements read
// straight into structs, and big tables split into rowid ranges scanned in parallel, each range
// on its own read-only connection (a SQLite connection is used by one thread at a time). The
// event tables have no ts index, so every window query is a scan anyway; splitting it is the
// only way to go faster than one core decodes records.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/result.hpp"

namespace gpuwhy::analysis {

// A prepared statement owned for one query.
class Query {
 public:
  Query(sqlite3* db, const std::string& sql);
  ~Query() { sqlite3_finalize(s_); }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  bool ok() const { return rc_ == SQLITE_OK; }
  Error error(const std::string& what) const;
  void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void bind(const char* name, int64_t v) {
    if (int i = sqlite3_bind_parameter_index(s_, name); i > 0) sqlite3_bind_int64(s_, i, v);
  }
  // SQLITE_ROW: a row is ready; SQLITE_DONE: finished; anything else is an error.
  int step() { return rc_ = sqlite3_step(s_); }
  // Ready to run again with new binds.
  void reset() {
    sqlite3_reset(s_);
    rc_ = SQLITE_OK;
  }
  bool failed() const { return rc_ != SQLITE_DONE && rc_ != SQLITE_ROW && rc_ != SQLITE_OK; }

  // NULL reads as 0 (SQLite's own conversion); queries coalesce where 0 would mislead.
  int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
  std::string text(int c) const;
  // Valid until the next step.
  std::string_view blob(int c) const {
    const void* p = sqlite3_column_blob(s_, c);
    return {static_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(s_, c))};
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_OK;
};

// Runs `sql` (positional binds ?1, ?2, ...) and calls on_row(Query&) for each row.
template <class Fn>
Status each_row(sqlite3* db, const std::string& sql, const std::string& what, Fn on_row,
                std::initializer_list<int64_t> binds = {}) {
  Query q(db, sql);
  if (!q.ok()) return q.error(what);
  int i = 1;
  for (int64_t b : binds) q.bind(i++, b);
  while (q.step() == SQLITE_ROW) on_row(q);
  if (q.failed()) return q.error(what);
  return {};
}

// Read-only connections to the file behind `db` for parallel scans. When extra connections
// cannot be opened (an in-memory database, a file that moved), everything runs on `db`.
class ScanPool {
 public:
  ScanPool(sqlite3* db, unsigned workers);
  ~ScanPool();
  ScanPool(const ScanPool&) = delete;
  ScanPool& operator=(const ScanPool&) = delete;

  // Runs `sql` over `table` in rowid ranges: the text must use :lo and :hi as
  // "rowid >= :lo AND rowid < :hi" and may use :from and :to. read(const Query&, std::vector<Row>&)
  // appends what it keeps. Rows come out in rowid order, as one scan would give them. A table is
  // split only when each connection gets at least `rows_per_worker` rowids.
  template <class Row, class Fn>
  Status scan(const std::string& table, const std::string& sql, int64_t from, int64_t to, Fn read,
              std::vector<Row>& out, int64_t rows_per_worker = 250'000);

  // Connections available (1 when extra ones could not be opened); connection(0) is the caller's.
  size_t size() const { return extra_.size() + 1; }
  sqlite3* connection(size_t k) const { return k == 0 ? db_ : extra_[k - 1]; }

 private:
  // [lo, hi) rowid ranges covering `table`, one per connection for a big table, else one.
  std::vector<std::pair<int64_t, int64_t>> ranges(const std::string& table,
                                                  int64_t rows_per_worker) const;
  sqlite3* db_;
  std::vector<sqlite3*> extra_;  // owned; used with db_ as connection 0
};

template <class Row, class Fn>
Status ScanPool::scan(const std::string& table, const std::string& sql, int64_t from, int64_t to,
                      Fn read, std::vector<Row>& out, int64_t rows_per_worker) {
  const auto parts = ranges(table, rows_per_worker);
  std::vector<std::vector<Row>> got(parts.size());
  std::vector<Status> status(parts.size());
  auto work = [&](size_t k) {
    sqlite3* conn = k == 0 ? db_ : extra_[k - 1];
    Query q(conn, sql);
    if (!q.ok()) {
      status[k] = q.error(table);
      return;
    }
    q.bind(":lo", parts[k].first);
    q.bind(":hi", parts[k].second);
    q.bind(":from", from);
    q.bind(":to", to);
    while (q.step() == SQLITE_ROW) read(static_cast<const Query&>(q), got[k]);
    if (q.failed()) status[k] = q.error(table);
  };
  std::vector<std::thread> threads;
  for (size_t k = 1; k < parts.size(); ++k) threads.emplace_back(work, k);
  work(0);
  for (std::thread& t : threads) t.join();
  for (const Status& s : status)
    if (!s) return s;
  if (out.empty())
    out.swap(got[0]);  // the usual case: no copy of the first (or only) part
  else
    out.insert(out.end(), got[0].begin(), got[0].end());
  size_t n = out.size();
  for (size_t k = 1; k < got.size(); ++k) n += got[k].size();
  out.reserve(n);
  for (size_t k = 1; k < got.size(); ++k)
    out.insert(out.end(), std::make_move_iterator(got[k].begin()),
               std::make_move_iterator(got[k].end()));
  return {};
}

}  // namespace gpuwhy::analysis
