// SPDX-License-Identifier: Apache-2.0
// Duration summaries. Percentiles use the nearest-rank definition (the smallest sample that at
// least p% of samples do not exceed): always a duration that really occurred, and exact, which
// matters when a tail of a few slow calls is the whole story.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace gpuwhy::analysis {

struct DurStats {
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t p50 = 0, p90 = 0, p99 = 0, max = 0;
  // p99 / p50: how much slower the slow calls are than the typical one (0 when p50 is 0).
  double tail_ratio() const { return p50 > 0 ? static_cast<double>(p99) / p50 : 0.0; }
};

// Durations counted in buckets that are the same for every histogram: log-linear, one per
// nanosecond below 256 ns, then 128 per power of two (under 1% wide). So the histograms of several
// samples add up to their union's, and a percentile is found by counting up to the bucket of its
// rank and selecting among that bucket's values only: exact, with no sort and no copy of the
// sample (summarize() shows the steps; compute_stats runs them for many samples at once).
class DurHistogram {
 public:
  static constexpr size_t kBuckets = 1 + 256 + 55 * 128;  // negatives, 0..255, 2^8 .. 2^63
  static size_t bucket(int64_t v) {
    if (v < 0) return 0;
    if (v < 256) return 1 + static_cast<size_t>(v);
    const int e = 63 - std::countl_zero(static_cast<uint64_t>(v));  // 8 .. 62
    return 1 + 256 + static_cast<size_t>(e - 8) * 128 + static_cast<size_t>((v >> (e - 7)) & 127);
  }

  void add(int64_t v) {
    if (counts_.empty()) counts_.assign(kBuckets, 0);
    ++counts_[bucket(v)];
    max_ = count_++ == 0 ? v : std::max(max_, v);
    total_ = saturating_add(total_, v);
  }
  // A damaged file can hold durations near INT64_MAX: the sum saturates rather than overflow.
  static int64_t saturating_add(int64_t a, int64_t b) {
    int64_t r;
    if (!__builtin_add_overflow(a, b, &r)) return r;
    return b > 0 ? INT64_MAX : INT64_MIN;
  }
  void add(const DurHistogram& other);
  // The smallest value bucket b holds: every value in it is at most 1/128 (0.8%) above it.
  static int64_t bucket_floor(size_t b) {
    if (b == 0) return -1;
    if (b <= 256) return static_cast<int64_t>(b) - 1;
    const size_t e = 8 + (b - 257) / 128, m = (b - 257) % 128;
    return static_cast<int64_t>((uint64_t{1} << e) + (uint64_t{m} << (e - 7)));
  }
  uint64_t count() const { return count_; }
  int64_t total() const { return total_; }
  int64_t max() const { return max_; }

  // Where the value of rank k (0-based, k < count()) is: its bucket and its rank there.
  struct Rank {
    size_t bucket = 0, in_bucket = 0;
  };
  Rank locate(uint64_t k) const;

 private:
  std::vector<uint32_t> counts_;  // kBuckets once a value is added
  uint64_t count_ = 0;
  int64_t total_ = 0, max_ = 0;
};

// The percentiles a DurStats holds, and where it holds each.
inline constexpr double kSummaryPercentiles[] = {50, 90, 99};
inline constexpr int64_t DurStats::*kSummaryFields[] = {&DurStats::p50, &DurStats::p90,
                                                        &DurStats::p99};

// Summarises `v` in O(n) with a DurHistogram.
DurStats summarize(std::span<const int64_t> v);

// The value of rank k (0-based, k < v.size()) in `v`; reorders `v`.
int64_t percentile_at(std::vector<int64_t>& v, size_t k);

// Nearest-rank percentile (0 < p <= 100) of `v`; reorders `v`. 0 for an empty sample.
int64_t percentile(std::vector<int64_t>& v, double p);

// Index of the nearest-rank p-th percentile in a sorted sample of n values.
size_t nearest_rank_index(size_t n, double p);

// Median of a copy (for small samples in the detectors).
int64_t median_of(std::vector<int64_t> v);

}  // namespace gpuwhy::analysis
