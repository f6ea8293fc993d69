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
