// SPDX-License-Identifier: Apache-2.0
// explain in bounded memory: a window too big to hold at once is analysed a batch of whole
// processes at a time, and the batches' reports are put together. Resident memory then follows
// the largest batch, not the whole trace.
//
// Why whole processes: every join, budget and detector looks at one thread, its process's other
// threads, or what ran on its CPU, so a process's findings do not depend on which other
// processes share its batch. What does cross processes is handled here:
// - the ranks of an NCCL job are compared with one another (the straggler detector), so every
//   process that made collective calls goes into one batch;
// - the CPU holders (cpu_runs), CPU samples of other processes and TCP retransmits are host-wide
//   and read by every batch;
// - whole-window percentiles per operation come from the batches' histograms when an operation
//   was called in more than one batch: then they are the floor of the exact value's histogram
//   bucket, at most 1/128 (0.8%) below it. Counts, totals, maxima, and every per-process and
//   per-thread figure stay exact.
// A process bigger than the batch is a batch on its own: memory is then that process's.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <vector>

#include "analysis/explain.hpp"
#include "analysis/loader.hpp"
#include "core/result.hpp"

namespace gpuwhy::store {
class TraceFile;
}

namespace gpuwhy::analysis {

// About 45 bytes of analysis per row, and two batches in memory at a time (the next one is read
// while one is analysed): 8 M rows keep explain well under 1 GiB resident.
inline constexpr uint64_t kDefaultBatchRows = 8'000'000;

struct BatchPlan {
  std::vector<std::vector<uint32_t>> batches;  // pids, ascending within a batch
  uint64_t rows = 0;  // rows of the window's api_calls and offcpu chunks, all batches
};

// Splits the processes with calls in the window (those of opt.pids only, when given) into
// batches of at most `max_rows` rows of the window's api_calls and offcpu chunks (from the chunk
// index: nothing is decoded). One batch when everything fits.
Result<BatchPlan> plan_batches(sqlite3* db, const LoadOptions& opt, uint64_t max_rows);

// explain's analysis of one file: load_trace + analyze when the window fits in one batch (the
// same report, byte for byte), else batch by batch.
Result<Report> explain_file(const store::TraceFile& file, const LoadOptions& opt,
                            uint64_t max_batch_rows = kDefaultBatchRows, const Thresholds& th = {});

// The report of the union of disjoint batches: chains ranked again, budgets and processes
// ordered as one analysis orders them, statistics added up. Caveats are the caller's
// (caveats_for on the rows' shared part).
Report merge_reports(std::vector<Report> parts, const Thresholds& th);

}  // namespace gpuwhy::analysis
