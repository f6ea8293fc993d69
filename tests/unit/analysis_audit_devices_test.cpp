// SPDX-License-Identifier: Apache-2.0
// The audit per GPU on hand-built rows: the current device is per thread (cudaSetDevice), a
// thread that never set one is on device 0, a failed selection changes nothing, and each device
// gets its own regime, busy time and memory.
#include <gtest/gtest.h>

#include "analysis/audit.hpp"
#include "analysis/devices.hpp"
#include "analysis_test_util.hpp"

namespace gpuwhy::analysis {
namespace {

using testing::kMs;
using testing::RowsBuilder;

int64_t kT0Ms(double ms) { return testing::kT0 + static_cast<int64_t>(ms * kMs); }

TEST(AnalysisDevices, CurrentDeviceIsPerThreadAndFromTheSelectionsReturn) {
  RowsBuilder b;
  b.process(1, "train").thread(1, 2, "worker");
  b.call(1, 2, "cudaSetDevice", 1, kMs, 0, -1, 1);
  b.call(1, 2, "cudaSetDevice", 10, kMs, 0, -1, 5).failed(101);  // invalid device: no change
  b.call(1, 2, "cudaSetDevice", 20, kMs, 0, -1, 2);
  b.call(1, 1, "cudaLaunchKernel", 30, kMs / 100);
  TraceRows rows = b.build();
  prepare_rows(rows);
  const DeviceMap d(rows);
  EXPECT_TRUE(d.any_selection());
  EXPECT_EQ(d.device_of(1, kT0Ms(50)), 0) << "a thread that never selected one is on device 0";
  EXPECT_EQ(d.device_of(2, kT0Ms(0)), 0);
  EXPECT_EQ(d.device_of(2, kT0Ms(1.5)), 0) << "in effect from its return, not its entry";
  EXPECT_EQ(d.device_of(2, kT0Ms(5)), 1);
  EXPECT_EQ(d.device_of(2, kT0Ms(15)), 1) << "a failed selection changes nothing";
  EXPECT_EQ(d.device_of(2, kT0Ms(25)), 2);
}

TEST(AnalysisDevices, TwoThreadsOnTwoGpusGetTheirOwnRegimes) {
  RowsBuilder b;
  b.process(1, "train").thread(1, 2, "trainer-1");
  // Thread 1 stays on device 0: launch, wait 9 ms in the sync (GPU-bound).
  // Thread 2 selects device 1: launch, 9 ms of host work, a sync that returns at once.
  b.call(1, 2, "cudaSetDevice", 0, kMs / 100, 0, -1, 1);
  b.call(1, 1, "cudaMalloc", 0.5, kMs / 10, 1 << 20, -1, 0x100000000);
  b.call(1, 2, "cudaMalloc", 0.5, kMs / 10, 8 << 20, -1, 0x200000000);
  for (int i = 0; i < 20; ++i) {
    const double t = 1 + 10.0 * i;
    b.call(1, 1, "cudaLaunchKernel", t, kMs / 100);
    b.call(1, 1, "cudaStreamSynchronize", t + 0.5, 9 * kMs);
    b.call(1, 2, "cudaLaunchKernel", t, kMs / 100);
    b.call(1, 2, "cudaStreamSynchronize", t + 9.5, kMs / 100);
  }
  const AuditReport r = audit(b.build(), {.price_per_gpu_hour = 3.6});
  ASSERT_EQ(r.processes.size(), 1u);
  const ProcessAudit& p = r.processes[0];
  ASSERT_EQ(p.devices.size(), 2u);
  const DeviceAudit& d0 = p.devices[0];
  const DeviceAudit& d1 = p.devices[1];
  EXPECT_EQ(d0.device, 0);
  EXPECT_EQ(d1.device, 1);
  EXPECT_EQ(d0.tids, std::vector<uint32_t>{1});
  EXPECT_EQ(d1.tids, std::vector<uint32_t>{2});
  EXPECT_EQ(p.moved_threads, 0u) << "the selection itself is not a use of device 0";
  EXPECT_EQ(p.gpu_span_ns, d0.gpu_span_ns + d1.gpu_span_ns);
  EXPECT_EQ(d0.regime, Regime::GpuBound) << d0.evidence;
  EXPECT_EQ(d1.regime, Regime::HostBound) << d1.evidence;
  // Device 0 fed for each whole episode; device 1 somewhere inside each.
  EXPECT_NEAR(static_cast<double>(d0.busy.estimate_ns), 20 * 9.5 * kMs, 0.01 * 20 * 9.5 * kMs);
  EXPECT_GT(d1.busy.error_ns(), 0);
  EXPECT_EQ(p.busy.estimate_ns, d0.busy.estimate_ns + d1.busy.estimate_ns);
  // Memory on the device its allocation was made on.
  EXPECT_EQ(d0.memory.peak, 1u << 20);
  EXPECT_EQ(d1.memory.peak, 8u << 20);
  EXPECT_EQ(p.memory.peak, 9u << 20);
  // Two GPUs: the process costs both spans (3.6 per hour is 1e-12 per ns).
  EXPECT_NEAR(p.cost,
              1e-12 * static_cast<double>((d0.last_ns - d0.first_ns) + (d1.last_ns - d1.first_ns)),
              1e-9);
  for (const Caveat& c : r.caveats) EXPECT_NE(c.kind, "device_default");
}

TEST(AnalysisDevices, NoSelectionMeansDeviceZeroAndSaysSo) {
  RowsBuilder b;
  b.process(1, "train");
  for (int i = 0; i < 5; ++i) {
    b.call(1, 1, "cudaLaunchKernel", 10.0 * i, kMs / 100);
    b.call(1, 1, "cudaStreamSynchronize", 10.0 * i + 0.5, 9 * kMs);
  }
  const AuditReport r = audit(b.build());
  ASSERT_EQ(r.processes.size(), 1u);
  ASSERT_EQ(r.processes[0].devices.size(), 1u);
  EXPECT_EQ(r.processes[0].devices[0].device, 0);
  EXPECT_EQ(r.processes[0].devices[0].busy.estimate_ns, r.processes[0].busy.estimate_ns);
  bool said = false;
  for (const Caveat& c : r.caveats) said = said || c.kind == "device_default";
  EXPECT_TRUE(said);
}

}  // namespace
}  // namespace gpuwhy::analysis
