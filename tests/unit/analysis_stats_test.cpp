// SPDX-License-Identifier: Apache-2.0
// Statistics: per-operation summaries per scope, the rate series and its drop point.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <string>

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
  b.failed(1);  // one failed call
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

// Percentiles of a thread, of a process and of the trace come from bucket counts added across
// threads: each must still be the exact nearest-rank value of its own calls.
TEST(AnalysisStats, PercentilesOfEveryScopeAreExact) {
  RowsBuilder b;
  b.process(1, "a").thread(1, 2, "a-worker").process(5, "b");
  std::mt19937_64 rng(11);
  std::map<uint32_t, std::vector<int64_t>> by_tid;  // launch durations
  const std::pair<uint32_t, uint32_t> threads[] = {{1, 1}, {1, 2}, {5, 5}};
  for (int i = 0; i < 3000; ++i) {
    for (const auto& [pid, tid] : threads) {
      // Different spreads per thread, so the union's percentiles fall between the threads'.
      const int64_t dur = static_cast<int64_t>(rng() % (tid * 40'000)) + (tid == 2 ? 100 : 0);
      b.call(pid, tid, "cudaLaunchKernel", i * 0.01 + tid * 0.001, dur);
      by_tid[tid].push_back(dur);
    }
  }
  const TraceRows rows = b.build();
  const Stats st = compute_stats(rows, compute_joins(rows));
  auto expect_exact = [](const OpStats& op, std::vector<int64_t> durs, const std::string& scope) {
    std::sort(durs.begin(), durs.end());
    EXPECT_EQ(op.dur.count, durs.size()) << scope;
    EXPECT_EQ(op.dur.total_ns, std::accumulate(durs.begin(), durs.end(), int64_t{0})) << scope;
    EXPECT_EQ(op.dur.p50, durs[nearest_rank_index(durs.size(), 50)]) << scope;
    EXPECT_EQ(op.dur.p90, durs[nearest_rank_index(durs.size(), 90)]) << scope;
    EXPECT_EQ(op.dur.p99, durs[nearest_rank_index(durs.size(), 99)]) << scope;
    EXPECT_EQ(op.dur.max, durs.back()) << scope;
  };
  auto concat = [&](std::initializer_list<uint32_t> tids) {
    std::vector<int64_t> v;
    for (uint32_t tid : tids) v.insert(v.end(), by_tid[tid].begin(), by_tid[tid].end());
    return v;
  };
  ASSERT_EQ(st.ops.size(), 1u);
  expect_exact(st.ops[0], concat({1, 2, 5}), "trace");
  for (const ProcessStats& p : st.processes) {
    ASSERT_EQ(p.ops.size(), 1u);
    const std::vector<int64_t> own = p.pid == 1 ? concat({1, 2}) : concat({5});
    expect_exact(p.ops[0], own, "pid " + std::to_string(p.pid));
    for (const ThreadStats& t : p.threads) {
      ASSERT_EQ(t.ops.size(), 1u);
      expect_exact(t.ops[0], by_tid[t.tid], "tid " + std::to_string(t.tid));
    }
  }
}

}  // namespace
}  // namespace gpuwhy::analysis
