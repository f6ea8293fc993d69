// SPDX-License-Identifier: Apache-2.0
// Polling for GPU work (issue 36) on hand-built traces: a thread spinning on cudaEventQuery is
// waiting for the GPU on a CPU (the `polling` bucket, the gpu_polling chain), not doing host work;
// its run-queue waits between polls stay CPU contention's; a query between launches (a caching
// allocator's) is no spin; a blocking wait is no polling at all.
#include <gtest/gtest.h>

#include "analysis/explain.hpp"
#include "analysis_test_util.hpp"

namespace gpuwhy::analysis {
namespace {

using testing::kMs;
using testing::kUs;
using testing::RowsBuilder;

constexpr uint32_t kPid = 100;
constexpr int64_t kPollNs = 2 * kUs;

// 100 steps of 10 ms on tid 100: five launches, an event record at +0.25 ms, then `wait(t)`, the
// rest of the step host work.
template <class Wait>
void steps(RowsBuilder& b, Wait wait) {
  for (int i = 0; i < 100; ++i) {
    const double t = 10.0 * i;
    for (int k = 0; k < 5; ++k) b.call(kPid, kPid, "cudaLaunchKernel", t + 0.05 * k, 5 * kUs);
    b.call(kPid, kPid, "cudaEventRecord", t + 0.25, kPollNs);
    wait(t);
  }
}

// Not-ready polls every 30 µs from +0.3 to +8.3 ms (none while the thread was off its CPU in
// [+hole_s, +hole_e) ms), then the one that finds the event done.
void spin(RowsBuilder& b, double t, double hole_s = 0, double hole_e = 0) {
  for (int k = 0; k < 267; ++k) {
    const double p = 0.3 + 0.03 * k;
    if (p + 0.002 > hole_s && p < hole_e) continue;
    b.call(kPid, kPid, "cudaEventQuery", t + p, kPollNs).failed(600);
  }
  b.call(kPid, kPid, "cudaEventQuery", t + 8.3, kPollNs);
}

// The span: the first launch to the end of the last step's ready poll.
constexpr double kSpanMs = 990 + 8.3 + 0.002;

int64_t bucket(const Report& r, uint32_t tid, Bucket k) {
  for (const BudgetReport& br : r.budgets) {
    if (br.thread.tid != tid) continue;
    for (const BudgetLine& l : br.lines)
      if (l.bucket == k) return l.ns;
  }
  return 0;
}

int64_t span(const Report& r, uint32_t tid) {
  for (const BudgetReport& br : r.budgets)
    if (br.thread.tid == tid) return br.span_ns;
  return 0;
}

const Chain* find(const Report& r, std::string_view kind) {
  for (const Chain& c : r.chains)
    if (c.kind == kind) return &c;
  return nullptr;
}

double share(const Report& r, Bucket k) {
  return static_cast<double>(bucket(r, kPid, k)) / static_cast<double>(span(r, kPid));
}

TEST(AnalysisPolling, ASpinOnAnEventIsPollingNotHostWork) {
  RowsBuilder b;
  b.process(kPid, "server");
  steps(b, [&](double t) { spin(b, t); });
  const Report r = analyze(b.build());
  // 8 of every 10 ms, from the first not-ready poll to the ready one.
  const double want = 100 * 8.0 / kSpanMs;
  EXPECT_NEAR(share(r, Bucket::Polling), want, 1e-3);
  // The host work is the rest: each step less its launches (25 µs), record and ready poll (2 µs
  // each) and polling, the last step ending with its ready poll.
  const double host_ms = 99 * (10 - 0.025 - 0.004 - 8.0) + (0.3 - 0.025 - 0.002);
  EXPECT_NEAR(share(r, Bucket::HostWork), host_ms / kSpanMs, 1e-3);
  const Chain* c = find(r, "gpu_polling");
  ASSERT_NE(c, nullptr);
  EXPECT_NEAR(c->share(), want, 1e-3);
  EXPECT_EQ(c->severity, Severity::Medium) << "capped: a spin costs a core, not GPU time";
  EXPECT_EQ(c->thread.tid, kPid);
  EXPECT_NE(c->summary.find("cudaEventQuery"), std::string::npos) << c->summary;
  EXPECT_NE(c->fix.find("cudaEventSynchronize"), std::string::npos) << c->fix;
  bool counted = false;
  for (const auto& [name, v] : c->metrics)
    if (name == "not_ready_polls") counted = v == 100 * 267;
  EXPECT_TRUE(counted);
  // Not ready is progress, not a failure.
  bool listed = false;
  for (const auto& op : r.stats.ops) {
    if (op.name != "cudaEventQuery") continue;
    listed = true;
    EXPECT_EQ(op.errors, 0u);
  }
  EXPECT_TRUE(listed);
}

// In a Python process the polls' own Python line is named, in the evidence and in the fix.
TEST(AnalysisPolling, ASpinNamesItsPythonLine) {
  RowsBuilder b;
  b.process(kPid, "python3");
  steps(b, [&](double t) { spin(b, t); });
  TraceRows& rows = b.rows();
  const uint16_t query = find_api("cudaEventQuery")->id;
  for (CallRow& c : rows.calls) {
    if (c.api != query) continue;
    CallExt e = rows.ext(c);
    e.pystack_id = 5;
    rows.set_ext(c, e);
  }
  rows.python_sites = {{5, PySite{"/srv/engine.py", "Scheduler.wait_ready", 88,
                                  "while not done.query(): self.poll_queues()"}}};
  const Report r = analyze(b.build());
  const Chain* c = find(r, "gpu_polling");
  ASSERT_NE(c, nullptr);
  const std::string line =
      "engine.py:88 in Scheduler.wait_ready: while not done.query(): self.poll_queues()";
  EXPECT_NE(c->fix.find("at " + line), std::string::npos) << c->fix;
  bool named = false;
  for (const Evidence& e : c->evidence) named |= e.text.find(line) != std::string::npos;
  EXPECT_TRUE(named);
}

// Preempted between two polls, the thread lost its CPU to another process: that stays CPU
// contention (runnable), only its time on the CPU is polling.
TEST(AnalysisPolling, RunQueueWaitsBetweenPollsStayRunnable) {
  RowsBuilder b;
  b.process(kPid, "server").process(900, "hog");
  steps(b, [&](double t) {
    spin(b, t, 1.004, 3.004);
    b.preempt(kPid, kPid, t + 1.004, 2 * kMs, 900, "hog");  // after a poll, before the next
  });
  const Report r = analyze(b.build());
  EXPECT_NEAR(share(r, Bucket::Runnable), 100 * 2.0 / kSpanMs, 1e-3);
  // The rest of each step's 8 ms is polling.
  EXPECT_NEAR(share(r, Bucket::Polling), 100 * 6.0 / kSpanMs, 1e-3);
}

// PyTorch's caching allocator asks whether a block's last use is done before reusing it, once
// per allocation between launches: a not-ready answer there is no spin, the gap after it ends in
// a launch and is host work; only the queries' own time is polling, and no chain.
TEST(AnalysisPolling, AQueryBetweenLaunchesIsNoSpin) {
  RowsBuilder b;
  b.process(kPid, "trainer");
  steps(b, [&](double t) {
    for (int k = 0; k < 20; ++k) {
      b.call(kPid, kPid, "cudaEventQuery", t + 0.3 + 0.4 * k, kPollNs).failed(600);
      b.call(kPid, kPid, "cudaLaunchKernel", t + 0.5 + 0.4 * k, 5 * kUs);
    }
    b.call(kPid, kPid, "cudaStreamSynchronize", t + 8.5, 1 * kMs);
  });
  const Report r = analyze(b.build());
  EXPECT_EQ(bucket(r, kPid, Bucket::Polling), 100 * 20 * kPollNs);
  EXPECT_EQ(find(r, "gpu_polling"), nullptr);
}

// The same steps blocking in cudaEventSynchronize: the wait is the GPU's, not polling.
TEST(AnalysisPolling, ABlockingWaitIsNoPolling) {
  RowsBuilder b;
  b.process(kPid, "server");
  steps(b, [&](double t) { b.call(kPid, kPid, "cudaEventSynchronize", t + 0.3, 8 * kMs); });
  const Report r = analyze(b.build());
  EXPECT_EQ(bucket(r, kPid, Bucket::Polling), 0);
  EXPECT_GT(share(r, Bucket::GpuWait), 0.75);
  EXPECT_EQ(find(r, "gpu_polling"), nullptr);
}

}  // namespace
}  // namespace gpuwhy::analysis
