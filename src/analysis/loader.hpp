// SPDX-License-Identifier: Apache-2.0
// Reads one window of a trace file into TraceRows: a handful of prepared statements, one pass per
// table, columns straight into compact structs. Everything after this works in memory.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/rows.hpp"
#include "analysis/window.hpp"
#include "core/result.hpp"

namespace gpuwhy::store {
class TraceFile;
}

namespace gpuwhy::analysis {

// One chunk of a chunked event table as its index row describes it (no data).
struct ChunkRef {
  int64_t id = 0, tid = 0, ts_min = 0, end_max = 0, rows = 0;
  uint32_t pid = 0;
};

// The chunk rows of every chunked event table, without their data, read once for a whole
// explain. The chunk tables are indexed by (tid, ts_min) only: a query on pid or end_max reads
// every chunk's table row, and a table row shares its b-tree page with the start of its data
// blob, so each such query read one page per chunk of the whole file (1.4 M pages of a 1 B-event
// trace, several queries per batch). From memory, a batch looks its chunks up by id.
struct ChunkIndex {
  // By logical table name ("api_calls"), each sorted by (tid, ts_min, id): the order of the
  // tables' (tid, ts_min) index. A table the file lacks is absent.
  std::unordered_map<std::string, std::vector<ChunkRef>> tables;
  // Chunks whose index row fails its index_crc (store/chunk_index.hpp): left out of `tables`,
  // since the row cannot say where they belong; every load reports them.
  std::vector<DamagedChunk> damaged;
  bool unchecked = false;  // a chunk table without index_crc (an older file): not verified
  const std::vector<ChunkRef>* find(std::string_view table) const {
    auto it = tables.find(std::string(table));
    return it == tables.end() ? nullptr : &it->second;
  }
};
Result<std::shared_ptr<const ChunkIndex>> read_chunk_index(sqlite3* db);

struct LoadOptions {
  WindowRequest window;        // empty: the whole trace
  std::vector<uint32_t> pids;  // empty: every process that made GPU API calls
  // One batch of a batched analysis (explain_batched.hpp): only these processes' rows are read,
  // and a batch without calls in the window is no error (its rows come back empty).
  std::vector<uint32_t> batch;
  // One time window of a longer analysis: per thread, where its span ends after the window (its
  // next call; TraceRows::span_ends). Its interval events are read up to there as well.
  std::unordered_map<uint32_t, int64_t> span_ends;
  // One time window of a longer analysis: the interval events of every process of the batch are
  // read, also one without calls in this window (their counts add up to the whole window's).
  bool window_part = false;
  // The next window of the same processes: the previous window's memory_calls (with their
  // CallExt), all before this window, instead of decoding every chunk before it again.
  struct MemoryCalls {
    CallRows calls;
    std::vector<CallExt> ext;  // one per call (empty when it had none)
  };
  std::shared_ptr<const MemoryCalls> memory_before;
  // The file's chunk index (read_chunk_index), shared by the batches of one explain; load_trace
  // reads it when not given.
  std::shared_ptr<const ChunkIndex> chunks;
  // An earlier batch's rows, done with: their big vectors are emptied and read into, their
  // pages already faulted in (a fresh vector of hundreds of MB is faulted in and zeroed again,
  // and freed with munmap, every batch).
  std::shared_ptr<TraceRows> reuse;
};

// Where the trace ends: session.end_ns for a complete trace; for one still recording or cut short,
// the latest event committed. Sets window.trace_start_ns/trace_end_ns/end_is_last_event.
Result<TimeWindow> trace_bounds(sqlite3* db);

// Loads and prepares (prepare_rows) the rows of the requested window. Errors, each one line with
// a hint: an empty window, a --pid that is not in the trace or made no GPU call in the window,
// a trace without any GPU API call.
Result<TraceRows> load_trace(sqlite3* db, const LoadOptions& opt);
Result<TraceRows> load_trace(const store::TraceFile& file, const LoadOptions& opt);

}  // namespace gpuwhy::analysis
