// SPDX-License-Identifier: Apache-2.0
// The phases of a process from the rate of its GPU work (phases.hpp): steady_run on planted event
// times, then explain on hand-built traces with a planted start-up and tail.
#include <gtest/gtest.h>

#include <vector>

#include "analysis/explain.hpp"
#include "analysis/phases.hpp"
#include "analysis_test_util.hpp"

namespace gpuwhy::analysis {
namespace {

using testing::kMs;
using testing::kUs;
using testing::RowsBuilder;

constexpr uint32_t kTrainer = 100;
constexpr int64_t kSec = 1'000'000'000;

// `n` events `gap_ns` apart from `from`, appended to ts.
void events(std::vector<int64_t>& ts, int64_t from, size_t n, int64_t gap_ns) {
  for (size_t i = 0; i < n; ++i) ts.push_back(from + static_cast<int64_t>(i) * gap_ns);
}

TEST(AnalysisPhases, EvenWorkIsAllSteadyState) {
  std::vector<int64_t> ts;
  events(ts, 0, 5'000, 2'000'000);
  const EventRun r = steady_run(ts);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.last, ts.size() - 1);
}

TEST(AnalysisPhases, FewEventsAreLeftWhole) {
  std::vector<int64_t> ts;
  events(ts, 0, 5, kSec);
  events(ts, 10 * kSec, kMinPhaseEvents - 6, 1'000'000);
  const EventRun r = steady_run(ts);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.last, ts.size() - 1);
}

// Ten launches over five seconds (a weight initialisation, a warm-up with a module load per
// kernel), then the steps at 1,000/s: the sparse start falls outside, far below a tenth of the
// steps' rate.
TEST(AnalysisPhases, SparseStartIsStartUp) {
  std::vector<int64_t> ts;
  events(ts, 0, 10, kSec / 2);
  events(ts, 5 * kSec, 10'000, 1'000'000);
  const EventRun r = steady_run(ts);
  EXPECT_EQ(r.first, 10u);
  EXPECT_EQ(r.last, ts.size() - 1);
}

// A warm-up step's 300 launches are as dense as the steps, but three seconds of data loading
// follow them before the steps: more events than the pause costs the densest run, so the pause
// cut ends the start-up there.
TEST(AnalysisPhases, DenseWarmUpBeforeAPauseIsStartUp) {
  std::vector<int64_t> ts;
  events(ts, 0, 300, 100'000);
  events(ts, 3 * kSec, 10'000, 1'000'000);
  const EventRun r = steady_run(ts);
  EXPECT_EQ(r.first, 300u);
  EXPECT_EQ(r.last, ts.size() - 1);
}

// Steps that sleep a second each are the steady state: the sleeps are its typical gap, and a
// rate of GPU work that stays the same is never cut, however long its gaps.
TEST(AnalysisPhases, SleepyStepsAreSteady) {
  std::vector<int64_t> ts;
  for (int step = 0; step < 30; ++step) events(ts, step * (kSec + 10'000'000), 20, 500'000);
  const EventRun r = steady_run(ts);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.last, ts.size() - 1);
}

// A checkpoint's pause in the middle of the run is part of the steady state (gpu_idle counts
// it), not an end.
TEST(AnalysisPhases, PauseInTheMiddleIsKept) {
  std::vector<int64_t> ts;
  events(ts, 0, 5'000, 1'000'000);
  events(ts, 8 * kSec, 5'000, 1'000'000);
  const EventRun r = steady_run(ts);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.last, ts.size() - 1);
}

// The steps, then a final evaluation that launches a kernel now and then over four seconds.
TEST(AnalysisPhases, SparseEndIsTheTail) {
  std::vector<int64_t> ts;
  events(ts, 0, 10'000, 1'000'000);
  events(ts, 10 * kSec + kSec / 2, 8, kSec / 2);
  const EventRun r = steady_run(ts);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.last, 9'999u);
}

// A training loop on tid 100: every `step_ms`, five 5 µs launches 50 µs apart, then at +0.3 ms
// a sync of `sync_ms`.
void train(RowsBuilder& b, double from_ms, double to_ms, double step_ms, double sync_ms) {
  for (double t = from_ms; t + step_ms <= to_ms + 1e-9; t += step_ms) {
    for (int k = 0; k < 5; ++k)
      b.call(kTrainer, kTrainer, "cudaLaunchKernel", t + 0.05 * k, 5 * kUs);
    b.call(kTrainer, kTrainer, "cudaStreamSynchronize", t + 0.3,
           static_cast<int64_t>(sync_ms * kMs));
  }
}

// Loading weights (synchronous copies, no enqueue) for 3 s, the steps from +3 s to +9 s, then a
// checkpoint's device-to-host copies until +11.5 s, and the process exits at +11.6 s. `whole`
// false: the trace was attached after it started, and stopped before it exited.
RowsBuilder phased_job(bool whole = true) {
  RowsBuilder b(12'000);
  b.process(kTrainer, "python3");
  if (!whole) b.started_before(kTrainer);
  b.call(kTrainer, kTrainer, "cudaMalloc", 50, 200 * kUs);
  for (double t = 100; t < 3'000; t += 500)
    b.call(kTrainer, kTrainer, "cudaMemcpy", t, 2 * kMs, 64 << 20, 1, 0x10000, 0x7f0000001000);
  train(b, 3'000, 9'000, 10, 9);
  for (double t = 9'500; t <= 11'500; t += 500)
    b.call(kTrainer, kTrainer, "cudaMemcpy", t, 3 * kMs, 64 << 20, 2, 0x7f0000001000, 0x10000);
  if (whole) b.exited(kTrainer, 11'600);
  return b;
}

const Chain* find(const Report& r, std::string_view kind) {
  for (const Chain& c : r.chains)
    if (c.kind == kind) return &c;
  return nullptr;
}

int64_t metric(const Chain& c, std::string_view name) {
  for (const auto& [k, v] : c.metrics)
    if (k == name) return static_cast<int64_t>(v);
  return -1;
}

TEST(AnalysisPhases, StartUpAndTailOfAJobTracedWholeAreNamedLast) {
  const Report r = analyze(phased_job().build());
  ASSERT_EQ(r.phases.count(kTrainer), 1u);
  const ProcessPhases& p = r.phases.at(kTrainer);
  EXPECT_TRUE(p.start_up);
  EXPECT_TRUE(p.tail);
  // The steps begin with the first launch and end with the sync after the last one.
  EXPECT_EQ(p.steady_from, RowsBuilder::at(3'000));
  EXPECT_NEAR(static_cast<double>(p.steady_to - RowsBuilder::at(8'999.3)), 0, 1e3);
  const Chain* su = find(r, "start_up");
  const Chain* tail = find(r, "tail");
  ASSERT_NE(su, nullptr);
  ASSERT_NE(tail, nullptr);
  EXPECT_EQ(metric(*su, "steady_from_rel_ns"), 3'000 * kMs);
  EXPECT_EQ(tail->title, "GPU idle after the last step");
  EXPECT_EQ(tail->severity, Severity::Low);
  EXPECT_NE(tail->fix.find("--to 8.9"), std::string::npos) << tail->fix;
  // Both after the steady state's causes.
  ASSERT_GE(r.chains.size(), 2u);
  const std::string& a = r.chains[r.chains.size() - 2].kind;
  const std::string& z = r.chains.back().kind;
  EXPECT_TRUE((a == "start_up" && z == "tail") || (a == "tail" && z == "start_up")) << a << z;
}

// The same job, with the trace attached after it started and stopped before it ended: what lies
// outside its steps is the window's edge, not its start or end.
TEST(AnalysisPhases, NoPhasesForAJobRunningBeforeAndAfterTheTrace) {
  const Report r = analyze(phased_job(false).build());
  const ProcessPhases& p = r.phases.at(kTrainer);
  EXPECT_FALSE(p.start_up);
  EXPECT_FALSE(p.tail);
  EXPECT_EQ(find(r, "start_up"), nullptr);
  EXPECT_EQ(find(r, "tail"), nullptr);
}

// A job whose steps fill its span has no phases, exited or not: no start-up or tail under 5%.
TEST(AnalysisPhases, ShortEdgesAreNotPhases) {
  RowsBuilder b(10'000);
  b.process(kTrainer, "python3");
  train(b, 0, 10'000, 10, 9);
  b.exited(kTrainer, 10'000);
  const Report r = analyze(b.build());
  const ProcessPhases& p = r.phases.at(kTrainer);
  EXPECT_FALSE(p.start_up);
  EXPECT_FALSE(p.tail);
  EXPECT_NEAR(p.steady_rate, 500, 5);  // five launches every 10 ms
}

}  // namespace
}  // namespace gpuwhy::analysis
