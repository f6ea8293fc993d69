// SPDX-License-Identifier: Apache-2.0
// explain of a process bigger than the batch, in consecutive time windows (explain_batched.hpp,
// docs/explain.md "Explaining in windows"), against one analysis of the whole window:
// - the trace counts, and every thread's span and time per bucket are the same: the windows'
//   spans meet at each thread's next call (or its last call's end), and interval events are
//   counted where they start; only where the process's GPU queue was empty may move a little at
//   each cut (its state is not carried over), between host work and refill gap;
// - the verdict and top chain are the same, and every chain of 2% or more is on both sides, by
//   kind, victim thread, culprit and severity, with each share within 1 point (per-window
//   choices remain: a detector's own thresholds near explain's 1% floor).
// The trace is gen_trace's (gen_trace_suite.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "analysis/analysis.hpp"
#include "gen_trace_suite.hpp"

namespace gpuwhy {
namespace {

using ojson = nlohmann::ordered_json;

class WindowedExplain : public testing::GenTraceSuite {
 protected:
  static ojson explain(uint64_t batch_rows) { return GenTraceSuite::explain({}, batch_rows); }
};

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

// Every thread's budget: the same span and the same time in each bucket, but for where the GPU
// queue was empty. A process with several GPU threads has one queue (budget.cpp), whose state at
// a window's start is not carried over from the window before: from the last drain before the
// cut to the first enqueue after it, host work may read as refill gap and back, and GPU-idle
// parts move by as much (measured: at most 0.03% of a span with 2-3 windows per process).
void expect_same_budgets(const ojson& one, const ojson& windowed) {
  ASSERT_EQ(one.size(), windowed.size());
  std::map<std::pair<int, int>, const ojson*> by_thread;
  for (const ojson& b : windowed)
    by_thread[{b["thread"]["pid"].get<int>(), b["thread"]["tid"].get<int>()}] = &b;
  for (const ojson& a : one) {
    const auto it = by_thread.find({a["thread"]["pid"].get<int>(), a["thread"]["tid"].get<int>()});
    ASSERT_NE(it, by_thread.end()) << a["thread"].dump();
    const ojson& b = *it->second;
    SCOPED_TRACE(a["thread"].dump());
    EXPECT_EQ(a["span_ns"], b["span_ns"]);
    EXPECT_EQ(a["first_rel_ns"], b["first_rel_ns"]);
    const double slack = 0.005 * a["span_ns"].get<double>();
    EXPECT_NEAR(a["gpu_idle_ns"].get<double>(), b["gpu_idle_ns"].get<double>(), slack);
    std::map<std::string, std::pair<double, double>> ns_a, ns_b;  // bucket -> (ns, idle)
    for (const ojson& k : a["buckets"])
      ns_a[k["bucket"]] = {k["ns"].get<double>(), k["gpu_idle_ns"].get<double>()};
    for (const ojson& k : b["buckets"])
      ns_b[k["bucket"]] = {k["ns"].get<double>(), k["gpu_idle_ns"].get<double>()};
    auto ns = [](auto& m, const char* k) { return m.count(k) ? m[k].first : 0.0; };
    EXPECT_EQ(ns(ns_a, "host_work") + ns(ns_a, "refill_gap"),
              ns(ns_b, "host_work") + ns(ns_b, "refill_gap"));
    for (const auto& [bucket, v] : ns_a) {
      const auto [n, idle] = ns_b.count(bucket) ? ns_b[bucket] : std::pair{0.0, 0.0};
      if (bucket == "host_work" || bucket == "refill_gap") {
        EXPECT_NEAR(v.first, n, slack) << bucket;
      } else {
        EXPECT_EQ(v.first, n) << bucket;
      }
      EXPECT_NEAR(v.second, idle, slack) << bucket;
    }
  }
}

void expect_same_answer(const ojson& one, const ojson& windowed) {
  EXPECT_EQ(one["verdict"], windowed["verdict"]);
  EXPECT_EQ(one["clean"], windowed["clean"]);
  EXPECT_EQ(one["trace"].dump(1), windowed["trace"].dump(1));
  expect_same_budgets(one["budgets"], windowed["budgets"]);
  const ojson& a = one["chains"];
  const ojson& b = windowed["chains"];
  ASSERT_FALSE(a.empty()) << "the trace should give findings to compare";
  EXPECT_EQ(key_of(a[0]), key_of(b[0])) << "the top chain";
  // Every chain of 2% or more on either side is on the other, its share within a point. Chains
  // near explain's 1% floor may fall under it in a window and not come back in the sum (a
  // detector's own cut-off applies per window), and the process's GPU-idle part of its budget
  // moves a little at each cut (expect_same_budgets): small gpu_idle chains come and go.
  auto shares_of = [](const ojson& chains) {
    std::map<ChainKey, double> m;
    for (const ojson& c : chains) m[key_of(c)] = c["share"].get<double>();
    return m;
  };
  const std::map<ChainKey, double> sa = shares_of(a), sb = shares_of(b);
  for (const auto& [x, y] : {std::pair{&sa, &sb}, std::pair{&sb, &sa}}) {
    for (const auto& [key, share] : *x) {
      if (share < 0.02) continue;
      const auto it = y->find(key);
      ASSERT_NE(it, y->end()) << std::get<0>(key) << " of tid " << std::get<1>(key) << " at "
                              << share << " is on one side only";
      EXPECT_NEAR(it->second, share, 0.01) << std::get<0>(key) << " of tid " << std::get<1>(key);
    }
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
