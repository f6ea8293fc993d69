// SPDX-License-Identifier: Apache-2.0
// GPU time from the device's own records (gpu_idle_truth.hpp, device_activity.hpp): the budgets'
// GPU-idle time measured from the gaps between kernels and copies, the calls' estimate beside
// it, the compute/stall ratio and HTA's idle categories per stream. Each expected number is
// computed by hand from the scenario in the comments.
#include <gtest/gtest.h>

#include "analysis/explain.hpp"
#include "analysis/explain_batched.hpp"
#include "analysis_test_util.hpp"

namespace gpuwhy::analysis {
namespace {

using testing::kMs;
using testing::kUs;
using testing::RowsBuilder;

constexpr uint32_t kPid = 1000;

// One thread over [0, 100 ms):
//   launches at 0, 0.01, 0.02 ms (10 µs each), a sync 0.03 .. 30 ms, host work to 40 ms,
//   an upload queued at 40 ms, a launch at 40.01 ms, a sync 40.02 .. 100 ms.
// The device (stream 7):
//   kernel 0.005 .. 10, kernel 10.01 .. 20, kernel 25 .. 30, copy 40.005 .. 50, kernel 50 .. 90.
// Device gaps over the span, and why:
//   0 .. 0.005       the first launch still ran at 0          host wait    5 µs
//   10 .. 10.01      launched at 0.01 ms, 10 µs < 30 µs        kernel wait 10 µs
//   20 .. 25         launched at 0.02 ms, 5 ms                 other        5 ms
//   30 .. 40.005     the upload was queued at 40 ms            host wait   10.005 ms
//   90 .. 100        the last: no work ends it                 host wait   10 ms
RowsBuilder scenario() {
  RowsBuilder b(100);
  b.process(kPid, "trainer");
  b.call(kPid, kPid, "cudaLaunchKernel", 0, 10 * kUs);
  b.call(kPid, kPid, "cudaLaunchKernel", 0.01, 10 * kUs);
  b.call(kPid, kPid, "cudaLaunchKernel", 0.02, 10 * kUs);
  b.call(kPid, kPid, "cudaStreamSynchronize", 0.03, 30 * kMs - 30 * kUs);
  b.call(kPid, kPid, "cudaMemcpyAsync", 40, 10 * kUs, 1 << 20,
         static_cast<int>(CopyDir::HostToDevice));
  b.call(kPid, kPid, "cudaLaunchKernel", 40.01, 10 * kUs);
  b.call(kPid, kPid, "cudaStreamSynchronize", 40.02, 60 * kMs - 20 * kUs);
  b.device_work(kPid, DeviceWork::Kernel, 0.005, 10);
  b.device_work(kPid, DeviceWork::Kernel, 10.01, 20);
  b.device_work(kPid, DeviceWork::Kernel, 25, 30);
  b.device_work(kPid, DeviceWork::Copy, 40.005, 50);
  b.device_work(kPid, DeviceWork::Kernel, 50, 90);
  return b;
}

TEST(GpuIdleTruth, DeviceTimesReplaceTheCallsEstimate) {
  const Report r = analyze(scenario().build());
  ASSERT_EQ(r.budgets.size(), 1u);
  const BudgetReport& b = r.budgets[0];
  EXPECT_TRUE(b.idle_measured);
  // Idle: 100 ms less the busy union (9.995 + 9.99 + 5 + 49.995 = 74.98 ms).
  EXPECT_EQ(b.idle_ns, 25'020 * kUs);
  // The calls' view: idle from the first sync's end (30 ms) to the upload (40 ms); the last
  // sync runs to the span's end.
  EXPECT_EQ(b.host_idle_ns, 10 * kMs);
  ASSERT_EQ(r.gpu_time.processes.size(), 1u);
  EXPECT_EQ(r.gpu_time.source, "device");
  const ProcessGpuTime& p = r.gpu_time.processes[0];
  EXPECT_TRUE(p.measured);
  EXPECT_EQ(p.span_ns, 100 * kMs);
  EXPECT_EQ(p.busy_ns, 74'980 * kUs);
  EXPECT_EQ(p.host_busy_ns, 90 * kMs);
  EXPECT_EQ(p.host_error_ns(), 15'020 * kUs);
}

TEST(GpuIdleTruth, ComputeStallRatioAndIdleCategories) {
  const Report r = analyze(scenario().build());
  ASSERT_EQ(r.gpu_time.processes.size(), 1u);
  const ProcessGpuTime& p = r.gpu_time.processes[0];
  ASSERT_EQ(p.devices.size(), 1u);
  const DeviceTime& d = p.devices[0];
  EXPECT_EQ(d.busy_ns, 74'980 * kUs);
  EXPECT_EQ(d.kernel_ns, 64'985 * kUs);     // 9.995 + 9.99 + 5 + 40
  EXPECT_EQ(d.copy_stall_ns, 9'995 * kUs);  // the copy, no kernel beside it
  EXPECT_EQ(d.idle.host_wait_ns, 20'010 * kUs);
  EXPECT_EQ(d.idle.kernel_wait_ns, 10 * kUs);
  EXPECT_EQ(d.idle.other_ns, 5 * kMs);
  EXPECT_EQ(d.idle.gaps, 5u);
  EXPECT_EQ(d.idle.total() + d.busy_ns, p.span_ns);
  EXPECT_DOUBLE_EQ(d.compute_stall_ratio(), 64'985.0 / (9'995.0 + 20'010.0));
  // The stream between its first and last work: the same gaps but the leading and trailing.
  ASSERT_EQ(d.streams.size(), 1u);
  const StreamIdle& s = d.streams[0];
  EXPECT_EQ(s.stream, 7);
  EXPECT_EQ(s.first_ns, 5 * kUs);
  EXPECT_EQ(s.last_ns, 90 * kMs);
  EXPECT_EQ(s.idle.host_wait_ns, 10'005 * kUs);
  EXPECT_EQ(s.idle.kernel_wait_ns, 10 * kUs);
  EXPECT_EQ(s.idle.other_ns, 5 * kMs);
  EXPECT_EQ(s.idle.gaps, 3u);
  EXPECT_EQ(s.thread.tid, kPid);  // the upload it waited on was this thread's
}

// The same calls without the device's records: the calls' estimate, said to be one.
TEST(GpuIdleTruth, WithoutDeviceRecordsTheEstimateStands) {
  RowsBuilder b = scenario();
  b.rows().device_activity.clear();
  const Report r = analyze(b.build());
  ASSERT_EQ(r.budgets.size(), 1u);
  EXPECT_FALSE(r.budgets[0].idle_measured);
  EXPECT_EQ(r.budgets[0].idle_ns, 10 * kMs);
  EXPECT_EQ(r.budgets[0].host_idle_ns, 10 * kMs);
  EXPECT_EQ(r.gpu_time.source, "host");
  ASSERT_EQ(r.gpu_time.processes.size(), 1u);
  EXPECT_FALSE(r.gpu_time.processes[0].measured);
  EXPECT_EQ(r.gpu_time.processes[0].busy_ns, 90 * kMs);
  EXPECT_TRUE(r.gpu_time.processes[0].devices.empty());
}

// Two streams on two devices: each device's figures are its own rows; the process's busy time is
// their union (device 1 runs 20 .. 30 ms beside device 0's 10 .. 20 ms kernel).
TEST(GpuIdleTruth, DevicesAndStreamsApart) {
  RowsBuilder b(50);
  b.process(kPid, "trainer");
  b.call(kPid, kPid, "cudaLaunchKernel", 0, 10 * kUs);
  b.call(kPid, kPid, "cudaLaunchKernel", 0.01, 10 * kUs);
  b.call(kPid, kPid, "cudaStreamSynchronize", 0.02, 50 * kMs - 20 * kUs);
  b.device_work(kPid, DeviceWork::Kernel, 10, 20, 0, 7);
  b.device_work(kPid, DeviceWork::Memset, 20, 30, 1, 9);
  const Report r = analyze(b.build());
  ASSERT_EQ(r.gpu_time.processes.size(), 1u);
  const ProcessGpuTime& p = r.gpu_time.processes[0];
  EXPECT_EQ(p.busy_ns, 20 * kMs);
  ASSERT_EQ(p.devices.size(), 2u);
  EXPECT_EQ(p.devices[0].device, 0);
  EXPECT_EQ(p.devices[0].kernel_ns, 10 * kMs);
  EXPECT_EQ(p.devices[0].copy_stall_ns, 0);
  EXPECT_EQ(p.devices[1].device, 1);
  EXPECT_EQ(p.devices[1].kernel_ns, 0);
  EXPECT_EQ(p.devices[1].copy_stall_ns, 10 * kMs);
  // Device 1 never ran a kernel: all stall (its memset, and waiting on the host 0 .. 20 ms and
  // after its memset, the last gap).
  EXPECT_EQ(p.devices[1].idle.host_wait_ns, 40 * kMs);
  EXPECT_EQ(p.devices[1].compute_stall_ratio(), 0.0);
  ASSERT_EQ(p.devices[1].streams.size(), 1u);
  EXPECT_EQ(p.devices[1].streams[0].stream, 9);
  // Device 0: idle 0 .. 10 ms, the latest launch before its kernel (0.01 .. 0.02 ms) still ran
  // when the gap began: host wait; 20 .. 50 ms is its last gap: host wait too.
  EXPECT_EQ(p.devices[0].idle.host_wait_ns, 40 * kMs);
  EXPECT_EQ(p.devices[0].idle.other_ns, 0);
}

// Launch-bound: a launch every 20 µs taking 15 µs, each kernel 5 µs from the launch's end. The
// calls never drain the queue, so from them the GPU always had work (no GPU-idle time, no
// chain); the device says it ran 5 µs of every 20: idle 15 µs before each kernel but the first
// (the last kernel, 19.995 .. 20.0 ms, is past the span's end): 15 ms of 19.995 ms, which the
// gpu_idle chain reports as lost.
TEST(GpuIdleTruth, LaunchBoundIdleIsFoundOnlyWithTheDevicesRecords) {
  RowsBuilder b(20);
  b.process(kPid, "trainer");
  for (int64_t i = 0; i < 1000; ++i) {  // in whole ns: i * 0.02 ms is not exact in a double
    b.call(kPid, kPid, "cudaLaunchKernel", 0, 15 * kUs);
    const int64_t at = testing::kT0 + i * 20 * kUs;
    b.rows().calls.back().ts = at;
    b.rows().device_activity.push_back({at + 15 * kUs, 5 * kUs, kPid, 0, 7, DeviceWork::Kernel});
  }
  const TraceRows with = b.build();
  auto idle_chain = [](const Report& r) -> const Chain* {
    for (const Chain& c : r.chains)
      if (c.kind == "gpu_idle") return &c;
    return nullptr;
  };
  const Report r = analyze(with);
  ASSERT_EQ(r.budgets.size(), 1u);
  EXPECT_EQ(r.budgets[0].span_ns, 19'995 * kUs);
  EXPECT_EQ(r.budgets[0].idle_ns, 15 * kMs);
  EXPECT_EQ(r.budgets[0].host_idle_ns, 0);
  const Chain* c = idle_chain(r);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->lost_ns, 15 * kMs);
  ASSERT_EQ(r.gpu_time.processes.size(), 1u);
  EXPECT_EQ(r.gpu_time.processes[0].host_error_ns(), 15 * kMs);  // the calls said always busy
  // Each gap begins while the next launch runs: all host wait.
  ASSERT_EQ(r.gpu_time.processes[0].devices.size(), 1u);
  EXPECT_EQ(r.gpu_time.processes[0].devices[0].idle.host_wait_ns, 15 * kMs);

  RowsBuilder host_only = b;
  host_only.rows().device_activity.clear();
  const Report h = analyze(host_only.build());
  ASSERT_EQ(h.budgets.size(), 1u);
  EXPECT_EQ(h.budgets[0].idle_ns, 0);
  EXPECT_EQ(idle_chain(h), nullptr);
}

// Windows of a longer analysis add up per process, device and stream.
TEST(GpuIdleTruth, WindowsAddUp) {
  const Report a = analyze(scenario().build());
  const Report b = analyze(scenario().build());
  const GpuTimeReport m = merge_gpu_time({&a.gpu_time, &b.gpu_time});
  ASSERT_EQ(m.processes.size(), 1u);
  EXPECT_EQ(m.source, "device");
  const ProcessGpuTime& p = m.processes[0];
  EXPECT_EQ(p.span_ns, 200 * kMs);
  EXPECT_EQ(p.busy_ns, 2 * 74'980 * kUs);
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].idle.host_wait_ns, 2 * 20'010 * kUs);
  ASSERT_EQ(p.devices[0].streams.size(), 1u);
  EXPECT_EQ(p.devices[0].streams[0].idle.gaps, 6u);
}

}  // namespace
}  // namespace gpuwhy::analysis
