// SPDX-License-Identifier: Apache-2.0
// The audit on hand-built rows: memory sites and patterns, untouched buffers, the live-memory
// peak, and the regime of a loop whose budget is known.
#include <gtest/gtest.h>

#include "analysis/audit.hpp"
#include "analysis_test_util.hpp"

namespace gpuwhy::analysis {
namespace {

using testing::kMs;
using testing::RowsBuilder;

const MemorySite* site_with(const ProcessMemory& m, uint64_t bytes_allocated) {
  for (const MemorySite& s : m.sites)
    if (s.bytes_allocated == bytes_allocated) return &s;
  return nullptr;
}

TEST(AnalysisAudit, MemoryPatternsAndUntouchedBuffers) {
  RowsBuilder b;
  b.process(1, "train");
  // Set-up: weights (copied into) and a 64 MiB buffer nobody touches, both kept to the end.
  b.call(1, 1, "cudaMalloc", 0, kMs / 10, 1 << 20, -1, 0x100000000);
  b.call(1, 1, "cudaMalloc", 0.5, kMs / 10, 64 << 20, -1, 0x200000000);
  b.call(1, 1, "cudaMemcpy", 1, kMs, 1 << 20, static_cast<int>(CopyDir::HostToDevice), 0x100000000,
         0x5000);
  // Steps 2..99 ms: a temporary allocated and freed at the same address, and a 1 KiB buffer kept
  // every step (different addresses).
  for (int i = 0; i < 10; ++i) {
    const double t = 10 + 9.0 * i;
    b.call(1, 1, "cudaMalloc", t, kMs / 10, 4096, -1, 0x300000000);
    b.call(1, 1, "cudaMemset", t + 1, kMs / 10, 4096, -1, 0x300000000);
    b.call(1, 1, "cudaFree", t + 2, kMs / 10, 0, -1, 0x300000000);
    b.call(1, 1, "cudaMalloc", t + 3, kMs / 10, 1024, -1, 0x400000000 + 0x1000 * i);
  }
  b.call(1, 1, "cudaStreamSynchronize", 100, kMs);
  const TraceRows rows = b.build();
  const auto all = audit_memory(rows);
  ASSERT_EQ(all.size(), 1u);
  const ProcessMemory& m = all[0].second;
  // Without stacks the sites are the API; one site, cudaMalloc, mixing the patterns.
  ASSERT_EQ(m.sites.size(), 1u);
  const MemorySite& s = m.sites[0];
  EXPECT_EQ(s.allocs, 22u);
  EXPECT_EQ(s.frees, 10u);
  EXPECT_EQ(s.kept_bytes, (1u << 20) + (64u << 20) + 10 * 1024u);
  // Untouched and kept: the 64 MiB buffer and the ten 1 KiB buffers, not the copied weights.
  EXPECT_EQ(s.untouched_bytes, (64u << 20) + 10 * 1024u);
  EXPECT_EQ(s.untouched_allocs, 11u);
  EXPECT_EQ(m.peak, (1u << 20) + (64u << 20) + 9 * 1024u + 4096u);
  EXPECT_EQ(m.live_end, (1u << 20) + (64u << 20) + 10 * 1024u);
  EXPECT_EQ(m.allocations, 22u);
  EXPECT_LE(m.timeline.size(), 101u);
  (void)site_with;
}

TEST(AnalysisAudit, AReusedAddressIsANewAllocation) {
  RowsBuilder b;
  b.process(1, "p");
  b.call(1, 1, "cudaMalloc", 0, kMs / 10, 8192, -1, 0x100000000);
  b.call(1, 1, "cudaFree", 1, kMs / 10, 0, -1, 0x100000000);
  b.call(1, 1, "cudaMalloc", 2, kMs / 10, 8192, -1, 0x100000000);
  // A copy into the second one only: the first was freed before it.
  b.call(1, 1, "cudaMemcpy", 50, kMs, 8192, static_cast<int>(CopyDir::HostToDevice), 0x100000000,
         0x5000);
  b.call(1, 1, "cudaStreamSynchronize", 100, kMs);
  const TraceRows rows = b.build();
  const auto all = audit_memory(rows);
  ASSERT_EQ(all.size(), 1u);
  const ProcessMemory& m = all[0].second;
  ASSERT_EQ(m.sites.size(), 1u);
  EXPECT_EQ(m.sites[0].untouched_bytes, 0u);
  EXPECT_EQ(m.peak, 8192u);
  EXPECT_EQ(m.live_end, 8192u);
}

TEST(AnalysisAudit, GpuBoundLoopFromItsBudget) {
  RowsBuilder b;
  b.process(1, "train");
  // 20 steps of 10 ms: launch at once, then wait 9 ms in the sync.
  for (int i = 0; i < 20; ++i) {
    const double t = 10.0 * i;
    b.call(1, 1, "cudaLaunchKernel", t, kMs / 100);
    b.call(1, 1, "cudaStreamSynchronize", t + 0.5, 9 * kMs);
  }
  const AuditReport r = audit(b.build(), {.price_per_gpu_hour = 3.6});
  ASSERT_EQ(r.processes.size(), 1u);
  const ProcessAudit& p = r.processes[0];
  EXPECT_EQ(p.regime, Regime::GpuBound) << p.evidence;
  EXPECT_GT(p.times.gpu_ns, p.times.host_ns);
  // Every sync waited: fed the whole of each episode (launch to sync end).
  EXPECT_NEAR(static_cast<double>(p.busy.estimate_ns), 20 * 9.5 * kMs, 0.01 * 20 * 9.5 * kMs);
  EXPECT_GE(p.busy.upper_ns, p.busy.estimate_ns);
  EXPECT_LE(p.busy.lower_ns, p.busy.estimate_ns);
  // 3.6 per hour is 1e-12 per ns.
  EXPECT_NEAR(p.cost, 1e-12 * static_cast<double>(p.last_ns - p.first_ns), 1e-9);
}

TEST(AnalysisAudit, HostBoundLoopFromItsBudget) {
  RowsBuilder b;
  b.process(1, "train");
  // 20 steps of 10 ms: a launch, 9 ms of host work, a sync that returns at once.
  for (int i = 0; i < 20; ++i) {
    const double t = 10.0 * i;
    b.call(1, 1, "cudaLaunchKernel", t, kMs / 100);
    b.call(1, 1, "cudaStreamSynchronize", t + 9.5, kMs / 100);
  }
  const AuditReport r = audit(b.build());
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].regime, Regime::HostBound) << r.processes[0].evidence;
  // Unknown within each episode: the estimate is its middle, the error half of it.
  EXPECT_GT(r.processes[0].busy.error_ns(), 0);
}

}  // namespace
}  // namespace gpuwhy::analysis
