// SPDX-License-Identifier: Apache-2.0
// CpuHolders on hand-built rows: the runs of each CPU clipped to the part of a wait spent in its
// run queue, moves between queues, time nobody's run covers, and traces that predate the runs.
#include <gtest/gtest.h>

#include "analysis/cpu_holders.hpp"

namespace gpuwhy::analysis {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kUs = 1'000;
constexpr uint32_t kTrainer = 100, kDispatch = 101, kHelper = 102, kOther = 200, kCat = 300;
constexpr uint32_t kHelperName = 1, kOtherName = 2, kCatName = 3;

int64_t us(int64_t n) { return kT0 + n * kUs; }

CpuRunRow run(uint16_t cpu, int64_t from_us, int64_t to_us, uint32_t pid, uint32_t tid,
              uint32_t comm) {
  CpuRunRow r;
  r.ts = us(from_us);
  r.dur = (to_us - from_us) * kUs;
  r.cpu = cpu;
  r.pid = pid;
  r.tid = tid;
  r.comm = comm;
  return r;
}

// The dispatch thread off the CPU over [from, to): preempted (all of it runnable) or blocked
// with the last `runq_us` runnable; it waited first on `wait_cpu` and got `cpu` back.
OffCpuRow wait(int64_t from_us, int64_t to_us, bool preempted, int64_t runq_us, int wait_cpu,
               uint16_t cpu, uint16_t migrations = 0) {
  OffCpuRow o;
  o.ts = us(from_us);
  o.dur = (to_us - from_us) * kUs;
  o.runq = preempted ? o.dur : runq_us * kUs;
  o.pid = kTrainer;
  o.tid = kDispatch;
  o.preempted = preempted;
  o.cpu = cpu;
  o.wait_cpu = static_cast<int16_t>(wait_cpu);
  o.migrations = migrations;
  return o;
}

class CpuHoldersTest : public ::testing::Test {
 protected:
  CpuHoldersTest() {
    rows_.session.abi_version = 5;
    rows_.strings = {{kHelperName, "cuda-EvtHandlr"}, {kOtherName, "other_job"}, {kCatName, "cat"}};
  }
  std::vector<HolderTime> holders(const OffCpuRow& o, int64_t from = INT64_MIN,
                                  int64_t to = INT64_MAX) {
    prepare_rows(rows_);
    CpuHolders h(rows_);
    EXPECT_TRUE(h.recorded());
    std::vector<HolderTime> out;
    h.holders(o, from, to, out);
    return out;
  }
  TraceRows rows_;
};

int64_t total(const std::vector<HolderTime>& v) {
  int64_t n = 0;
  for (const HolderTime& h : v) n += h.ns;
  return n;
}

// The case: the helper preempts the dispatch thread for 5 µs, then the other job runs
// for 4 ms before the dispatch thread gets the CPU back. Switch-out and switch-in name only the
// helper and the other job; the runs say who had the time.
TEST_F(CpuHoldersTest, PreemptedWaitSplitsBetweenHelperAndNeighbour) {
  rows_.cpu_runs = {run(3, 0, 5, kTrainer, kHelper, kHelperName),
                    run(3, 5, 4005, kOther, kOther, kOtherName)};
  const auto h = holders(wait(0, 4005, true, 0, 3, 3));
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].pid, kOther);
  EXPECT_EQ(h[0].comm, kOtherName);
  EXPECT_EQ(h[0].ns, 4000 * kUs);
  EXPECT_EQ(h[1].tid, kHelper);
  EXPECT_EQ(h[1].ns, 5 * kUs);
}

// A blocked interval: only its runnable tail counts; runs before the wake-up do not.
TEST_F(CpuHoldersTest, BlockedIntervalCountsItsRunqTailOnly) {
  rows_.cpu_runs = {run(1, 0, 900, kCat, kCat, kCatName),  // before the wake-up at 800 too
                    run(1, 900, 1000, 0, 0, 0)};           // idle: the wake-up latency
  const auto h = holders(wait(0, 1000, false, 200, 1, 1));
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].pid, kCat);
  EXPECT_EQ(h[0].ns, 100 * kUs);
  EXPECT_EQ(h[1].pid, 0u);
  EXPECT_EQ(h[1].ns, 100 * kUs);
}

// Load balancing moved the waiting thread from CPU 0 to CPU 2: each CPU's runs count for the
// time it waited there, and runs of CPU 0 after the move (another thread waited there) do not.
TEST_F(CpuHoldersTest, MigrationSplitsTheWaitByQueue) {
  rows_.cpu_runs = {run(0, 0, 600, kCat, kCat, kCatName),
                    run(2, 0, 300, kOther, kOther, kOtherName),
                    run(2, 300, 1000, kTrainer, kHelper, kHelperName)};
  rows_.wait_migrations = {{us(200), kTrainer, kDispatch, 0, 2}};
  const auto h = holders(wait(0, 1000, true, 0, 0, 2, 1));
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].tid, kHelper);
  EXPECT_EQ(h[0].ns, 700 * kUs);
  EXPECT_EQ(h[1].pid, kCat);
  EXPECT_EQ(h[1].ns, 200 * kUs);
  EXPECT_EQ(h[2].pid, kOther);
  EXPECT_EQ(h[2].ns, 100 * kUs);
  EXPECT_EQ(total(h), 1000 * kUs);
}

// A move whose record was lost (the thread got the CPU back elsewhere than it last waited):
// what is known stays, the rest is unknown rather than charged to the wrong CPU's tasks.
TEST_F(CpuHoldersTest, LostMigrationLeavesTheRestUnknown) {
  rows_.cpu_runs = {run(0, 0, 1000, kCat, kCat, kCatName),
                    run(2, 0, 1000, kOther, kOther, kOtherName)};
  const auto h = holders(wait(0, 1000, true, 0, 0, 2, 1));
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].pid, kUnknownHolder);
  EXPECT_EQ(h[0].tid, kUnknownHolder);
  EXPECT_EQ(h[0].ns, 1000 * kUs);
}

// Runs lost to a full ring leave a gap: that time is unknown, the rest is attributed.
TEST_F(CpuHoldersTest, GapsBetweenRunsAreUnknown) {
  rows_.cpu_runs = {run(3, 0, 300, kOther, kOther, kOtherName),
                    run(3, 700, 1000, kOther, kOther, kOtherName)};
  const auto h = holders(wait(0, 1000, true, 0, 3, 3));
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].pid, kOther);
  EXPECT_EQ(h[0].ns, 600 * kUs);
  EXPECT_EQ(h[1].pid, kUnknownHolder);
  EXPECT_EQ(h[1].ns, 400 * kUs);
}

// Clipped to [from, to): only the wait inside the window is attributed.
TEST_F(CpuHoldersTest, ClipsToTheWindow) {
  rows_.cpu_runs = {run(3, 0, 5, kTrainer, kHelper, kHelperName),
                    run(3, 5, 4005, kOther, kOther, kOtherName)};
  const auto h = holders(wait(0, 4005, true, 0, 3, 3), us(1000), us(2000));
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].pid, kOther);
  EXPECT_EQ(h[0].ns, 1000 * kUs);
  std::vector<HolderTime> none;
  CpuHolders(rows_).holders(wait(0, 4005, true, 0, 3, 3), us(5000), us(6000), none);
  EXPECT_TRUE(none.empty());
}

// An interval the kernel side did not count waiting: all unknown.
TEST_F(CpuHoldersTest, UncountedWaitIsUnknown) {
  rows_.cpu_runs = {run(3, 0, 1000, kOther, kOther, kOtherName)};
  const auto h = holders(wait(0, 1000, true, 0, -1, 3));
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].pid, kUnknownHolder);
}

// A trace written before the runs were recorded, or without the scheduler family: callers
// fall back to the switch-in holder.
TEST(CpuHoldersRecorded, NeedsAbi5AndTheSchedulerFamily) {
  TraceRows rows;
  rows.session.abi_version = 4;
  EXPECT_FALSE(CpuHolders(rows).recorded());
  rows.session.abi_version = 5;
  EXPECT_TRUE(CpuHolders(rows).recorded());
  rows.families_off.push_back({"sched", "failed", "cannot attach"});
  EXPECT_FALSE(CpuHolders(rows).recorded());
}

}  // namespace
}  // namespace gpuwhy::analysis
