// SPDX-License-Identifier: Apache-2.0
// The Python lines of a culprit thread (from its CPU samples' Python stacks) in a chain's
// evidence, and the count of a Python process's calls made before its layout was known.
#include <gtest/gtest.h>

#include "analysis/explain.hpp"
#include "analysis_test_util.hpp"

namespace gpuwhy::analysis {
namespace {

using testing::kMs;
using testing::kUs;
using testing::RowsBuilder;

constexpr uint32_t kTrainer = 100, kWriter = 105;

// The lock_wait scene of analysis_detectors_test: the trainer sleeps in a futex between steps
// until ckpt_writer (tid 105) wakes it; ckpt_writer's samples carry Python stacks.
RowsBuilder lock_scene() {
  RowsBuilder b;
  b.process(kTrainer, "trainer").thread(kTrainer, kWriter, "ckpt_writer");
  for (double t = 0; t < 10'000; t += 10) {
    for (int k = 0; k < 5; ++k)
      b.call(kTrainer, kTrainer, "cudaLaunchKernel", t + 0.05 * k, 5 * kUs);
    b.call(kTrainer, kTrainer, "cudaStreamSynchronize", t + 0.3, 5 * kMs);
    b.block(kTrainer, kTrainer, t + 5.35, 4600 * kUs, kTrainer, kWriter, "ckpt_writer");
    b.syscall(kTrainer, kTrainer, 202, t + 5.35, 4600 * kUs);
  }
  return b;
}

TEST(AnalysisPythonCulprit, LockHolderNamedWithItsTopPythonLines) {
  RowsBuilder b = lock_scene();
  TraceRows& rows = b.rows();
  rows.python_sites[7] = {"ckpt.py", "save", 41, "blob = pickle.dumps(state)"};
  rows.python_sites[8] = {"ckpt.py", "save", 42, "f.write(blob)"};
  // 100 samples of the writer: 80 on line 41, 15 on line 42, 5 without a Python stack; and
  // samples of the trainer itself, which must not count.
  for (int i = 0; i < 100; ++i) {
    b.sample(kTrainer, kWriter, 6 + 100.0 * i, 5 * kMs, -1);
    rows.cpu_samples.back().pystack_id = i < 80 ? 7 : i < 95 ? 8 : -1;
    b.sample(kTrainer, kTrainer, 1 + 100.0 * i, 5 * kMs, -1);
    rows.cpu_samples.back().pystack_id = 8;
  }
  const Report r = analyze(b.build());
  const Chain* lock = nullptr;
  for (const Chain& c : r.chains)
    if (c.kind == "lock_wait") lock = &c;
  ASSERT_NE(lock, nullptr);
  ASSERT_TRUE(lock->culprit.has_value());
  ASSERT_EQ(lock->culprit->tid, kWriter);
  std::string line;
  for (const Evidence& e : lock->evidence)
    if (e.text.find("was on the CPU in") != std::string::npos) line = e.text;
  EXPECT_EQ(line,
            "ckpt_writer (tid 105) was on the CPU in ckpt.py:41 in save: blob = "
            "pickle.dumps(state) (80.0% of its 100 samples), then ckpt.py:42 in save: "
            "f.write(blob) (15.0%)");
}

// A producer that is another process, making no GPU call (a multiprocessing DataLoader worker):
// the loader keeps its CPU samples apart (worker_samples), and the io_stall chain that names it
// as culprit names its Python line from them.
TEST(AnalysisPythonCulprit, WorkerProcessNamedWithItsPythonLine) {
  constexpr uint32_t kWorker = 4242;
  RowsBuilder b;
  b.rows().session.abi_version = 3;
  b.rows().families_off = {{"syscalls", "off", "off by default (--with syscalls)"}};
  b.process(kTrainer, "trainer").process(kWorker, "python3");
  for (double t = 0; t < 10'000; t += 10) {
    for (int k = 0; k < 5; ++k)
      b.call(kTrainer, kTrainer, "cudaLaunchKernel", t + 0.05 * k, 5 * kUs);
    b.call(kTrainer, kTrainer, "cudaStreamSynchronize", t + 0.3, 6650 * kUs);
    b.block(kTrainer, kTrainer, t + 6.95, 3 * kMs, kWorker, kWorker, "python3").in_syscall(0);
  }
  TraceRows& rows = b.rows();
  rows.python_sites[7] = {"mp_loader.py", "produce", 22, "digest = hashlib.sha256(RAW).digest()"};
  // 40 samples of the worker, 30 on the line; none of them in cpu_samples.
  for (int i = 0; i < 40; ++i) {
    b.sample(kWorker, kWorker, 7 + 200.0 * i, 5 * kMs, -1);
    rows.cpu_samples.back().pystack_id = i < 30 ? 7 : -1;
  }
  rows.worker_samples = std::move(rows.cpu_samples);
  rows.cpu_samples.clear();
  const Report r = analyze(b.build());
  const Chain* io = nullptr;
  for (const Chain& c : r.chains)
    if (c.kind == "io_stall") io = &c;
  ASSERT_NE(io, nullptr);
  ASSERT_TRUE(io->culprit.has_value());
  ASSERT_EQ(io->culprit->pid, kWorker);
  std::string line;
  for (const Evidence& e : io->evidence)
    if (e.text.find("was on the CPU in") != std::string::npos) line = e.text;
  EXPECT_EQ(line,
            "python3 (pid 4242) was on the CPU in mp_loader.py:22 in produce: digest = "
            "hashlib.sha256(RAW).digest() (75.0% of its 40 samples)");
}

TEST(AnalysisPythonCulprit, NoLineWithoutPythonSamples) {
  RowsBuilder b = lock_scene();
  for (int i = 0; i < 100; ++i) b.sample(kTrainer, kWriter, 6 + 100.0 * i, 5 * kMs, -1);
  const Report r = analyze(b.build());
  for (const Chain& c : r.chains)
    for (const Evidence& e : c.evidence)
      EXPECT_EQ(e.text.find("was on the CPU in"), std::string::npos) << e.text;
}

// Calls without a Python stack that began before the layout count; those after it, those with a
// stack and those of other processes do not.
TEST(AnalysisPythonCulprit, CallsBeforeTheLayoutAreCounted) {
  RowsBuilder b;
  b.process(kTrainer, "trainer").process(200, "other");
  for (int i = 0; i < 10; ++i) b.call(kTrainer, kTrainer, "cudaMalloc", 1.0 * i, kUs);
  b.call(kTrainer, kTrainer, "cudaMalloc", 9.5, kUs);  // walked in the window before the layout
  TraceRows& rows = b.rows();
  CallExt e = rows.ext(rows.calls.back());
  e.pystack_id = 3;
  rows.set_ext(rows.calls.back(), e);
  for (int i = 0; i < 4; ++i) b.call(200, 200, "cudaMalloc", 1.0 * i, kUs);
  const TraceRows built = b.build();
  const std::unordered_map<uint32_t, int64_t> layouts = {{kTrainer, RowsBuilder::at(6.6)}};
  const std::vector<PyLayoutGap> gaps = python_layout_gaps(built, layouts);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].pid, kTrainer);
  EXPECT_EQ(gaps[0].calls, 7u);  // at 0..6 ms
  EXPECT_EQ(gaps[0].layout_ns, RowsBuilder::at(6.6));
  EXPECT_TRUE(python_layout_gaps(built, {}).empty());

  TraceRows with_gap = built;
  with_gap.python_before_layout = gaps;
  const Report r = analyze(std::move(with_gap));
  bool said = false;
  for (const Caveat& c : r.caveats)
    said |= c.kind == "python_before_layout" &&
            c.text ==
                "process 100: 7 GPU calls made before its Python layout was known (until "
                "+0.007 s, its discovery) have no Python line";
  EXPECT_TRUE(said);
}

}  // namespace
}  // namespace gpuwhy::analysis
