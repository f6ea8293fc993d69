// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

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
