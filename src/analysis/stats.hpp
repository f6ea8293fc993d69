// SPDX-License-Identifier: Apache-2.0
// Statistics: per operation (API name) over the window, per process and per thread broken down by
// operation, and the launch rate over time with the point where it dropped. Percentiles are per
// (scope, operation): a p99 that mixes 5 µs launches with 20 ms syncs would describe neither.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/joins.hpp"
#include "analysis/percentile.hpp"
#include "analysis/rows.hpp"

namespace gpuwhy::analysis {

struct OpStats {
  uint16_t api = 0;
  std::string name;
  Category cat = kUnknownCategory;
  DurStats dur;
  uint64_t errors = 0;  // calls that returned non-zero
  uint64_t bytes = 0;   // copies, memsets, allocations, collectives
  // Calls made inside another traced call of their thread: the driver call a runtime call makes
  // when both libraries are probed. Their time is inside that call's too.
  uint64_t nested = 0;
  // Launches recorded at entry only by adaptive launch timing, their durations estimated from
  // the timed ones (launch_timing.hpp): `dur` counts them with those estimates.
  uint64_t imputed = 0;
  bool entry_only = false;  // recorded at entry only (trace --entry-only): `dur` is meaningless
};

struct ThreadStats {
  uint32_t pid = 0, tid = 0;
  std::string comm;
  uint64_t calls = 0;
  int64_t first_ns = 0, last_ns = 0;  // active span: first call .. last call end
  int64_t api_ns = 0;                 // time inside GPU API calls (nested calls once)
  OffCpuParts off;                    // off-CPU inside the active span
  std::vector<OpStats> ops;           // most total time first
};

struct ProcessStats {
  uint32_t pid = 0;
  std::string comm;
  uint64_t calls = 0;
  int64_t first_ns = 0, last_ns = 0;
  int64_t api_ns = 0;  // summed over its threads
  std::vector<OpStats> ops;
  std::vector<ThreadStats> threads;  // most calls first
};

// Where a rate series fell and stayed down.
struct RateDrop {
  bool found = false;
  size_t at = 0;      // first interval of the lower level (index into RateSeries::counts)
  int64_t at_ns = 0;  // its start, wall ns
  double before_per_s = 0, after_per_s = 0;
  double drop() const { return before_per_s > 0 ? 1.0 - after_per_s / before_per_s : 0.0; }
};

// Events per fixed interval over a process's active span. Intervals are aligned to the window's
// start so that "+5.000 s" in the report is an interval boundary.
struct RateSeries {
  uint32_t pid = 0;
  std::string comm;
  std::string what;  // "launches" (kernel and graph launches), or "calls" for a launch-less process
  int64_t start_ns = 0;  // start of interval 0, wall ns
  int64_t interval_ns = 0;
  std::vector<uint32_t> counts;
  std::vector<int64_t> covered_ns;  // part of each interval inside the active span
  RateDrop drop;
  double rate(size_t i) const;  // per second, over the covered part
  // Counts events into a series. Given them in time order (a thread's calls), it finds their
  // interval by division only when the interval changes, not once per event; any order counts
  // right.
  class Counter {
   public:
    explicit Counter(RateSeries& s) : s_(s) {}
    void add(int64_t t);  // one event at wall time t (outside the series: ignored)

   private:
    RateSeries& s_;
    size_t at_ = 0;
    int64_t from_ = INT64_MAX, to_ = INT64_MIN;  // interval at_ is [from_, to_)
  };
};

// A window part's event counts in fine bins (kFineNs) from the whole window's start, per process
// (explain_batched.hpp): the windows' bins add up to exactly the counts one analysis of the whole
// window has in each of its intervals (all are multiples of kFineNs from the same start), so the
// whole span's rate series, and whether its rate dropped, is the same either way.
struct FineRates {
  static constexpr int64_t kFineNs = 10'000'000;  // choose_interval()'s smallest step
  uint32_t pid = 0;
  struct Counts {
    int64_t lo = INT64_MAX, hi = INT64_MIN;  // first and last counted event time
    int64_t first_bin = 0;                   // bins[0] is bin first_bin from the origin
    std::vector<uint32_t> bins;
    uint64_t total = 0;
  } launches, calls;  // kernel and graph launches; every call
};

struct Stats {
  uint64_t calls = 0;
  std::vector<OpStats> ops;  // whole window, most total time first
  // Per API (ascending), the histogram behind `ops`: batches of one analysis add theirs up
  // (explain_batched.hpp). Not shown.
  std::vector<std::pair<uint16_t, DurHistogram>> op_hists;
  std::vector<ProcessStats> processes;  // most calls first
  std::vector<RateSeries> rates;        // one per process with enough events
  // Window parts only (TraceRows::rate_origin_ns set): every process's fine counts.
  std::vector<FineRates> fine_rates;
};

// The whole window's rate series of one process from its window parts' fine counts, as
// rate_series() makes it from all the calls at once; nullopt with too few events for a rate.
std::optional<RateSeries> rates_from_fine(const std::vector<const FineRates*>& parts,
                                          int64_t origin_ns, double min_drop);

// The orders Stats keeps: operations by total time (ties by name), processes by calls (ties by
// pid).
void sort_ops(std::vector<OpStats>& ops);
void sort_processes(std::vector<ProcessStats>& processes);

// `min_drop`: the fall of the launch rate reported as a drop (Thresholds::rate_drop).
Stats compute_stats(const TraceRows& rows, const Joins& joins, double min_drop = 0.30);

// A round interval (10 ms .. 1 h) giving at most `max_intervals` over `span_ns`.
int64_t choose_interval(int64_t span_ns, int max_intervals = 30);

// The intervals of a series over [span_start, span_end], every count 0 (RateSeries::Counter
// counts).
RateSeries empty_rate_series(int64_t origin_ns, int64_t span_start, int64_t span_end);

// Builds a series from event times (any order) over [span_start, span_end].
RateSeries make_rate_series(const std::vector<int64_t>& ts, int64_t origin_ns, int64_t span_start,
                            int64_t span_end);

// Where a series fell and stayed down, over its intervals mostly inside the active span (the
// drop compute_stats reports; also for a series put together from time windows).
RateDrop rate_drop_of(const RateSeries& s, double min_drop);

// Finds the best single step down in `rates` (one value per interval): the split maximising the
// drop weighted by how many intervals support it; reported only when both the means and the
// medians of the two sides differ by more than `min_drop` and each side has two intervals.
RateDrop find_rate_drop(const std::vector<double>& rates, double min_drop);

}  // namespace gpuwhy::analysis
