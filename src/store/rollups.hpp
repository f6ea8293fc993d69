// SPDX-License-Identifier: Apache-2.0
// Per-second rollups of the chunked event tables: api_calls_per_second and offcpu_per_second
// (sql/schema.sql). Whole-trace questions (calls and time per operation, off-CPU time per thread
// and who caused it, the call rate per second) then read a few thousand summed rows instead of
// decoding and sorting every event. ChunkSink writes a chunk's rollup rows together with the chunk,
// in the caller's transaction, so the two can never disagree: a rolled-back chunk leaves no row.
#pragma once

#include <sqlite3.h>

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "store/chunk_codec.hpp"
#include "store/sqlite_util.hpp"

namespace gpuwhy::store {

struct ChunkedTable;

// The rollup tables, each named after the table it summarises: "api_calls_per_second".
std::span<const std::string_view> rollup_tables();

// The rollup's `second` of an event at `ts`: whole seconds since the session started, truncated
// toward zero as SQLite's integer division truncates (v_throughput and the per-row fallback views
// compute (ts - start_ns) / 1000000000 in SQL).
int64_t rollup_second(int64_t ts, int64_t start_ns);

// One rollup row of a chunk: its columns after pid and tid, in table order; bit c of `nulls`: the
// c-th of them is NULL.
struct RollupRow {
  static constexpr size_t kMaxColumns = 6;
  std::array<int64_t, kMaxColumns> v{};
  uint32_t nulls = 0;
};

struct RollupSpec;

// Writes the rollup rows of the chunks of one table.
class RollupWriter {
 public:
  // For `table`'s rollup. Idle (writes nothing) when the table has none, or when the file predates
  // the rollup tables: its readers then compute the rollups from the events (docs/schema.md).
  static Result<RollupWriter> prepare(sqlite3* db, const ChunkedTable& table);

  // The rollup rows of one chunk's rows (before ChunkBuilder::encode empties them), all of
  // thread (pid, tid), into its table. `rowids`, when given, gets the first and last rowid
  // written (one range: they are inserted one after the other), {0, 0} when none was.
  Status write(const ChunkBuilder& rows, int64_t pid, int64_t tid,
               std::pair<int64_t, int64_t>* rowids = nullptr);
  // The rollup table written to ("api_calls_per_second"); empty when idle.
  std::string_view table() const;

 private:
  // The rows of one chunk's rollup, seconds counted from `start_ns`, in order of first row.
  std::vector<RollupRow> roll(const ChunkBuilder& rows, int64_t start_ns) const;
  Result<int64_t> session_start();

  sqlite3* db_ = nullptr;
  const ChunkedTable* table_ = nullptr;
  const RollupSpec* spec_ = nullptr;  // null: idle
  std::array<uint32_t, 4> inputs_{};  // the spec's input columns, as indexes into the chunk
  Stmt insert_, start_;
};

}  // namespace gpuwhy::store
