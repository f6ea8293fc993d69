// SPDX-License-Identifier: Apache-2.0
// The event tables stored as chunks (chunk_codec.hpp): their logical columns, and the sink that
// collects rows per thread and writes full chunks into "<name>_chunks". The logical tables are
// what users query: every connection this build opens presents them as virtual tables with the
// same columns (chunked_vtab.hpp), and explain decodes the chunks directly (analysis/loader).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.hpp"
#include "store/chunk_codec.hpp"
#include "store/rollups.hpp"
#include "store/sqlite_util.hpp"

namespace gpuwhy::store {

// A text column a table derives from one of its integer columns through a lookup table
// (api_calls.name from apis): a HIDDEN column of the SQL table, not stored in the chunks.
struct ChunkedLabel {
  std::string_view name;    // "name"
  uint32_t source;          // index of the integer column it names: api
  std::string_view lookup;  // SQL giving (id, text) rows: "SELECT id, name FROM main.apis"
};

struct ChunkedTable {
  std::string_view name;                      // logical table: "api_calls"
  std::span<const std::string_view> columns;  // all INTEGER, in storage order
  // Indexes of the key columns. A table chunked by something else than the thread names that
  // column as both pid and tid (cpu_runs: cpu): its chunks' pid and tid columns hold it.
  uint32_t ts, dur, pid, tid;
  std::span<const ChunkedLabel> labels = {};  // after the columns, in this order
  std::string chunks() const { return std::string(name) + "_chunks"; }
};

// api_calls, offcpu, syscalls, block_io, reclaim, cpu_samples, cpu_runs, wait_migrations.
std::span<const ChunkedTable> chunked_tables();
const ChunkedTable* find_chunked_table(std::string_view name);

// One row on its way into a chunk.
struct RowValues {
  int64_t v[kMaxChunkColumns] = {};
  uint64_t nulls = 0;
  void set(uint32_t c, int64_t x) { v[c] = x; }
  template <class T>
  void opt(uint32_t c, bool present, T x) {
    if (present)
      v[c] = static_cast<int64_t>(x);
    else
      nulls |= uint64_t{1} << c;
  }
};

// Collects one table's rows per (pid, tid) and writes a chunk when one reaches kChunkRows, or
// when flush() says so, with the chunk's rollup rows (rollups.hpp). Writes go through `db` inside
// the caller's transaction. Not thread-safe.
class ChunkSink {
 public:
  static Result<ChunkSink> prepare(sqlite3* db, const ChunkedTable& table);

  // `now_ns` is the caller's clock (wall time for the agent): flush(older_than) writes the
  // partial chunks whose first row was added before it.
  Status add(const RowValues& row, int64_t now_ns);
  Status flush(int64_t older_than_ns);
  Status flush_all() { return flush(INT64_MAX); }
  // Rows that left the buffer since the last mark(), in chunks written or failed to write: lost
  // if the caller's transaction rolls back (as it must after an error from add/flush), with
  // their rollup rows.
  uint64_t written_since_mark() const { return written_since_mark_; }
  void mark() { written_since_mark_ = 0; }
  const ChunkedTable& table() const { return *table_; }

 private:
  struct Open {
    ChunkBuilder rows;
    int64_t first_add_ns = 0;
  };
  Status write(uint64_t key, Open& open);

  sqlite3* db_ = nullptr;
  const ChunkedTable* table_ = nullptr;
  Stmt insert_;
  RollupWriter rollup_;
  Stmt span_insert_;  // flight recorder files: which rollup rows each chunk wrote (retention.hpp)
  std::unordered_map<uint64_t, Open> open_;  // (pid << 32 | tid) -> rows not yet written
  uint64_t written_since_mark_ = 0;
  bool index_crc_ = false;  // the file's chunk tables have index_crc
};

}  // namespace gpuwhy::store
