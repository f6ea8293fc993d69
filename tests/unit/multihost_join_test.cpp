// SPDX-License-Identifier: Apache-2.0
// The cross-host join on hand-built ranks (analysis/multihost.hpp): ranks named by their NCCL
// rank, the second file's clock recovered from the collectives' ends, the late rank found, and
// joins that cannot be trusted refused with one line.
#include <gtest/gtest.h>

#include "analysis/multihost.hpp"

namespace gpuwhy::analysis {
namespace {

constexpr int64_t kMs = 1'000'000;

// `n` all-reduces every 20 ms; rank `late` enters `late_ns` after the others; everyone leaves
// together 1 ms after the last arrival (plus a few µs of jitter). `skew` is added to the times of
// ranks in file 1, as that host's wrong clock would.
std::vector<HostFile> job(uint32_t nranks, size_t n, uint32_t late, int64_t late_ns, int64_t skew) {
  std::vector<HostFile> files(2);
  files[0] = {"a.db", "host-a", "boot-a", 0, {}};
  files[1] = {"b.db", "host-b", "boot-b", 0, {}};
  for (uint32_t r = 0; r < nranks; ++r) {
    const size_t f = r < nranks / 2 ? 0 : 1;
    RankMember m;
    m.file = f;
    m.pid = 100 + r % (nranks / 2);  // pids repeat across hosts
    m.tid = m.pid;
    m.comm = 0x1000 + r;
    m.rank = r;
    m.nranks = nranks;
    const int64_t off = f == 1 ? skew : 0;
    m.init_ts = 1'000 * kMs + off;
    for (size_t k = 0; k < n; ++k) {
      const int64_t t0 = 2'000 * kMs + static_cast<int64_t>(k) * 20 * kMs;
      const int64_t entry = t0 + (r == late ? late_ns : static_cast<int64_t>(r) * 10'000);
      const int64_t end = t0 + late_ns + kMs + static_cast<int64_t>((k * 7 + r * 3) % 5) * 1'000;
      m.collectives.push_back({entry + off, end + off, 200});
    }
    files[f].members.push_back(std::move(m));
  }
  return files;
}

class MultiHostSkew : public ::testing::TestWithParam<int64_t> {};

TEST_P(MultiHostSkew, FindsTheLateRankAndTheClockOffset) {
  const int64_t skew = GetParam();
  auto j = join_hosts(job(4, 30, 3, 5 * kMs, skew));
  ASSERT_TRUE(j) << j.error().line();
  EXPECT_EQ(j->nranks, 4u);
  ASSERT_EQ(j->members.size(), 4u);
  EXPECT_EQ(j->instances, 30u);
  // File 1 runs 2.5 s ahead: its offset brings it back, within the jitter.
  EXPECT_NEAR(static_cast<double>(j->clocks[1].offset_ns), -static_cast<double>(skew), 10'000);
  EXPECT_LE(j->clocks[1].residual_p90_ns, 10'000);
  ASSERT_GE(j->straggler, 0);
  const RankMember& s = j->members[static_cast<size_t>(j->straggler)];
  EXPECT_EQ(s.rank, 3u);
  EXPECT_EQ(s.file, 1u);
  EXPECT_EQ(j->ranks[static_cast<size_t>(j->straggler)].last, 30u);
  EXPECT_NEAR(static_cast<double>(j->ranks[3].late_p50_ns), 5.0 * kMs, 0.1 * kMs);
  // A clock off by more than 100 ms is worth a note; one in step is not.
  const bool noted =
      !j->notes.empty() && j->notes.back().find("wall clock is") != std::string::npos;
  EXPECT_EQ(noted, skew != 0) << (j->notes.empty() ? "" : j->notes.back());
}

// Host b ahead, behind, in step.
INSTANTIATE_TEST_SUITE_P(MultiHostJoin, MultiHostSkew,
                         ::testing::Values(2'500 * kMs, -3'000 * kMs, int64_t{0}));

TEST(MultiHostJoin, BalancedJobNamesNobody) {
  auto j = join_hosts(job(4, 30, 3, 0, 0));
  ASSERT_TRUE(j) << j.error().line();
  EXPECT_EQ(j->straggler, -1);
  EXPECT_EQ(j->unbalanced, 0u);
}

TEST(MultiHostJoin, RefusesFilesThatShareNoCommunicator) {
  auto a = job(4, 30, 3, 5 * kMs, 0);
  auto b = job(2, 30, 1, 5 * kMs, 0);
  std::vector<HostFile> files = {a[0], b[1]};
  files[1].path = "c.db";
  for (RankMember& m : files[1].members) m.file = 1;
  auto j = join_hosts(files);
  ASSERT_FALSE(j);
  EXPECT_NE(j.error().line().find("shares no NCCL communicator"), std::string::npos)
      << j.error().line();
  EXPECT_EQ(j.error().exit_code, 2);
}

TEST(MultiHostJoin, RefusesOneRankInTwoFiles) {
  auto a = job(4, 30, 3, 5 * kMs, 0);
  std::vector<HostFile> files = {a[0], a[0]};
  files[1].path = "copy.db";
  for (RankMember& m : files[1].members) m.file = 1;
  auto j = join_hosts(files);
  ASSERT_FALSE(j);
  EXPECT_NE(j.error().line().find("rank 0 of 4 is both pid"), std::string::npos)
      << j.error().line();
}

TEST(MultiHostJoin, RefusesAFileWithoutNcclSetUp) {
  auto a = job(4, 30, 3, 5 * kMs, 0);
  a[1].members.clear();
  auto j = join_hosts(a);
  ASSERT_FALSE(j);
  EXPECT_NE(j.error().line().find("records no NCCL communicator set-up"), std::string::npos);
}

TEST(MultiHostJoin, RefusesCollectivesThatDoNotLineUp) {
  auto a = job(4, 30, 3, 5 * kMs, 0);
  // Host b's ranks run a different cadence: no single offset makes their ends meet.
  for (RankMember& m : a[1].members)
    for (size_t k = 0; k < m.collectives.size(); ++k) {
      m.collectives[k].ts += static_cast<int64_t>(k) * 3 * kMs;
      m.collectives[k].end += static_cast<int64_t>(k) * 3 * kMs;
    }
  auto j = join_hosts(a);
  ASSERT_FALSE(j);
  EXPECT_NE(j.error().line().find("do not line up"), std::string::npos) << j.error().line();
}

}  // namespace
}  // namespace gpuwhy::analysis
