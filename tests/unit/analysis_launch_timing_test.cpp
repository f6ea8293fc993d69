// SPDX-License-Identifier: Apache-2.0
// Adaptive launch timing in the rows (analysis/launch_timing.hpp): an untimed launch (duration 0
// in a trace whose launch_timing family is "sampled") gets the mean of its thread's timed
// launches of the same API, never past its thread's next call, and is marked; every other row is
// left alone, and nothing changes in a trace that timed every launch or recorded launches at
// entry only.
#include <gtest/gtest.h>

#include "analysis/launch_timing.hpp"
#include "analysis_test_util.hpp"
#include "model/launch_timing.hpp"
#include "store/store.hpp"

namespace gpuwhy::analysis {
namespace {

using testing::kUs;
using testing::RowsBuilder;

// Thread 11: timed launches of 4 and 8 us, untimed ones (one right before a sync 2 us later),
// a sync. Thread 12: untimed only, so it takes every thread's mean (6 us).
TraceRows launches() {
  RowsBuilder b;
  b.process(10, "trainer").thread(10, 11, "main").thread(10, 12, "side");
  b.call(10, 11, "cudaLaunchKernel", 1.0, 4 * kUs)
      .call(10, 11, "cudaLaunchKernel", 1.1, 0)
      .call(10, 11, "cudaLaunchKernel", 1.2, 8 * kUs)
      .call(10, 11, "cudaLaunchKernel", 1.3, 0)
      .call(10, 11, "cudaStreamSynchronize", 1.302, 0)
      .call(10, 12, "cudaLaunchKernel", 2.0, 0);
  return b.build();
}

void sample(TraceRows& rows) {
  rows.families_off.push_back(
      {std::string(kLaunchTimingFamily), "sampled", launch_timing_detail({10000, 64})});
}

TEST(LaunchTimingRows, UntimedLaunchesGetTheirThreadsMeanCutAtTheNextCall) {
  TraceRows rows = launches();
  sample(rows);
  EXPECT_EQ(rows.launch_timing().untimed_above_per_s, 10000u);
  EXPECT_EQ(rows.launch_timing().timed_one_in, 64u);
  impute_untimed_launches(rows);
  const CallRows& c = rows.calls;
  EXPECT_EQ(c[0].dur, 4 * kUs);
  EXPECT_NE(c[0].dir, kDurationImputed);
  EXPECT_EQ(c[1].dur, 6 * kUs);  // (4 + 8) / 2
  EXPECT_EQ(c[1].dir, kDurationImputed);
  EXPECT_EQ(c[3].dur, 2 * kUs);  // the sync begins 2 us later
  EXPECT_EQ(c[3].dir, kDurationImputed);
  EXPECT_EQ(c[4].dur, 0) << "a sync is never imputed";
  EXPECT_NE(c[4].dir, kDurationImputed);
  EXPECT_EQ(c[5].dur, 6 * kUs) << "a thread without timed launches takes every thread's mean";
}

TEST(LaunchTimingRows, NothingChangesWhenEveryLaunchWasTimedOrNoneWas) {
  for (const bool entry_only : {false, true}) {
    TraceRows rows = launches();
    if (entry_only) {
      sample(rows);
      rows.families_off.push_back(
          {store::entry_only_family("launch"), "off", "trace --entry-only"});
    } else {
      rows.families_off.push_back(
          {std::string(kLaunchTimingFamily), "on", "every launch timed (trace --full)"});
    }
    EXPECT_EQ(rows.launch_timing().untimed_above_per_s, entry_only ? 10000u : 0u);
    impute_untimed_launches(rows);
    for (const CallRow& c : rows.calls) EXPECT_NE(c.dir, kDurationImputed);
    EXPECT_EQ(rows.calls[1].dur, 0);
  }
}

TEST(LaunchTimingRows, AnUnknownDetailReadsAsEveryLaunchTimed) {
  const LaunchTiming t = parse_launch_timing("something else");
  EXPECT_EQ(t.untimed_above_per_s, 0u);
  EXPECT_EQ(t.timed_one_in, 1u);
}

}  // namespace
}  // namespace gpuwhy::analysis
