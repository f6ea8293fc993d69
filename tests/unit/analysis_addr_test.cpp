// SPDX-License-Identifier: Apache-2.0
// Pinned / device address ranges from the allocation calls of a trace.
#include <gtest/gtest.h>

#include "analysis/addr_ranges.hpp"
#include "analysis_test_util.hpp"

namespace gpuwhy::analysis {
namespace {

using testing::kMs;
using testing::RowsBuilder;

TEST(AnalysisAddr, PinnedRangesLiveFromAllocationToFree) {
  RowsBuilder b;
  b.process(1, "p");
  b.call(1, 1, "cudaMallocHost", 100, kMs, 4096, -1, 0x10000);
  b.call(1, 1, "cudaFreeHost", 200, kMs, 0, -1, 0x10000);
  b.call(1, 1, "cudaMallocManaged", 100, kMs, 4096, -1, 0x90000);
  const TraceRows rows = b.build();
  const AddressMap m = AddressMap::build(rows, rows.memory_calls);
  EXPECT_FALSE(m.pinned(0x10000, 16, RowsBuilder::at(50)));  // before the allocation
  EXPECT_TRUE(m.pinned(0x10000, 16, RowsBuilder::at(150)));
  EXPECT_TRUE(m.pinned(0x10ff0, 16, RowsBuilder::at(150)));   // the last 16 bytes
  EXPECT_FALSE(m.pinned(0x10ff0, 32, RowsBuilder::at(150)));  // runs past the end
  EXPECT_FALSE(m.pinned(0x10000, 16, RowsBuilder::at(250)));  // freed
  EXPECT_TRUE(m.pinned(0x90010, 16, RowsBuilder::at(150)));   // managed counts as pinned
  EXPECT_EQ(m.pinned_allocations(), 2u);
}

TEST(AnalysisAddr, DefaultCopiesGetADirectionFromDeviceAllocations) {
  RowsBuilder b;
  b.process(1, "p");
  b.call(1, 1, "cudaMalloc", 0, kMs, 1 << 20, -1, 0x7000000000);
  const int kDefault = static_cast<int>(CopyDir::Default);
  b.call(1, 1, "cudaMemcpy", 10, kMs, 4096, kDefault, 0x7000000100, 0x5000);  // dst on device
  b.call(1, 1, "cudaMemcpy", 20, kMs, 4096, kDefault, 0x5000, 0x7000000100);  // src on device
  b.call(1, 1, "cudaMemcpy", 30, kMs, 4096, kDefault, 0x5000, 0x6000);        // unknown
  const TraceRows rows = b.build();
  EXPECT_EQ(rows.calls[1].dir, static_cast<int8_t>(CopyDir::HostToDevice));
  EXPECT_EQ(rows.calls[2].dir, static_cast<int8_t>(CopyDir::DeviceToHost));
  EXPECT_EQ(rows.calls[3].dir, static_cast<int8_t>(CopyDir::Default));
}

}  // namespace
}  // namespace gpuwhy::analysis
