// SPDX-License-Identifier: Apache-2.0
// The device's own timeline in explain (trace --gpu-activity): the kernels, copies and memsets
// CUPTI reported for a process, loaded beside the calls (TraceRows::device_activity), and the
// interval arithmetic the GPU-idle time is measured with. Where a process has them, its
// GPU-idle stretches are the gaps between them, not inferred from its calls (budget.cpp, the
// idle source); the calls' estimate is kept beside the truth with its error.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "analysis/rows.hpp"
#include "core/result.hpp"

namespace gpuwhy::analysis {

using Interval = std::pair<int64_t, int64_t>;  // [start, end), wall ns

// Reads the gpu_activity rows (kernel, memcpy, memset) that overlap [from, to) of the processes
// `keep` accepts into rows.device_activity. Nothing for a file without the table.
Status load_device_activity(sqlite3* db, TraceRows& rows, int64_t from, int64_t to,
                            const std::function<bool(uint32_t)>& keep);

// [begin, end) of `pid`'s rows in rows.device_activity (sorted by (pid, ts): prepare_rows).
std::pair<size_t, size_t> device_rows(const TraceRows& rows, uint32_t pid);
bool has_device_activity(const TraceRows& rows, uint32_t pid);

// The union of `pid`'s rows clipped to [lo, hi), merged, in time order: when the device ran
// something of it. `device` < 0: any of its devices.
std::vector<Interval> device_busy(const TraceRows& rows, uint32_t pid, int64_t lo, int64_t hi,
                                  int device = -1);
// The gaps of a merged, sorted `busy` inside [lo, hi).
std::vector<Interval> gaps_of(const std::vector<Interval>& busy, int64_t lo, int64_t hi);
// Length of the intervals of a merged, sorted list clipped to [lo, hi).
int64_t covered_ns(const std::vector<Interval>& merged, int64_t lo, int64_t hi);
// Sorts and merges `iv` in place (touching intervals become one).
void merge_intervals(std::vector<Interval>& iv);

}  // namespace gpuwhy::analysis
