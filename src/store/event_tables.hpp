// SPDX-License-Identifier: Apache-2.0
// The insert side of the event tables: one cached statement per table (single-row and multi-row),
// task-name interning, and the per-event column mapping. Used by TraceWriter inside its batch
// transaction; not thread-safe (one writer thread).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.hpp"
#include "model/events.hpp"
#include "store/sqlite_util.hpp"

namespace gpuwhy::store {

// Task names -> strings.id, from memory: no SELECT per row. Ids added inside a transaction that
// is rolled back are forgotten again so the map never points at rows that do not exist.
class Interner {
 public:
  Status prepare(sqlite3* db);
  // 0 for an empty name (stored as NULL); -1 after a failed insert (see error()).
  int64_t id(std::string_view s);
  void commit() { pending_.clear(); }
  void rollback();
  bool failed() const { return !error_.empty(); }
  // SQLite's message, kept at the failure: binding other statements later clears the db's.
  const std::string& error() const { return error_; }
  void clear_failure() { error_.clear(); }

 private:
  sqlite3* db_ = nullptr;
  Stmt insert_;
  std::unordered_map<std::string, int64_t> ids_;
  std::vector<std::string> pending_;
  std::string error_;
};

// Rows per multi-row INSERT. Measured on this code (1 M api_calls rows, 10 k per batch, WAL,
// synchronous=NORMAL): see docs/schema.md "Write path".
inline constexpr int kRowsPerInsert = 16;

class EventTables {
 public:
  static Result<EventTables> prepare(sqlite3* db);

  // Writes every stored event kind of `events` (LibMapped is not stored). The caller owns the
  // transaction. Returns the Error naming the table that failed.
  Status write(std::span<const Event> events, Interner& strings);

  struct Table {
    const char* name = "";
    int columns = 0;
    Stmt one, many;  // 1 row, kRowsPerInsert rows
  };

 private:
  template <class E>
  Status write_rows(Table& t, const std::vector<const E*>& rows, Interner& strings);
  Status write_proc(const ProcEvent& e);

  sqlite3* db_ = nullptr;
  Table api_calls_, offcpu_, syscalls_, block_io_, tcp_retrans_, reclaim_, proc_events_;
  Stmt process_exit_, thread_exit_;
};

}  // namespace gpuwhy::store
