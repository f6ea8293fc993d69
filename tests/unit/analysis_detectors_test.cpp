// SPDX-License-Identifier: Apache-2.0
// Each detector on a hand-built trace where the answer is planted: the right kind, the right
// culprit by name and id, a share of wall time close to what was planted, and nothing on a clean
// trace.
#include <gtest/gtest.h>

#include <set>

#include "analysis/explain.hpp"
#include "analysis_test_util.hpp"
#include "export/explain_render.hpp"

namespace gpuwhy::analysis {
namespace {

using testing::kMs;
using testing::kUs;
using testing::RowsBuilder;

constexpr uint32_t kTrainer = 100;

// A training loop on tid 100: every `step_ms`, five 5 µs launches 50 µs apart, then at +0.3 ms a
// sync of `sync_ms` (the GPU working through them). With sync_ms = step_ms - 0.35 the next step
// starts 50 µs after the sync returns: a healthy, GPU-bound loop.
void train(RowsBuilder& b, double from_ms, double to_ms, double step_ms, double sync_ms,
           uint32_t pid = kTrainer, uint32_t tid = kTrainer) {
  for (double t = from_ms; t + step_ms <= to_ms + 1e-9; t += step_ms) {
    for (int k = 0; k < 5; ++k) b.call(pid, tid, "cudaLaunchKernel", t + 0.05 * k, 5 * kUs);
    b.call(pid, tid, "cudaStreamSynchronize", t + 0.3, static_cast<int64_t>(sync_ms * kMs));
  }
}

const Chain* find(const Report& r, std::string_view kind) {
  for (const Chain& c : r.chains)
    if (c.kind == kind) return &c;
  return nullptr;
}

std::string kinds(const Report& r) {
  std::string s;
  for (const Chain& c : r.chains) s += c.kind + "(" + std::to_string(c.share()) + ") ";
  return s;
}

TEST(AnalysisDetectors, CleanTraceHasNoChainAndSaysSo) {
  RowsBuilder b;
  b.process(kTrainer, "trainer").thread(kTrainer, 107, "cuda-evt");
  train(b, 0, 10'000, 10, 9.65);
  // Asleep inside each sync until the runtime's event thread wakes it: how a sync waits.
  for (double t = 0; t < 10'000; t += 10)
    b.block(kTrainer, kTrainer, t + 0.4, 9 * kMs, kTrainer, 107, "cuda-evt");
  const Report r = analyze(b.build());
  EXPECT_TRUE(r.chains.empty()) << kinds(r);
  EXPECT_TRUE(r.clean);
  EXPECT_EQ(r.verdict.rfind("CLEAN", 0), 0u) << r.verdict;
  EXPECT_TRUE(r.caveats.empty());
  ASSERT_FALSE(r.stats.ops.empty());
  EXPECT_EQ(r.stats.ops[0].name, "cudaStreamSynchronize");
  EXPECT_EQ(r.stats.ops[0].dur.count, 1000u);
  ASSERT_EQ(r.stats.rates.size(), 1u);
  EXPECT_FALSE(r.stats.rates[0].drop.found);
}

TEST(AnalysisDetectors, CpuContentionNamesTheCoRunner) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  train(b, 0, 10'000, 10, 5.6);
  // cpu_hog takes the trainer's CPU for 4.05 ms of every 10 ms step, right after the sync.
  for (double t = 0; t < 10'000; t += 10)
    b.preempt(kTrainer, kTrainer, t + 5.9, 4050 * kUs, 4242, "cpu_hog");
  const Report r = analyze(b.build());
  ASSERT_FALSE(r.chains.empty());
  const Chain& c = r.chains.front();
  EXPECT_EQ(c.kind, "cpu_contention") << kinds(r);
  EXPECT_EQ(c.severity, Severity::High);
  ASSERT_TRUE(c.culprit.has_value());
  EXPECT_EQ(c.culprit->pid, 4242u);
  EXPECT_EQ(c.culprit->comm, "cpu_hog");
  EXPECT_EQ(c.thread.tid, kTrainer);
  EXPECT_NEAR(c.share(), 0.405, 0.01);
  EXPECT_EQ(r.chains.size(), 1u) << kinds(r);
  EXPECT_NE(c.fix.find("for t in /proc/4242/task/*; do renice -n 19"), std::string::npos) << c.fix;
  EXPECT_FALSE(r.clean);
  EXPECT_EQ(r.verdict.rfind("HIGH: CPU contention", 0), 0u) << r.verdict;
}

// A trainer that is never preempted by the co-runner, only kept waiting after each wake-up while
// the co-runner holds the CPU; a bystander preempts it briefly on the same CPU. The recorded
// holder is the culprit, not the bystander (the guess for pre-ABI-2 traces named the bystander).
RowsBuilder runq_bound_trainer(uint32_t holder_pid, std::string_view holder_comm) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  train(b, 0, 10'000, 10, 1);
  for (double t = 0; t < 10'000; t += 10) {
    // Asleep 1 ms after the sync, then 4 ms runnable behind the holder.
    b.block(kTrainer, kTrainer, t + 1.4, 5 * kMs, kTrainer, 107, "cuda-evt", 4 * kMs)
        .held_by(holder_pid, holder_pid, holder_comm);
  }
  for (double t = 0; t < 100; t += 10)
    b.preempt(kTrainer, kTrainer, t + 0.1, 3 * kUs, 50, "bystander");
  return b;
}

TEST(AnalysisDetectors, RunQueueWaitsAreBlamedOnTheTaskThatHeldTheCpu) {
  const Report r = analyze(runq_bound_trainer(4242, "cpu_hog").build());
  const Chain* c = find(r, "cpu_contention");
  ASSERT_NE(c, nullptr) << kinds(r);
  EXPECT_EQ(c, &r.chains.front()) << kinds(r);
  ASSERT_TRUE(c->culprit.has_value());
  EXPECT_EQ(c->culprit->pid, 4242u);
  EXPECT_EQ(c->culprit->comm, "cpu_hog");
  EXPECT_NEAR(c->share(), 0.4, 0.01);
  bool listed = false;
  for (const Evidence& e : c->evidence)
    listed |= e.text.starts_with("CPU taken by: cpu_hog (pid 4242) 4.00 s");
  EXPECT_TRUE(listed) << c->evidence.front().text;
}

TEST(AnalysisDetectors, RunQueueWaitsBehindAnIdleCpuBlameNobody) {
  // Held by the idle task: wake-up latency, nothing in the way; no contention to report.
  const Report r = analyze(runq_bound_trainer(0, "swapper/0").build());
  EXPECT_EQ(find(r, "cpu_contention"), nullptr) << kinds(r);
}

// The tracer's own threads (named gpuwhy-reader, gpuwhy-writer, …) are the price of the trace,
// not a co-runner to blame: listed apart, never the culprit.
TEST(AnalysisDetectors, TheTracersOwnThreadsAreNotACulprit) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  train(b, 0, 10'000, 10, 5.6);
  for (double t = 0; t < 10'000; t += 10) {
    b.preempt(kTrainer, kTrainer, t + 5.9, 3000 * kUs, 777, "gpuwhy-writer");
    b.preempt(kTrainer, kTrainer, t + 8.95, 1000 * kUs, 4242, "cpu_hog");
  }
  const Report r = analyze(b.build());
  const Chain* c = find(r, "cpu_contention");
  ASSERT_NE(c, nullptr) << kinds(r);
  ASSERT_TRUE(c->culprit.has_value());
  EXPECT_EQ(c->culprit->pid, 4242u);
  bool apart = false;
  for (const Evidence& e : c->evidence)
    apart |= e.text.starts_with("not counted") &&
             e.text.find("gpuwhy-writer (pid 777) (the tracer)") != std::string::npos;
  EXPECT_TRUE(apart);
}

TEST(AnalysisDetectors, PreemptionInsideCallsIsLinkedToSlowCalls) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  train(b, 0, 10'000, 10, 1);
  // One launch in a hundred is preempted for 2 ms inside the call.
  for (int i = 0; i < 1000; i += 10) {
    const double t = i * 10 + 0.05;
    b.rows().calls.erase(b.rows().calls.begin());  // keep counts honest: replace, don't add
    b.call(kTrainer, kTrainer, "cudaLaunchKernel", t, 2 * kMs + 5 * kUs);
    b.preempt(kTrainer, kTrainer, t + 0.002, 2 * kMs, 4242, "cpu_hog");
  }
  const Report r = analyze(b.build());
  const Chain* c = find(r, "cpu_contention");
  ASSERT_NE(c, nullptr) << kinds(r);
  bool linked = false;
  for (const Evidence& e : c->evidence)
    linked |= e.text.find("slowest cudaLaunchKernel calls") != std::string::npos &&
              e.text.find("preempted for more than half") != std::string::npos;
  EXPECT_TRUE(linked);
}

TEST(AnalysisDetectors, LockWaitNamesTheSiblingThread) {
  RowsBuilder b;
  b.process(kTrainer, "trainer")
      .thread(kTrainer, 105, "ckpt_writer")
      .thread(kTrainer, 107, "cuda-evt");
  train(b, 0, 10'000, 10, 5);
  for (double t = 0; t < 10'000; t += 10) {
    // Asleep inside the sync, woken by the runtime's own thread: expected, not blamed.
    b.block(kTrainer, kTrainer, t + 0.4, 4 * kMs, kTrainer, 107, "cuda-evt");
    // Between steps: a futex wait of 4.6 ms that ckpt_writer ends.
    b.block(kTrainer, kTrainer, t + 5.35, 4600 * kUs, kTrainer, 105, "ckpt_writer");
    b.syscall(kTrainer, kTrainer, 202, t + 5.35, 4600 * kUs);
    b.syscall(kTrainer, 105, 1, t + 5.3, 4 * kMs);  // the writer's write() meanwhile
  }
  const Report r = analyze(b.build());
  const Chain* c = find(r, "lock_wait");
  ASSERT_NE(c, nullptr) << kinds(r);
  EXPECT_EQ(c, &r.chains.front());
  ASSERT_TRUE(c->culprit.has_value());
  EXPECT_EQ(c->culprit->tid, 105u);
  EXPECT_EQ(c->culprit->comm, "ckpt_writer");
  EXPECT_NEAR(c->share(), 0.46, 0.01);
  EXPECT_EQ(c->severity, Severity::High);
  bool futex = false, write = false;
  for (const Evidence& e : c->evidence) {
    futex |= e.text.find("futex") != std::string::npos;
    write |= e.text.find("write") != std::string::npos;
  }
  EXPECT_TRUE(futex);
  EXPECT_TRUE(write);
}

// PyTorch's two dispatch threads: the main thread queues the forward pass and syncs, the autograd
// thread queues the backward pass while the main thread waits on a condition variable, then waits
// itself for the next one. Each wait is the other thread dispatching: no lock chain (before, every
// real PyTorch training trace's verdict was "blocked by a sibling thread"), and the main thread
// is not GPU-idle while the autograd thread's kernels are queued.
TEST(AnalysisDetectors, AutogradHandOverIsNotALock) {
  constexpr uint32_t kEngine = 1001;
  RowsBuilder b;
  b.process(kTrainer, "python3").thread(kTrainer, kEngine, "pt_autograd_0");
  for (double t = 0; t < 10'000; t += 10) {
    for (int k = 0; k < 5; ++k)
      b.call(kTrainer, kTrainer, "cudaLaunchKernel", t + 0.05 * k, 5 * kUs);  // forward
    // loss.backward(): the main thread sleeps from +0.4 to +6.4 ms; the engine wakes at +0.45
    // (woken by the main thread at the end of its previous wait) and queues the backward pass.
    b.block(kTrainer, kTrainer, t + 0.4, 6 * kMs, kTrainer, kEngine, "pt_autograd_0")
        .in_syscall(202);
    for (int k = 0; k < 10; ++k)
      b.call(kTrainer, kEngine, "cudaLaunchKernel", t + 0.5 + 0.5 * k, 5 * kUs);
    b.block(kTrainer, kEngine, t + 6.4, 4 * kMs, kTrainer, kTrainer, "python3").in_syscall(202);
    b.call(kTrainer, kTrainer, "cudaStreamSynchronize", t + 6.5, 3 * kMs);
  }
  const Report r = analyze(b.build());
  EXPECT_EQ(find(r, "lock_wait"), nullptr) << kinds(r);
  bool seen_main = false, seen_engine = false;
  for (const BudgetReport& br : r.budgets) {
    int64_t delegated = 0, delegated_idle = 0, lock = 0;
    for (const BudgetLine& l : br.lines) {
      if (l.bucket == Bucket::Delegated) delegated = l.ns, delegated_idle = l.idle_ns;
      if (l.bucket == Bucket::BlockedLock) lock = l.ns;
    }
    const double share = static_cast<double>(delegated) / static_cast<double>(br.span_ns);
    if (br.thread.tid == kTrainer) {
      seen_main = true;
      EXPECT_NEAR(share, 0.6, 0.02);  // 6 of every 10 ms
      EXPECT_EQ(lock, 0);
      // The backward pass is queued meanwhile: the process's queue is not empty.
      EXPECT_EQ(delegated_idle, 0);
    } else if (br.thread.tid == kEngine) {
      seen_engine = true;
      EXPECT_GT(share, 0.3);
    }
  }
  EXPECT_TRUE(seen_main && seen_engine);
}

// A program traced from its start: seconds without GPU work before its first step (importing,
// building the model) are start-up, a finding of its own that says where the steps begin,
// graded LOW and ranked after the steady state's.
TEST(AnalysisDetectors, GpuIdleAtStartUpIsNamedAsSuch) {
  RowsBuilder b(12'000);
  b.process(kTrainer, "python3");
  b.call(kTrainer, kTrainer, "cudaMalloc", 100, 200 * kUs);
  b.call(kTrainer, kTrainer, "cudaMemcpy", 101, 300 * kUs, 1 << 20, 1, 0x10000, 0x7f0000001000);
  train(b, 6'000, 10'000, 10, 9);  // steps from +6 s: the GPU busy 9 ms in 10
  const Report r = analyze(b.build());
  const Chain* c = find(r, "start_up");
  ASSERT_NE(c, nullptr) << kinds(r);
  EXPECT_EQ(c->title, "GPU idle during start-up");
  EXPECT_EQ(c->severity, Severity::Low);
  EXPECT_EQ(r.chains.back().kind, "start_up") << kinds(r);
  EXPECT_NE(c->fix.find("--from 6.0"), std::string::npos) << c->fix;
  bool said = false;
  for (const Evidence& e : c->evidence)
    said |= e.text.find("at start-up, before +6.000 s") != std::string::npos;
  EXPECT_TRUE(said);
}

// With both the runtime and the driver probed (as on every real CUDA host), each runtime call
// holds its own driver call. The operations table lists the outer calls and names the nested
// ones in a note, rather than the same time twice; --json counts them per operation.
TEST(AnalysisDetectors, DriverCallsInsideRuntimeCallsAreNotListedTwice) {
  RowsBuilder b;
  b.process(kTrainer, "python3");
  for (double t = 0; t < 1'000; t += 10) {
    b.call(kTrainer, kTrainer, "cudaLaunchKernel", t, 8 * kUs);
    b.call(kTrainer, kTrainer, "cuLaunchKernel", t + 0.001, 6 * kUs);
    b.call(kTrainer, kTrainer, "cudaStreamSynchronize", t + 0.1, 5 * kMs);
    b.call(kTrainer, kTrainer, "cuStreamSynchronize", t + 0.101, 4900 * kUs);
  }
  b.call(kTrainer, kTrainer, "cuLaunchKernel", 1'005, 6 * kUs);  // one direct driver launch
  const Report r = analyze(b.build());
  for (const OpStats& o : r.stats.ops) {
    if (o.name == "cuStreamSynchronize") EXPECT_EQ(o.nested, 100u);
    if (o.name == "cuLaunchKernel") EXPECT_EQ(o.nested, 100u);  // of 101
    if (o.name.starts_with("cuda")) EXPECT_EQ(o.nested, 0u);
  }
  const std::string text = render::explain_text(r);
  const std::string table = text.substr(text.find("top GPU operations"));
  EXPECT_NE(table.find("  cudaStreamSynchronize"), std::string::npos) << table;
  EXPECT_EQ(table.find("  cuStreamSynchronize "), std::string::npos) << table;
  EXPECT_NE(table.find("not listed, made inside the runtime's calls (their time is in those): "
                       "cuStreamSynchronize 100, cuLaunchKernel 100 of 101"),
            std::string::npos)
      << table;
}

// A loop of tiny kernels that never syncs: nothing the host did to the thread explains anything,
// and the report is clean; but the GPU may be waiting for the host, which the report says. A
// clean GPU-bound loop (its thread waits in syncs) gets no such line. Seen on a real H200:
// x.add_(1) in a Python loop read CLEAN.
TEST(AnalysisDetectors, ACleanLaunchBoundLoopSaysTheGpuMayWaitForTheHost) {
  auto hinted = [](const Report& r) {
    return std::any_of(r.caveats.begin(), r.caveats.end(),
                       [](const Caveat& c) { return c.kind == "host_bound"; });
  };
  RowsBuilder launch_bound;
  launch_bound.process(kTrainer, "python3");
  for (double t = 0; t < 1'000; t += 0.01)
    launch_bound.call(kTrainer, kTrainer, "cudaLaunchKernel", t, 6 * kUs);
  const Report r = analyze(launch_bound.build());
  EXPECT_TRUE(r.clean) << kinds(r);
  EXPECT_TRUE(hinted(r)) << "a launch-bound loop";

  RowsBuilder gpu_bound;
  gpu_bound.process(kTrainer, "python3");
  train(gpu_bound, 0, 10'000, 10, 9.5);
  const Report g = analyze(gpu_bound.build());
  EXPECT_TRUE(g.clean) << kinds(g);
  EXPECT_FALSE(hinted(g)) << "its thread waits for the GPU";
}

// One 10 ms step at t: five launches, then loss.item() (4 bytes back, waiting 6.5 ms for the
// kernels); what follows until the next step is host work.
void read_back_step(RowsBuilder& b, double t) {
  for (int k = 0; k < 5; ++k) b.call(kTrainer, kTrainer, "cudaLaunchKernel", t + 0.05 * k, 5 * kUs);
  b.call(kTrainer, kTrainer, "cudaMemcpy", t + 0.3, 6500 * kUs, 4, 2, 0x7f0000001000, 0x10000);
}

TEST(AnalysisDetectors, HiddenSyncFromScalarReadBacks) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  for (double t = 0; t < 10'000; t += 10) read_back_step(b, t);  // then 3 ms of host work
  const Report r = analyze(b.build());
  ASSERT_FALSE(r.chains.empty());
  const Chain& c = r.chains.front();
  EXPECT_EQ(c.kind, "hidden_sync") << kinds(r);
  EXPECT_NEAR(c.share(), 0.32, 0.01);  // 3.2 ms of idle queue per 10 ms step
  EXPECT_NE(c.fix.find(".item()"), std::string::npos);
  EXPECT_EQ(find(r, "transfer_bound"), nullptr) << "a 4-byte read-back is a sync, not a transfer";
}

// loss.item() then torch.cuda.synchronize() in every step, nothing launched between them: two
// syncs per step are still the step loop's. The rule once asked for launches between most
// consecutive syncs, which this pattern never meets (one pair in two has them), and which two
// syncs per step with launches between only some of them sat exactly on.
TEST(AnalysisDetectors, TwoSyncsPerStepAreStillHiddenSyncs) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  for (double t = 0; t < 10'000; t += 10) {
    read_back_step(b, t);
    b.call(kTrainer, kTrainer, "cudaStreamSynchronize", t + 8, 20 * kUs);
  }
  const Report r = analyze(b.build());
  const Chain* c = find(r, "hidden_sync");
  ASSERT_NE(c, nullptr) << kinds(r);
  EXPECT_GT(c->share(), 0.15) << "the host work after each read-back";
}

// With stacks, the read-backs' evidence says where they are called from, most calls first; a
// call without a stack counts in the total only.
TEST(AnalysisDetectors, HiddenSyncNamesItsCallSites) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  int step = 0;
  for (double t = 0; t < 10'000; t += 10, ++step) {
    for (int k = 0; k < 5; ++k)
      b.call(kTrainer, kTrainer, "cudaLaunchKernel", t + 0.05 * k, 5 * kUs);
    b.call(kTrainer, kTrainer, "cudaMemcpy", t + 0.3, 6500 * kUs, 4, 2, 0x7f0000001000, 0x10000);
    CallRow& c = b.rows().calls.back();
    CallExt e = b.rows().ext(c);
    e.stack_id = step % 4 == 0 ? 7 : (step % 4 == 1 ? -1 : 3);  // 500 at 3, 250 at 7, 250 none
    b.rows().set_ext(c, e);
  }
  b.rows().call_sites = {{3, "train_step+0x2f2 in trainer"}, {7, "log_metrics+0x10 in trainer"}};
  const Report r = analyze(b.build());
  const Chain* c = find(r, "hidden_sync");
  ASSERT_NE(c, nullptr) << kinds(r);
  bool found = false;
  for (const Evidence& e : c->evidence) {
    if (!e.text.starts_with("called from: ")) continue;
    found = true;
    EXPECT_EQ(e.text,
              "called from: train_step+0x2f2 in trainer (500 of 1,000), "
              "log_metrics+0x10 in trainer (250 of 1,000)");
  }
  EXPECT_TRUE(found);
}

TEST(AnalysisDetectors, OneSyncPerLongStepIsNotFlagged) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  // GPU-bound: the host re-launches 20 µs after each sync returns.
  for (double t = 0; t < 10'000; t += 100) {
    for (int k = 0; k < 5; ++k)
      b.call(kTrainer, kTrainer, "cudaLaunchKernel", t + 0.02 + 0.01 * k, 5 * kUs);
    b.call(kTrainer, kTrainer, "cudaStreamSynchronize", t + 0.1, 99'880 * kUs);
  }
  const Report r = analyze(b.build());
  EXPECT_EQ(find(r, "hidden_sync"), nullptr) << kinds(r);
}

TEST(AnalysisDetectors, TransferBoundWithPageableMemory) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  for (double t = 0; t < 10'000; t += 10) {
    b.call(kTrainer, kTrainer, "cudaMemcpy", t, 6 * kMs, 64ull << 20, 1, 0x10000, 0x7f0000000000);
    for (int k = 0; k < 5; ++k)
      b.call(kTrainer, kTrainer, "cudaLaunchKernel", t + 6.1 + 0.05 * k, 5 * kUs);
    b.call(kTrainer, kTrainer, "cudaStreamSynchronize", t + 6.5, 3 * kMs);
  }
  const Report r = analyze(b.build());
  const Chain* c = find(r, "transfer_bound");
  ASSERT_NE(c, nullptr) << kinds(r);
  EXPECT_EQ(c, &r.chains.front());
  // 6 ms of every 10 copying 64 MiB from pageable memory; from pinned memory the same bytes
  // would still take 64 MiB / 25 GB/s = 2.68 ms: what pinning saves is the rest.
  EXPECT_NEAR(c->share(), (6.0 - 64.0 * 1048576 / 25e9 * 1e3) / 10, 0.01);
  EXPECT_NE(c->title.find("pageable"), std::string::npos);
  EXPECT_NE(c->fix.find("pin_memory=True"), std::string::npos);
}

TEST(AnalysisDetectors, PinnedBuffersAreRecognised) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  b.call(kTrainer, kTrainer, "cudaMallocHost", 0, 1 * kMs, 128ull << 20, -1, 0x7f0000000000);
  for (double t = 10; t < 10'000; t += 10) {
    b.call(kTrainer, kTrainer, "cudaMemcpy", t, 6 * kMs, 64ull << 20, 1, 0x10000, 0x7f0000000000);
    b.call(kTrainer, kTrainer, "cudaLaunchKernel", t + 6.1, 5 * kUs);
    b.call(kTrainer, kTrainer, "cudaStreamSynchronize", t + 6.5, 3 * kMs);
  }
  const Report r = analyze(b.build());
  const Chain* c = find(r, "transfer_bound");
  ASSERT_NE(c, nullptr) << kinds(r);
  EXPECT_EQ(c->title.find("pageable"), std::string::npos) << c->title;
  EXPECT_NE(c->fix.find("overlap copies"), std::string::npos);
}

TEST(AnalysisDetectors, AllocatorChurnInsideTheLoop) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  for (double t = 0; t < 10'000; t += 10) {
    b.call(kTrainer, kTrainer, "cudaMalloc", t, 2 * kMs, 64ull << 20, -1, 0x100000);
    for (int k = 0; k < 5; ++k)
      b.call(kTrainer, kTrainer, "cudaLaunchKernel", t + 2.1 + 0.05 * k, 5 * kUs);
    b.call(kTrainer, kTrainer, "cudaStreamSynchronize", t + 2.5, 5 * kMs);
    b.call(kTrainer, kTrainer, "cudaFree", t + 7.6, 1 * kMs, 0, -1, 0x100000);
  }
  const Report r = analyze(b.build());
  const Chain* c = find(r, "alloc_churn");
  ASSERT_NE(c, nullptr) << kinds(r);
  EXPECT_NEAR(c->share(), 0.30, 0.01);
  EXPECT_NE(c->fix.find("empty_cache"), std::string::npos);
}

TEST(AnalysisDetectors, StartUpAllocationsAreNotChurn) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  for (int i = 0; i < 50; ++i) b.call(kTrainer, kTrainer, "cudaMalloc", i * 2, 1 * kMs, 1 << 20);
  train(b, 100, 10'000, 10, 9.65);
  const Report r = analyze(b.build());
  EXPECT_EQ(find(r, "alloc_churn"), nullptr) << kinds(r);
}

TEST(AnalysisDetectors, RateDropAttributedToTheNewCoRunner) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  train(b, 0, 5'000, 5, 4.65);
  // From +5 s, stress (pid 777) takes 5 ms of every step: steps now take 10 ms.
  train(b, 5'000, 10'000, 10, 4.65);
  for (double t = 5'000; t < 10'000; t += 10)
    b.preempt(kTrainer, kTrainer, t + 4.95, 5 * kMs, 777, "stress");
  const Report r = analyze(b.build());
  const Chain* c = find(r, "rate_drop");
  ASSERT_NE(c, nullptr) << kinds(r);
  ASSERT_TRUE(c->culprit.has_value());
  EXPECT_EQ(c->culprit->comm, "stress");
  EXPECT_EQ(c->culprit->pid, 777u);
  EXPECT_NEAR(static_cast<double>(c->first_ns) / 1e9, 5.0, 0.5);
  EXPECT_NEAR(c->share(), 0.25, 0.03);  // half the rate over the second half
  ASSERT_EQ(r.stats.rates.size(), 1u);
  EXPECT_NEAR(r.stats.rates[0].drop.drop(), 0.5, 0.05);
  // The contention is the cause, the drop its symptom: the cause leads whatever the estimates.
  const Chain* cause = find(r, "cpu_contention");
  ASSERT_NE(cause, nullptr);
  EXPECT_LT(cause, c) << kinds(r);
}

// A rate drop and the lock behind it are one cause seen from two sides, their estimates within
// a few percent of each other: the lock leads even when the drop's estimate is larger. A drop
// blamed on someone else keeps its place.
TEST(AnalysisDetectors, ACauseLeadsTheRateDropItExplains) {
  auto chain = [](std::string kind, int64_t lost_ms, uint32_t culprit_tid) {
    Chain c;
    c.kind = std::move(kind);
    c.process = {kTrainer, 0, "trainer"};
    c.thread = {kTrainer, kTrainer, "trainer"};
    c.culprit = Task{kTrainer, culprit_tid, "ckpt-writer"};
    c.lost_ns = lost_ms * kMs;
    c.span_ns = 317 * kMs;
    return c;
  };
  const Thresholds th;
  std::vector<Chain> ranked =
      rank_chains({chain("lock_wait", 110, 1005), chain("rate_drop", 115, 1005)}, th);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].kind, "lock_wait");
  EXPECT_EQ(ranked[1].kind, "rate_drop");
  ranked = rank_chains({chain("lock_wait", 110, 1005), chain("rate_drop", 115, 1006)}, th);
  EXPECT_EQ(ranked[0].kind, "rate_drop") << "another culprit: ranked by time lost";
}

TEST(AnalysisDetectors, IoStallOnTheDispatchThread) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  train(b, 0, 10'000, 10, 6.65);
  for (double t = 0; t < 10'000; t += 10) {
    b.syscall(kTrainer, kTrainer, 1, t + 6.95, 2 * kMs);   // write
    b.syscall(kTrainer, kTrainer, 74, t + 8.95, 1 * kMs);  // fsync
    b.block_io(kTrainer, kTrainer, t + 8.95, 900 * kUs, 1 << 20);
  }
  const Report r = analyze(b.build());
  const Chain* c = find(r, "io_stall");
  ASSERT_NE(c, nullptr) << kinds(r);
  EXPECT_NEAR(c->share(), 0.30, 0.01);
  EXPECT_NE(c->evidence[0].text.find("write"), std::string::npos);
  EXPECT_NE(c->evidence[1].text.find("block I/O"), std::string::npos);
}

TEST(AnalysisDetectors, DirectReclaimStalls) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  train(b, 0, 10'000, 10, 8.15);
  for (double t = 0; t < 10'000; t += 10) b.reclaim(kTrainer, kTrainer, t + 8.45, 1500 * kUs, 256);
  const Report r = analyze(b.build());
  const Chain* c = find(r, "memory_reclaim");
  ASSERT_NE(c, nullptr) << kinds(r);
  EXPECT_NEAR(c->share(), 0.15, 0.01);
  EXPECT_EQ(c->severity, Severity::Medium);
}

// Two ranks doing an all-reduce every 20 ms; rank 301 always arrives `late_ms` after rank 300.
void ranks(RowsBuilder& b, double late_ms) {
  b.process(300, "rank0").process(301, "rank1");
  for (double t = 0; t < 10'000; t += 20) {
    for (uint32_t pid : {300u, 301u}) {
      const double arrive = t + 1 + (pid == 301 ? late_ms : 0);
      const double done = t + 2 + late_ms;
      b.call(pid, pid, "cudaLaunchKernel", t, 5 * kUs);
      b.call(pid, pid, "ncclAllReduce", arrive, static_cast<int64_t>((done - arrive) * kMs),
             1 << 20);
    }
  }
}

TEST(AnalysisDetectors, NcclStragglerIsTheRankThatArrivesLast) {
  RowsBuilder b;
  ranks(b, 5);
  for (double t = 0; t < 10'000; t += 20) b.preempt(301, 301, t + 0.5, 5 * kMs, 4242, "cpu_hog");
  const Report r = analyze(b.build());
  const Chain* c = find(r, "nccl_straggler");
  ASSERT_NE(c, nullptr) << kinds(r);
  ASSERT_TRUE(c->culprit.has_value());
  EXPECT_EQ(c->culprit->pid, 301u);
  EXPECT_EQ(c->process.pid, 300u);
  EXPECT_NEAR(c->share(), 0.25, 0.01);  // rank0 waits 5 ms of every 20
  EXPECT_NE(c->fix.find("cpu_hog"), std::string::npos) << c->fix;
}

TEST(AnalysisDetectors, StragglerFoundByWhoWakesTheBarrier) {
  // As NCCL over a shared-memory barrier: all ranks enter the call together, the straggler
  // sleeps inside it first, the others sleep in the barrier until its arrival wakes them.
  RowsBuilder b;
  b.process(300, "rank0").process(301, "rank1").process(302, "rank2");
  for (double t = 0; t < 10'000; t += 20) {
    for (uint32_t pid : {300u, 301u, 302u}) {
      b.call(pid, pid, "cudaLaunchKernel", t, 5 * kUs);
      b.call(pid, pid, "ncclAllReduce", t + 1, 6 * kMs, 1 << 20);
    }
    b.block(302, 302, t + 1.01, 5 * kMs, 0, 0, "swapper/2");  // the straggler's own delay
    b.block(300, 300, t + 1.02, 5 * kMs - 10 * kUs, 302, 302, "rank2");
    b.block(301, 301, t + 1.02, 5 * kMs - 10 * kUs, 302, 302, "rank2");
  }
  const Report r = analyze(b.build());
  const Chain* c = find(r, "nccl_straggler");
  ASSERT_NE(c, nullptr) << kinds(r);
  ASSERT_TRUE(c->culprit.has_value());
  EXPECT_EQ(c->culprit->pid, 302u);
  EXPECT_NEAR(c->share(), 0.25, 0.01);
  EXPECT_EQ(find(r, "lock_wait"), nullptr) << "other processes waking a rank is not a lock";
}

TEST(AnalysisDetectors, BalancedRanksHaveNoStraggler) {
  RowsBuilder b;
  ranks(b, 0.02);
  const Report r = analyze(b.build());
  EXPECT_EQ(find(r, "nccl_straggler"), nullptr) << kinds(r);
}

TEST(AnalysisDetectors, TcpRetransmitsDuringCollectives) {
  RowsBuilder b;
  b.process(300, "rank0");
  for (double t = 0; t < 10'000; t += 20) {
    b.call(300, 300, "cudaLaunchKernel", t, 5 * kUs);
    const bool hit = static_cast<int>(t) % 200 == 0;  // one in ten waits out a 200 ms RTO
    b.call(300, 300, "ncclAllReduce", t + 1, (hit ? 12 : 2) * kMs, 1 << 20);
    if (hit) b.retransmit(t + 3, "10.0.0.2", 5000);
  }
  b.retransmit(15, "10.0.0.9", 22);  // outside any collective
  const Report r = analyze(b.build());
  const Chain* c = find(r, "tcp_retransmits");
  ASSERT_NE(c, nullptr) << kinds(r);
  EXPECT_NEAR(c->share(), 0.05, 0.005);  // 10 ms extra on 50 of 500 collectives over 10 s
  EXPECT_NE(c->evidence[0].text.find("10.0.0.2:5000"), std::string::npos);
}

TEST(AnalysisDetectors, ChainsAreRankedAndSmallOnesDropped) {
  Thresholds th;
  std::vector<Chain> v(3);
  v[0].kind = "a";
  v[0].lost_ns = 2 * kMs;
  v[0].span_ns = 1000 * kMs;  // 0.2%: dropped
  v[1].kind = "b";
  v[1].lost_ns = 100 * kMs;
  v[1].span_ns = 1000 * kMs;
  v[2].kind = "c";
  v[2].lost_ns = 300 * kMs;
  v[2].span_ns = 1000 * kMs;
  const std::vector<Chain> ranked = rank_chains(v, th);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].kind, "c");
  EXPECT_EQ(ranked[0].severity, Severity::High);
  EXPECT_EQ(ranked[1].severity, Severity::Medium);
  EXPECT_EQ(grade(0.019, th), Severity::Low);
}

TEST(AnalysisDetectors, LossesAndIncompleteTracesAreCaveats) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  train(b, 0, 1'000, 10, 9.65);
  b.loss("bpf", "ringbuf_full", 1200).loss("reader", "queue_full", 34);
  b.rows().session.status = "recording";
  const Report r = analyze(b.build());
  ASSERT_GE(r.caveats.size(), 3u);
  EXPECT_EQ(r.caveats[0].kind, "lost_events");
  EXPECT_NE(r.caveats[0].text.find("1,234 events"), std::string::npos);
  EXPECT_EQ(r.caveats[1].kind, "incomplete");
  EXPECT_EQ(r.caveats[2].kind, "no_sched");
}

TEST(AnalysisDetectors, ProbeFamiliesThatWereNotOnAreCaveats) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  train(b, 0, 1'000, 10, 9.65);
  b.rows().families_off = {{"block_io", "failed", "cannot attach gw_block_issue: EINVAL"},
                           {"tcp", "off", "left out (--without)"}};
  const Report r = analyze(b.build());
  std::vector<std::string> texts;
  for (const Caveat& c : r.caveats)
    if (c.kind.starts_with("family_")) texts.push_back(c.kind + ": " + c.text);
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_NE(texts[0].find("family_failed: no block I/O"), std::string::npos) << texts[0];
  EXPECT_NE(texts[0].find("EINVAL"), std::string::npos) << texts[0];
  EXPECT_NE(texts[1].find("family_off: no TCP retransmissions"), std::string::npos) << texts[1];
  EXPECT_NE(texts[1].find("left out (--without)"), std::string::npos) << texts[1];
}

// The dispatch thread sleeps in write and fsync; the trace has no syscall family (the default),
// only off-CPU intervals that name the syscall each sleep began in. explain must reach the same
// I/O verdict as from syscall rows, and say how it saw them.
TEST(AnalysisDetectors, IoStallFromTheSyscallsThreadsSleptIn) {
  auto build = [](int64_t abi) {
    RowsBuilder b;
    b.rows().session.abi_version = abi;
    b.rows().families_off = {{"syscalls", "off", "off by default (--with syscalls)"}};
    b.process(kTrainer, "trainer");
    train(b, 0, 10'000, 10, 6.65);
    for (double t = 0; t < 10'000; t += 10) {
      b.block(kTrainer, kTrainer, t + 6.95, 2 * kMs, 0, 0, "").in_syscall(1);   // write
      b.block(kTrainer, kTrainer, t + 8.95, 1 * kMs, 0, 0, "").in_syscall(74);  // fsync
      b.block(kTrainer, kTrainer, t + 9.96, 20 * kUs, 0, 0, "").in_syscall(0);  // a short read
    }
    return analyze(b.build());
  };
  const Report r = build(3);
  const Chain* c = find(r, "io_stall");
  ASSERT_NE(c, nullptr) << kinds(r);
  EXPECT_NEAR(c->share(), 0.30, 0.01);
  EXPECT_NE(c->evidence[0].text.find("1,998 slow I/O syscalls"), std::string::npos)
      << c->evidence[0].text;  // the last step ends past the span; not the 20 us reads
  EXPECT_NE(c->evidence[0].text.find("write"), std::string::npos);
  EXPECT_NE(c->evidence[0].text.find("fsync"), std::string::npos);
  bool said = false;
  for (const Caveat& cv : r.caveats) {
    said = said || cv.kind == "syscalls_from_scheduler";
    EXPECT_FALSE(cv.kind.starts_with("family_")) << cv.text;
  }
  EXPECT_TRUE(said);
  // A trace from before ABI 3 never recorded the syscall: nothing is made up.
  const Report old = build(2);
  EXPECT_EQ(find(old, "io_stall"), nullptr) << kinds(old);
}

// The reads sleep until a separate loader process writes the pipe: the step waits for its
// producer, which the chain names as the culprit (a disk's completions would not be).
TEST(AnalysisDetectors, IoStallNamesTheProducerAtTheOtherEndOfAPipe) {
  auto build = [](std::string_view waker) {
    RowsBuilder b;
    b.rows().session.abi_version = 3;
    b.rows().families_off = {{"syscalls", "off", "off by default (--with syscalls)"}};
    b.process(kTrainer, "trainer");
    train(b, 0, 10'000, 10, 6.65);
    for (double t = 0; t < 10'000; t += 10)
      b.block(kTrainer, kTrainer, t + 6.95, 3 * kMs, 4242, 4242, waker).in_syscall(0);  // read
    return analyze(b.build());
  };
  const Report r = build("loader");
  const Chain* c = find(r, "io_stall");
  ASSERT_NE(c, nullptr) << kinds(r);
  ASSERT_TRUE(c->culprit.has_value());
  EXPECT_EQ(c->culprit->pid, 4242u);
  EXPECT_EQ(c->culprit->comm, "loader");
  EXPECT_NE(c->fix.find("loader (pid 4242)"), std::string::npos) << c->fix;
  bool named = false;
  for (const Evidence& e : c->evidence) named = named || e.text.starts_with("woken by: loader");
  EXPECT_TRUE(named);
  const Report disk = build("kworker/u4:2");
  const Chain* d = find(disk, "io_stall");
  ASSERT_NE(d, nullptr) << kinds(disk);
  EXPECT_FALSE(d->culprit.has_value());
}

// Page-cache writes run on the CPU: without the syscall family only the CPU samples see them.
// Consecutive samples in one syscall become one stretch, cut where the thread next sleeps, and
// joined by a sleep in the same syscall right after.
TEST(AnalysisDetectors, IoStallFromCpuSamplesInASyscall) {
  RowsBuilder b;
  b.rows().session.abi_version = 3;
  b.rows().families_off = {{"syscalls", "off", "off by default (--with syscalls)"}};
  b.process(kTrainer, "trainer");
  train(b, 0, 10'000, 100, 60);
  constexpr int64_t kPeriod = 5 * kMs;
  for (double t = 0; t < 10'000; t += 100) {
    for (int k = 0; k < 6; ++k) b.sample(kTrainer, kTrainer, t + 60.5 + 5 * k, kPeriod, 18);
    b.block(kTrainer, kTrainer, t + 89, 4 * kMs, 0, 0, "").in_syscall(18);  // throttled
    b.sample(kTrainer, kTrainer, t + 20, kPeriod, -1);  // user code: not a syscall
  }
  b.rows().syscall_names[18] = "pwrite64";
  TraceRows prepared = b.rows();
  prepare_rows(prepared);
  ASSERT_EQ(prepared.syscalls.size(), 100u) << "one stretch per save";
  const SyscallRow& s = prepared.syscalls.front();
  EXPECT_EQ(s.nr, 18u);
  EXPECT_EQ(s.ts, testing::kT0 + 60'500'000);
  EXPECT_EQ(s.end(), testing::kT0 + 93'000'000);  // the samples to 89 ms, then the sleep to 93 ms
  const Report r = analyze(b.build());
  const Chain* c = find(r, "io_stall");
  ASSERT_NE(c, nullptr) << kinds(r);
  EXPECT_NE(c->evidence[0].text.find("pwrite64"), std::string::npos) << c->evidence[0].text;
}

// With the syscall family on, its own rows are the syscalls: the intervals' names add none.
TEST(AnalysisDetectors, SyscallRowsAreNotDoubledWhenTheFamilyWasOn) {
  RowsBuilder b;
  b.rows().session.abi_version = 3;
  b.process(kTrainer, "trainer");
  train(b, 0, 1'000, 10, 6.65);
  for (double t = 0; t < 1'000; t += 10) {
    b.syscall(kTrainer, kTrainer, 74, t + 6.95, 3 * kMs);
    b.block(kTrainer, kTrainer, t + 6.96, 2900 * kUs, 0, 0, "").in_syscall(74);
  }
  const Report r = analyze(b.build());
  const Chain* c = find(r, "io_stall");
  ASSERT_NE(c, nullptr) << kinds(r);
  EXPECT_NE(c->evidence[0].text.find("99 slow I/O syscalls"), std::string::npos)
      << c->evidence[0].text;
}

// trace --entry-only CATEGORY is stored as the family "returns:CATEGORY": its calls have no
// durations, which the report must say rather than present as zero-length calls.
TEST(AnalysisDetectors, EntryOnlyCategoriesAreCaveats) {
  RowsBuilder b;
  b.process(kTrainer, "trainer");
  train(b, 0, 1'000, 10, 9.65);
  b.rows().families_off = {{"returns:launch", "off", "trace --entry-only"}};
  const Report r = analyze(b.build());
  std::vector<std::string> texts;
  for (const Caveat& c : r.caveats)
    if (c.kind == "entry_only" || c.kind.starts_with("family_"))
      texts.push_back(c.kind + ": " + c.text);
  ASSERT_EQ(texts.size(), 1u);
  EXPECT_NE(texts[0].find("entry_only: launch calls were recorded at entry only"),
            std::string::npos)
      << texts[0];
  EXPECT_NE(texts[0].find("no duration"), std::string::npos) << texts[0];
  // The operation table counts them but shows no durations; syncs keep theirs.
  int seen = 0;
  for (const OpStats& o : r.stats.ops) {
    EXPECT_EQ(o.entry_only, o.name == "cudaLaunchKernel") << o.name;
    seen += o.name == "cudaLaunchKernel" || o.name == "cudaStreamSynchronize";
  }
  EXPECT_EQ(seen, 2);
  const std::string text = render::explain_text(r);
  EXPECT_NE(text.find("entry only"), std::string::npos) << text;
  const auto json = render::explain_json(r);
  bool launch_json = false;
  for (const auto& op : json["stats"]["ops"]) {
    if (op["name"] != "cudaLaunchKernel") continue;
    launch_json = true;
    EXPECT_TRUE(op["entry_only"].get<bool>());
    EXPECT_TRUE(op["p50_ns"].is_null());
  }
  EXPECT_TRUE(launch_json) << json.dump();
}

TEST(AnalysisDetectors, RegistryListsEveryDetectorOnce) {
  std::set<std::string_view> kinds;
  for (const Detector& d : detectors()) {
    EXPECT_TRUE(kinds.insert(d.kind).second) << d.kind;
    EXPECT_NE(d.run, nullptr);
  }
  EXPECT_EQ(kinds.size(), 14u);
}

}  // namespace
}  // namespace gpuwhy::analysis
