// SPDX-License-Identifier: Apache-2.0
// Statistics: per-operation summaries per scope, the rate series and its drop point.
#include <gtest/gtest.h>

#include "analysis/stats.hpp"
#include "analysis_test_util.hpp"

namespace gpuwhy::analysis {
namespace {

using testing::kMs;
using testing::kT0;
using testing::kUs;
using testing::RowsBuilder;

TEST(AnalysisStats, FindsAStepDownAndWhereItStarts) {
  const std::vector<double> rates = {100, 102, 98, 101, 99, 50, 52, 49, 51, 50};
  const RateDrop d = find_rate_drop(rates, 0.30);
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.at, 5u);
  EXPECT_NEAR(d.before_per_s, 100, 0.5);
  EXPECT_NEAR(d.after_per_s, 50.4, 0.5);
  EXPECT_NEAR(d.drop(), 0.5, 0.01);
}

TEST(AnalysisStats, IgnoresNoiseADipAndARise) {
  EXPECT_FALSE(find_rate_drop({100, 90, 110, 95, 105, 100, 92, 108}, 0.30).found);
  // A single slow interval in the middle is not a drop "from a point in time".
  EXPECT_FALSE(find_rate_drop({100, 100, 100, 10, 100, 100, 100, 100}, 0.30).found);
  EXPECT_FALSE(find_rate_drop({50, 50, 50, 100, 100, 100}, 0.30).found);
  EXPECT_FALSE(find_rate_drop({100, 10}, 0.30).found);  // too short to tell
  // 25% is under the 30% threshold.
  EXPECT_FALSE(find_rate_drop({100, 100, 100, 75, 75, 75}, 0.30).found);
}

TEST(AnalysisStats, IntervalsAreNiceAndFew) {
  EXPECT_EQ(choose_interval(10'000 * kMs), 500 * kMs);  // 10 s -> 20 intervals of 500 ms
  EXPECT_EQ(choose_interval(100 * kMs), 10 * kMs);
  EXPECT_EQ(choose_interval(3'600'000 * kMs), 120'000 * kMs);  // 1 h -> 30 x 2 min
}

TEST(AnalysisStats, RateSeriesAlignedToTheWindow) {
  std::vector<int64_t> ts;
  for (int i = 0; i < 100; ++i) ts.push_back(kT0 + 250 * kMs + i * 10 * kMs);  // +0.25 .. +1.24 s
  const RateSeries s = make_rate_series(ts, kT0, ts.front(), ts.back());
  EXPECT_EQ(s.interval_ns, 50 * kMs);
  EXPECT_EQ(s.start_ns, kT0 + 250 * kMs);
  EXPECT_EQ(s.counts.front(), 5u);
  EXPECT_NEAR(s.rate(1), 100.0, 0.01);
}

TEST(AnalysisStats, PerOperationPerProcessPerThread) {
  RowsBuilder b;
  b.process(1, "a").thread(1, 2, "a-worker").process(5, "b");
  for (int i = 0; i < 100; ++i) {
    b.call(1, 1, "cudaLaunchKernel", i, (i + 1) * kUs);
    b.call(1, 2, "cudaMemcpyAsync", i, 20 * kUs, 1024, 1);
    b.call(5, 5, "cudaLaunchKernel", i, 5 * kUs);
  }
  b.rows().calls.back().ret = 1;  // one failed call
  const TraceRows rows = b.build();
  const Stats st = compute_stats(rows, compute_joins(rows));
  EXPECT_EQ(st.calls, 300u);
  ASSERT_EQ(st.processes.size(), 2u);
  const ProcessStats& a = st.processes[0];
  EXPECT_EQ(a.pid, 1u);
  EXPECT_EQ(a.calls, 200u);
  ASSERT_EQ(a.threads.size(), 2u);
  ASSERT_EQ(a.ops.size(), 2u);
  EXPECT_EQ(a.ops[0].name, "cudaLaunchKernel");  // 5.05 ms beats 2 ms
  EXPECT_EQ(a.ops[0].dur.p50, 50 * kUs);
  EXPECT_EQ(a.ops[0].dur.p99, 99 * kUs);
  EXPECT_EQ(a.ops[1].bytes, 102'400u);
  // Across processes: launches of both.
  ASSERT_FALSE(st.ops.empty());
  EXPECT_EQ(st.ops[0].name, "cudaLaunchKernel");
  EXPECT_EQ(st.ops[0].dur.count, 200u);
  EXPECT_EQ(st.ops[0].errors, 1u);
  // Process 5 has 100 launches over 99 ms: a series; process 1's launches too.
  EXPECT_EQ(st.rates.size(), 2u);
}

}  // namespace
}  // namespace gpuwhy::analysis
