// SPDX-License-Identifier: Apache-2.0
// The audit's driver boundary on hand-built rows: a process's ioctls on the driver's files, their
// time, and the part of it inside the same thread's probed runtime calls.
#include <gtest/gtest.h>

#include "analysis/audit.hpp"
#include "analysis_test_util.hpp"

namespace gpuwhy::analysis {
namespace {

using testing::kMs;
using testing::kT0;
using testing::RowsBuilder;

SyscallRow driver_ioctl(uint32_t pid, uint32_t tid, double at_ms, int64_t dur_ns) {
  return {kT0 + static_cast<int64_t>(at_ms * kMs), dur_ns, pid, tid, 16, -25, 0xc020462a};
}

TEST(AnalysisAuditDriver, IoctlsInsideAndOutsideTheThreadsCalls) {
  RowsBuilder b;
  b.process(1, "train").thread(1, 2, "helper");
  b.call(1, 1, "cudaLaunchKernel", 0, kMs / 100);
  b.call(1, 1, "cudaStreamSynchronize", 10, 5 * kMs);  // [10, 15) ms
  b.call(1, 1, "cudaLaunchKernel", 30, kMs / 100);
  TraceRows rows = b.build();
  rows.driver_ioctls = {
      driver_ioctl(1, 1, 10.5, kMs),    // inside the sync
      driver_ioctl(1, 1, 14.5, kMs),    // half of it inside
      driver_ioctl(1, 1, 20, 2 * kMs),  // between calls
      driver_ioctl(1, 2, 11, 3 * kMs),  // another thread: its own calls (none) decide
  };
  const AuditReport r = audit(std::move(rows));
  ASSERT_EQ(r.processes.size(), 1u);
  const DriverIoctls& d = r.processes[0].driver;
  EXPECT_EQ(d.count, 4u);
  EXPECT_EQ(d.threads, 2u);
  EXPECT_EQ(d.ns, 7 * kMs);
  EXPECT_EQ(d.inside_calls_ns, kMs + kMs / 2);
}

TEST(AnalysisAuditDriver, NoIoctlsNoFigures) {
  RowsBuilder b;
  b.process(1, "train");
  b.call(1, 1, "cudaLaunchKernel", 0, kMs / 100);
  b.call(1, 1, "cudaStreamSynchronize", 1, kMs);
  const AuditReport r = audit(b.build());
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].driver.count, 0u);
  EXPECT_EQ(r.processes[0].driver.ns, 0);
}

}  // namespace
}  // namespace gpuwhy::analysis
