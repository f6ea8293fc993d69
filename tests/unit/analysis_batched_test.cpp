// SPDX-License-Identifier: Apache-2.0
// explain in batches of whole processes (explain_batched.hpp) gives the report one analysis of
// the whole window gives: the same chains, budgets, caveats and per-process statistics; only
// whole-window percentiles of an operation seen in several batches may sit up to 0.8% lower.
// The trace is gen_trace's (bench/gen_trace.cpp): several training processes written through
// the agent's own write path.
#include <gtest/gtest.h>

#include <set>

#include "analysis/analysis.hpp"
#include "gen_trace_suite.hpp"

namespace gpuwhy {
namespace {

using ojson = nlohmann::ordered_json;

class BatchedExplain : public testing::GenTraceSuite {};

// The whole-window operation percentiles, checked apart: a batched one is the floor of the
// exact value's histogram bucket (at most 1/128 below it) or the exact value itself.
void expect_close_percentiles(ojson& one, ojson& batched) {
  ojson& a = one["stats"]["ops"];
  ojson& b = batched["stats"]["ops"];
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i]["name"], b[i]["name"]);
    for (const char* p : {"p50_ns", "p90_ns", "p99_ns"}) {
      if (a[i][p].is_null()) continue;  // entry-only: no durations
      const int64_t exact = a[i][p], got = b[i][p];
      EXPECT_LE(got, exact) << a[i]["name"] << " " << p;
      EXPECT_GE(static_cast<double>(got), static_cast<double>(exact) * (1.0 - 1.0 / 128) - 1)
          << a[i]["name"] << " " << p;
    }
    for (ojson* j : {&a[i], &b[i]})
      for (const char* p : {"p50_ns", "p90_ns", "p99_ns", "tail_ratio"}) j->erase(p);
  }
}

TEST_F(BatchedExplain, PlanKeepsProcessesWholeAndBatchesSmall) {
  auto file = open();
  ASSERT_TRUE(file);
  auto one = analysis::plan_batches(file->db(), {}, analysis::kDefaultBatchRows);
  ASSERT_TRUE(one);
  ASSERT_EQ(one->batches.size(), 1u);
  EXPECT_EQ(one->batches[0].size(), 6u);
  EXPECT_EQ(one->rows, 240000u);
  auto many = analysis::plan_batches(file->db(), {}, 90000);
  ASSERT_TRUE(many);
  EXPECT_EQ(many->rows, 240000u);
  EXPECT_GE(many->batches.size(), 3u);
  std::set<uint32_t> seen;
  for (const auto& b : many->batches)
    for (uint32_t pid : b) EXPECT_TRUE(seen.insert(pid).second) << "pid " << pid << " twice";
  EXPECT_EQ(seen.size(), 6u);
}

TEST_F(BatchedExplain, SameReportAsOneAnalysis) {
  ojson one = explain({}, analysis::kDefaultBatchRows);
  ojson batched = explain({}, 50000);
  ASSERT_FALSE(one.empty());
  ASSERT_FALSE(batched.empty());
  ASSERT_FALSE(one["chains"].empty()) << "the trace should give findings to compare";
  expect_close_percentiles(one, batched);
  EXPECT_EQ(one.dump(1), batched.dump(1));
}

TEST_F(BatchedExplain, WindowAndPidsAcrossBatches) {
  analysis::LoadOptions opt;
  auto since = analysis::parse_window_request("5s", "", "");
  ASSERT_TRUE(since);
  opt.window = since.value();
  ojson one = explain(opt, analysis::kDefaultBatchRows);
  // 45000 rows: a batch per process (40000 rows each), none cut into time windows.
  ojson batched = explain(opt, 45000);
  expect_close_percentiles(one, batched);
  EXPECT_EQ(one.dump(1), batched.dump(1));

  auto file = open();
  ASSERT_TRUE(file);
  auto plan = analysis::plan_batches(file->db(), {}, analysis::kDefaultBatchRows);
  ASSERT_TRUE(plan);
  opt.pids = {plan->batches[0][0], plan->batches[0][3]};
  one = explain(opt, analysis::kDefaultBatchRows);
  batched = explain(opt, 45000);
  EXPECT_EQ(one["trace"]["processes"], 2);
  expect_close_percentiles(one, batched);
  EXPECT_EQ(one.dump(1), batched.dump(1));
}

TEST_F(BatchedExplain, PidWithoutCallsIsRefusedAsWithoutBatches) {
  auto file = open();
  ASSERT_TRUE(file);
  analysis::LoadOptions opt;
  opt.pids = {999999};
  auto a = analysis::explain_file(*file, opt, analysis::kDefaultBatchRows);
  auto b = analysis::explain_file(*file, opt, 20000);
  ASSERT_FALSE(a);
  ASSERT_FALSE(b);
  EXPECT_EQ(a.error().line(), b.error().line());
}

// The ranks of an NCCL job are compared with one another (the straggler detector): whatever the
// batch size, the processes that made collective calls share one batch.
TEST(BatchedExplainPlan, AnNcclJobsRanksShareABatch) {
  testing::TempDir dir;
  const std::string path = dir.file("job.db");
  auto w = testing::make_writer(path);
  ASSERT_TRUE(w);
  std::vector<Event> events;
  for (uint32_t pid : {100u, 200u, 300u, 400u}) {
    const bool rank = pid <= 200;
    for (int i = 0; i < 1500; ++i) {
      const int64_t t = testing::kStart + i * 100'000;
      events.push_back(testing::call("cudaLaunchKernel", t, 5'000, pid, pid));
      if (rank) events.push_back(testing::call("ncclAllReduce", t + 20'000, 5'000, pid, pid));
    }
  }
  ASSERT_TRUE(w->write_batch(events).ok());
  ASSERT_TRUE(w->finish(testing::kStart + 1000 * testing::kMs).ok());
  w.reset();
  auto f = testing::open_trace(path);
  ASSERT_TRUE(f);
  auto plan = analysis::plan_batches(f->db(), {}, 2000);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->rows, 9000u);
  // The job's 6000 rows: over the batch, so cut into time windows of both ranks together.
  ASSERT_EQ(plan->batches.size(), 5u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(plan->batches[i], (std::vector<uint32_t>{100, 200}));
    EXPECT_EQ(plan->groups[i], 0u);
    EXPECT_FALSE(plan->slices[i].whole());
  }
  EXPECT_EQ(plan->batches[3], (std::vector<uint32_t>{300}));
  EXPECT_EQ(plan->batches[4], (std::vector<uint32_t>{400}));
  EXPECT_TRUE(plan->slices[3].whole());
  EXPECT_NE(plan->groups[3], plan->groups[4]);
  auto one = analysis::plan_batches(f->db(), {}, 9000);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->batches.size(), 1u);
}

}  // namespace
}  // namespace gpuwhy
