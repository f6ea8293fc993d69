// SPDX-License-Identifier: Apache-2.0
// explain of a process bigger than the batch, in consecutive time windows (explain_batched.hpp,
// docs/explain.md "Explaining in windows"), against one analysis of the whole window:
// - the trace counts and every thread's budget are the same, to the nanosecond: the windows'
//   spans meet at each thread's next call, and interval events are counted where they start;
// - the verdict is the same, and so are the chains, by kind, victim thread, culprit and
//   severity, with each share within 1 point (per-window choices remain: a detector's own
//   thresholds, whether GPU work was queued when a window starts). Measured: identical with 2-3
//   windows per process, within 0.15 points with about 40.
// The trace is gen_trace's (bench/gen_trace.cpp): six training processes of 40000 rows each.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "analysis/analysis.hpp"
#include "export/explain_render.hpp"
#include "shell_run.hpp"
#include "store/store.hpp"
#include "store_fixture.hpp"

namespace gpuwhy {
namespace {

using ojson = nlohmann::ordered_json;

class WindowedExplain : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    const std::string cmd = std::string(GW_GEN_TRACE) + " --out " + dir_->file("t.db") +
                            " --events 240000 --processes 6 --seed 7 2>&1";
    const testing::ShellResult r = testing::shell(cmd);
    ASSERT_EQ(r.exit_code, 0) << r.out;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::unique_ptr<store::TraceFile> open() {
    auto f = store::TraceFile::open(dir_->file("t.db"));
    EXPECT_TRUE(f) << (f ? "" : f.error().line());
    return f ? std::move(f.value()) : nullptr;
  }
  static ojson explain(uint64_t batch_rows) {
    auto file = open();
    if (!file) return {};
    auto r = analysis::explain_file(*file, {}, batch_rows);
    EXPECT_TRUE(r) << (r ? "" : r.error().line());
    return r ? render::explain_json(r.value()) : ojson{};
  }
  static testing::TempDir* dir_;
};
testing::TempDir* WindowedExplain::dir_ = nullptr;

TEST_F(WindowedExplain, PlanCutsEachProcessIntoWindowsThatMeet) {
  auto file = open();
  ASSERT_TRUE(file);
  auto bounds = analysis::trace_bounds(file->db());
  ASSERT_TRUE(bounds);
  auto plan = analysis::plan_batches(file->db(), {}, 10000);
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->slices.size(), plan->batches.size());
  ASSERT_EQ(plan->groups.size(), plan->batches.size());
  std::map<uint32_t, size_t> windows;  // per group
  for (size_t i = 0; i < plan->batches.size(); ++i) {
    const analysis::Slice& s = plan->slices[i];
    ASSERT_FALSE(s.whole()) << "a 40000-row process over a 10000-row batch is windowed";
    EXPECT_EQ(plan->batches[i].size(), 1u) << "one process per group";
    EXPECT_LT(s.from_ns, s.to_ns);
    const bool first = i == 0 || plan->groups[i - 1] != plan->groups[i];
    const bool last = i + 1 == plan->batches.size() || plan->groups[i + 1] != plan->groups[i];
    if (first) EXPECT_EQ(s.from_ns, bounds->start_ns);
    if (!first) {
      EXPECT_EQ(s.from_ns, plan->slices[i - 1].to_ns) << "windows meet";
      EXPECT_EQ(plan->batches[i], plan->batches[i - 1]);
    }
    if (last) EXPECT_EQ(s.to_ns, bounds->end_ns);
    ++windows[plan->groups[i]];
  }
  EXPECT_EQ(windows.size(), 6u);
  for (const auto& [group, n] : windows) {
    EXPECT_GE(n, 3u) << "group " << group;  // about 40000 / 10000
    EXPECT_LE(n, 6u) << "group " << group;
  }
}

using ChainKey = std::tuple<std::string, int, int, int, std::string>;
ChainKey key_of(const ojson& c) {
  const bool culprit = c.contains("culprit") && !c["culprit"].is_null();
  return {c["kind"].get<std::string>(), c["thread"]["tid"].get<int>(),
          culprit ? c["culprit"]["pid"].get<int>() : -1,
          culprit && c["culprit"].contains("tid") ? c["culprit"]["tid"].get<int>() : -1,
          c["severity"].get<std::string>()};
}

void expect_same_answer(const ojson& one, const ojson& windowed) {
  EXPECT_EQ(one["verdict"], windowed["verdict"]);
  EXPECT_EQ(one["clean"], windowed["clean"]);
  EXPECT_EQ(one["trace"].dump(1), windowed["trace"].dump(1));
  EXPECT_EQ(one["budgets"].dump(1), windowed["budgets"].dump(1));
  const ojson& a = one["chains"];
  const ojson& b = windowed["chains"];
  ASSERT_FALSE(a.empty()) << "the trace should give findings to compare";
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(key_of(a[0]), key_of(b[0])) << "the top chain";
  std::map<ChainKey, double> shares;
  for (const ojson& c : b) shares[key_of(c)] = c["share"].get<double>();
  for (const ojson& c : a) {
    const auto it = shares.find(key_of(c));
    ASSERT_NE(it, shares.end()) << c["summary"];
    EXPECT_NEAR(it->second, c["share"].get<double>(), 0.01) << c["summary"];
  }
}

TEST_F(WindowedExplain, FewWindowsGiveTheOneAnalysisAnswer) {
  const ojson one = explain(analysis::kDefaultBatchRows);
  const ojson windowed = explain(20000);  // two or three windows per process
  expect_same_answer(one, windowed);
}

TEST_F(WindowedExplain, ManySmallWindowsGiveTheOneAnalysisAnswer) {
  const ojson one = explain(analysis::kDefaultBatchRows);
  const ojson windowed = explain(1000);  // about 40 windows per process
  expect_same_answer(one, windowed);
}

}  // namespace
}  // namespace gpuwhy
