// SPDX-License-Identifier: Apache-2.0
// The flight recorder (trace --keep / --max-size): drops the oldest data of a trace file being
// written so that it keeps a recent window and stays within its size budget. Used by TraceWriter
// only, on its connection and thread. Every age-out is one transaction that deletes whole chunks
// (and the rows of the row tables) ending before one cut, with their rollup rows, and records
// what went in `retention` and `aged_out`: a reader sees the window before or after it, and a
// SIGKILL at any moment leaves a valid trace. Freed pages go to SQLite's free list (the file has
// auto_vacuum off) and take the next chunks: the file does not grow past its cap.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/result.hpp"
#include "store/retention_policy.hpp"

namespace gpuwhy::store {

class Retention {
 public:
  // The flight recorder's tables and indexes, inside the caller's schema transaction.
  static Status create_schema(sqlite3* db, const RetentionOptions& opt, uint32_t page_size);
  // After the schema is committed: the size limits on the writer's connection `db`.
  static Result<std::unique_ptr<Retention>> start(sqlite3* db, std::string path,
                                                  const RetentionOptions& opt);

  // With no transaction open: ages out by age (at most once per opt.age_check_ns) and by size
  // (when little room is left below the cap; `force`: whenever less than the high water mark is),
  // in one transaction of its own.
  Status make_room(int64_t now_ns, bool force = false);
  // Whether the next transaction fits in the log's share of the budget. When a reader keeps the
  // log from restarting, false: the caller drops the batch and counts it with drop().
  bool wal_has_room();
  void drop(uint64_t events) { totals_.dropped += events; }
  // Around a committed transaction: how much the log grows by one, to keep room for the next.
  void before_transaction();
  void after_commit();
  // The database is at its page cap: a SQLITE_FULL came from the budget, not from the disk. The
  // next make_room() frees up to the high water mark.
  bool at_cap();

  const RetentionTotals& totals() const { return totals_; }
  const RetentionOptions& options() const { return opt_; }
  const BudgetPlan& plan() const { return plan_; }

 private:
  Retention() = default;
  Result<uint64_t> room();
  Status delete_before(int64_t cut, int64_t now_ns);
  Result<std::optional<int64_t>> size_cut(uint64_t need_bytes);
  Result<bool> anything_before(int64_t cut);
  uint64_t wal_bytes() const;

  sqlite3* db_ = nullptr;
  std::string path_;
  RetentionOptions opt_;
  BudgetPlan plan_;
  uint32_t page_size_ = 4096;
  RetentionTotals totals_;
  int64_t last_age_check_ns_ = 0;
  bool urgent_ = false;
  bool log_held_ = false;  // the last wal_has_room() found a reader holding the log
  uint64_t wal_before_ = 0;
  uint64_t txn_estimate_ = 0;  // bytes the log may grow by in one transaction
};

}  // namespace gpuwhy::store
