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
// A process (or the NCCL job) bigger than the batch is cut into consecutive time windows of
// about the batch's rows (from the chunk index), each analysed alone and the windows added up
// per thread (merge_windows): what can differ from one analysis is in docs/explain.md,
// "Explaining in windows".
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

// A time window of one batch, wall ns [from_ns, to_ns); {0, 0}: the whole window explained.
struct Slice {
  int64_t from_ns = 0, to_ns = 0;
  bool whole() const { return from_ns == 0 && to_ns == 0; }
};

struct BatchPlan {
  std::vector<std::vector<uint32_t>> batches;  // pids, ascending within a batch
  // Per batch: its time window, and its group; the windows of one group (the same pids) are
  // consecutive batches, in time order, and add up to the whole window.
  std::vector<Slice> slices;
  std::vector<uint32_t> groups;
  uint64_t rows = 0;  // rows of the window's api_calls and offcpu chunks, all batches
};

// Splits the processes with calls in the window (those of opt.pids only, when given) into
// batches of at most `max_rows` rows of the window's api_calls and offcpu chunks (from the chunk
// index: nothing is decoded). One batch when everything fits. A process or NCCL job over
// `max_rows` is cut into time windows at chunk starts, each of about `max_rows` rows.
Result<BatchPlan> plan_batches(sqlite3* db, const LoadOptions& opt, uint64_t max_rows);

// explain's analysis of one file: load_trace + analyze when the window fits in one batch (the
// same report, byte for byte), else batch by batch.
Result<Report> explain_file(const store::TraceFile& file, const LoadOptions& opt,
                            uint64_t max_batch_rows = kDefaultBatchRows, const Thresholds& th = {});

// The report of the union of disjoint batches: chains ranked again, budgets and processes
// ordered as one analysis orders them, statistics added up. Caveats are the caller's
// (caveats_for on the rows' shared part).
Report merge_reports(std::vector<Report> parts, const Thresholds& th);

// The report of one group of processes from the reports of its consecutive time windows
// (analyze_window_part): per thread, budgets added up; chains of the same kind, thread and
// culprit added up, then graded and ranked against `whole`; statistics added up.
Report merge_windows(std::vector<Report> windows, const TimeWindow& whole, const Thresholds& th);

}  // namespace gpuwhy::analysis
