// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include "analysis/percentile.hpp"

namespace gpuwhy::analysis {
namespace {

TEST(AnalysisPercentile, NearestRankOnOneToHundred) {
  std::vector<int64_t> v(100);
  std::iota(v.begin(), v.end(), 1);
  std::reverse(v.begin(), v.end());
  const DurStats s = summarize(v);
  EXPECT_EQ(s.count, 100u);
  EXPECT_EQ(s.total_ns, 5050);
  EXPECT_EQ(s.p50, 50);
  EXPECT_EQ(s.p90, 90);
  EXPECT_EQ(s.p99, 99);
  EXPECT_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(s.tail_ratio(), 99.0 / 50.0);
}

TEST(AnalysisPercentile, SmallSamplesReturnRealValues) {
  std::vector<int64_t> one{7};
  const DurStats s1 = summarize(one);
  EXPECT_EQ(s1.p50, 7);
  EXPECT_EQ(s1.p99, 7);
  EXPECT_EQ(s1.max, 7);
  // 10 samples: p50 is the 5th, p90 the 9th, p99 the 10th (ceil(9.9) = 10).
  std::vector<int64_t> ten{10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
  const DurStats s = summarize(ten);
  EXPECT_EQ(s.p50, 5);
  EXPECT_EQ(s.p90, 9);
  EXPECT_EQ(s.p99, 10);
}

TEST(AnalysisPercentile, TailOfAFewSlowCalls) {
  // 990 calls of 5 µs and 10 of 2 ms: p99 sits at the boundary, max is the slow tail.
  std::vector<int64_t> v(990, 5'000);
  v.insert(v.end(), 10, 2'000'000);
  const DurStats s = summarize(v);
  EXPECT_EQ(s.p50, 5'000);
  EXPECT_EQ(s.p99, 5'000);
  EXPECT_EQ(s.max, 2'000'000);
  v.push_back(2'000'000);  // 11 slow of 1001: the 991st value is slow
  EXPECT_EQ(percentile(v, 99), 2'000'000);
}

TEST(AnalysisPercentile, HistogramBucketsKeepTheOrder) {
  size_t prev = 0;
  for (int64_t v : {int64_t{-5}, int64_t{0}, int64_t{1}, int64_t{255}, int64_t{256}, int64_t{257},
                    int64_t{511}, int64_t{512}, int64_t{1'000'000}, int64_t{1} << 40,
                    std::numeric_limits<int64_t>::max()}) {
    const size_t b = DurHistogram::bucket(v);
    EXPECT_LT(b, DurHistogram::kBuckets) << v;
    EXPECT_GE(b, prev) << v;
    prev = b;
  }
  EXPECT_EQ(DurHistogram::bucket(-1), DurHistogram::bucket(std::numeric_limits<int64_t>::min()));
  EXPECT_NE(DurHistogram::bucket(254), DurHistogram::bucket(255));  // exact below 256 ns
}

TEST(AnalysisPercentile, SummaryMatchesASortOnAnyDistribution) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<int64_t> v(1 + rng() % 5000);
    for (int64_t& x : v) {
      switch (rng() % 4) {
        case 0: x = static_cast<int64_t>(rng() % 300); break;              // exact buckets
        case 1: x = 5'000 + static_cast<int64_t>(rng() % 64); break;       // ties in one bucket
        case 2: x = static_cast<int64_t>(rng() >> (rng() % 64)); break;    // any magnitude
        default: x = -static_cast<int64_t>(rng() % 1000); break;           // clock skew
      }
    }
    std::vector<int64_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    const DurStats s = summarize(v);
    EXPECT_EQ(s.count, v.size());
    // The total saturates at the int64 limits (a damaged file's durations) instead of wrapping.
    int64_t total = 0;
    for (int64_t x : v) total = DurHistogram::saturating_add(total, x);
    EXPECT_EQ(s.total_ns, total);
    EXPECT_EQ(s.p50, sorted[nearest_rank_index(v.size(), 50)]);
    EXPECT_EQ(s.p90, sorted[nearest_rank_index(v.size(), 90)]);
    EXPECT_EQ(s.p99, sorted[nearest_rank_index(v.size(), 99)]);
    EXPECT_EQ(s.max, sorted.back());
  }
}

TEST(AnalysisPercentile, EmptyAndRanks) {
  std::vector<int64_t> none;
  EXPECT_EQ(summarize(none).count, 0u);
  EXPECT_EQ(percentile(none, 50), 0);
  EXPECT_EQ(nearest_rank_index(4, 50), 1u);
  EXPECT_EQ(nearest_rank_index(4, 100), 3u);
  EXPECT_EQ(nearest_rank_index(4, 0.1), 0u);
}

}  // namespace
}  // namespace gpuwhy::analysis
