// SPDX-License-Identifier: Apache-2.0
// The insert side of the event tables: chunk sinks for the high-rate tables, one cached statement
// for each row table, task-name interning, and the per-event column mapping. Used by TraceWriter inside its batch
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
#include "store/chunked_tables.hpp"
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

// Partial chunks are written once their first row is this old: it bounds what a SIGKILLed agent
// loses (and how stale a live file looks to explain) at the cost of smaller chunks for threads
// that make few calls.
inline constexpr int64_t kChunkFlushAgeNs = 1'000'000'000;

class EventTables {
 public:
  static Result<EventTables> prepare(sqlite3* db);

  // Writes every stored event kind of `events` (LibMapped is not stored): the chunked tables'
  // rows join their thread's open chunk (written when full), the rest are inserted. The caller
  // owns the transaction. Returns the Error naming the table that failed.
  Status write(std::span<const Event> events, Interner& strings, int64_t now_ns);
  // Writes the open chunks whose first row was added before `older_than_ns` (INT64_MAX: all).
  Status flush(int64_t older_than_ns);
  // After a commit: the chunks written so far are durable.
  void mark_committed();
  // After a rollback: rows of the chunks written (or failed to write) since the last commit, all
  // undone. Resets the count.
  uint64_t rolled_back_rows();

  struct Table {
    const char* name = "";
    int columns = 0;
    Stmt one;
  };

 private:
  Status write_tcp(const TcpRetrans& e, Interner& strings);
  Status write_proc(const ProcEvent& e);
  Status write_rename(const TaskRename& e);
  // Position in chunked_tables() of the table that stores event type T.
  template <class T>
  static constexpr size_t sink_index() {
    if constexpr (std::is_same_v<T, ApiCall>) return 0;
    if constexpr (std::is_same_v<T, OffCpu>) return 1;
    if constexpr (std::is_same_v<T, SyscallEvent>) return 2;
    if constexpr (std::is_same_v<T, BlockIo>) return 3;
    if constexpr (std::is_same_v<T, Reclaim>) return 4;
    if constexpr (std::is_same_v<T, CpuSample>) return 5;
    if constexpr (std::is_same_v<T, CpuRun>) return 6;
    return 7;  // WaitMigrate
  }

  sqlite3* db_ = nullptr;
  Stmt tcp_insert_, proc_insert_;  // the row tables: tcp_retrans, proc_events
  std::vector<ChunkSink> sinks_;  // in chunked_tables() order
  Stmt process_exit_, thread_exit_;
  Stmt thread_rename_, process_rename_;
};

}  // namespace gpuwhy::store
