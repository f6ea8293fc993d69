// SPDX-License-Identifier: Apache-2.0
// Duration summaries. Percentiles use the nearest-rank definition (the smallest sample that at
// least p% of samples do not exceed): always a duration that really occurred, and exact, which
// matters when a tail of a few slow calls is the whole story.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuwhy::analysis {

struct DurStats {
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t p50 = 0, p90 = 0, p99 = 0, max = 0;
  // p99 / p50: how much slower the slow calls are than the typical one (0 when p50 is 0).
  double tail_ratio() const { return p50 > 0 ? static_cast<double>(p99) / p50 : 0.0; }
};

// Summarises `v` in O(n) (selection, not a sort). Reorders `v`.
DurStats summarize(std::vector<int64_t>& v);

// Nearest-rank percentile (0 < p <= 100) of `v`; reorders `v`. 0 for an empty sample.
int64_t percentile(std::vector<int64_t>& v, double p);

// Index of the nearest-rank p-th percentile in a sorted sample of n values.
size_t nearest_rank_index(size_t n, double p);

// Median of a copy (for small samples in the detectors).
int64_t median_of(std::vector<int64_t> v);

}  // namespace gpuwhy::analysis
