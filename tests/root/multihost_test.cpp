// SPDX-License-Identifier: Apache-2.0
// One job, two "hosts": a 4-rank NCCL job on the simulated runtime whose ranks 0-1 and 2-3 are
// traced by two agents into two files, the second agent with its wall clock 2.5 s ahead (the
// test-only GPUWHY_TEST_CLOCK_SKEW_NS) and each file's host name set as a second machine's would
// be. `explain --db a --db b` must name rank 3 on host-b (sim_train's straggler: extra CPU work
// before every all-reduce), recover the 2.5 s within the residual it states, and say why from
// host-b's own trace; unrelated files are refused with one line; `query` over both files leads
// each row with its host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "support/multihost.hpp"
#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

using nlohmann::json;

constexpr int64_t kSkewNs = kHostBSkewNs;

// Gives a copy of a host's trace the identity a second machine's would have.
void set_host(const std::string& db, const std::string& host) {
  ASSERT_EQ(detail::set_host(db, host), "");
}

class MultiHost : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    const TwoHostJob& j = two_host_job();
    ASSERT_TRUE(j.ok) << j.error;
    a_ = j.a;
    b_ = j.b;
    pids_ = j.pids;
    dir_ = &j.dir;
  }
  std::string a_, b_;
  std::map<int, int> pids_;
  const TempDir* dir_ = nullptr;
};

TEST_F(MultiHost, ExplainNamesTheStragglerHostRankAndCause) {
  RunResult ex = run({gpuwhy_binary(), "explain", "--db", a_, "--db", b_, "--json"});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  const json j = json::parse(ex.out);
  SCOPED_TRACE(j.dump(2));
  EXPECT_EQ(j["nranks"], 4);
  EXPECT_EQ(j["ranks"].size(), 4u);
  ASSERT_TRUE(j["straggler"].is_object());
  const json& s = j["straggler"];
  EXPECT_EQ(s["rank"], 3);
  EXPECT_EQ(s["host"], "host-b");
  EXPECT_EQ(s["pid"], pids_[3]);
  // sim_train's straggler burns 5 ms of CPU before each all-reduce: its own host work.
  EXPECT_EQ(s["cause"], "host_work");
  EXPECT_GT(s["late_p50_ns"].get<int64_t>(), 2'000'000);
  // The clock: host-b's 2.5 s recovered within the residual skew the report states.
  const json& hb = j["hosts"][1];
  EXPECT_EQ(hb["host"], "host-b");
  const int64_t err = std::llabs(hb["offset_ns"].get<int64_t>() + kSkewNs);
  // The bound is the one the report states (its fit's p90 residual), not a guess: on a loaded
  // 2-core machine the residual itself reaches 2.5 ms (a fixed 1 ms cap failed 1 run in 20 with
  // an error of 1.12 ms and a stated p90 of 0.86 ms... 2.5 ms). What the fit must not do is
  // state a residual that hides a wrong offset: that is the first check.
  const int64_t residual = hb["residual_p90_ns"].get<int64_t>();
  const int64_t tolerance = std::max<int64_t>(2 * residual, 200'000);
  EXPECT_LE(err, tolerance) << "offset " << hb["offset_ns"];
  // And the stated residual is small next to what it recovers: a skew of 2.5 s, steps of ms.
  EXPECT_LT(residual, kSkewNs / 100) << "residual " << residual;

  RunResult text = run({gpuwhy_binary(), "explain", "--db", a_, "--db", b_});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("rank 3 of 4 on host-b"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("residual skew"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("on the CPU in its own code"), std::string::npos) << text.out;
}

// The same job with asynchronous collectives (real NCCL's behaviour): the calls return once
// queued, so the clocks are fitted on the blocked syncs that complete them, a coarser anchor; the
// straggler and its host are still named and the offset is within the residual the report states.
TEST(MultiHostAsync, ExplainAlignsOnTheCompletingSyncs) {
  if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const TwoHostJob& job = two_host_job(/*async=*/true);
  ASSERT_TRUE(job.ok) << job.error;
  RunResult ex = run({gpuwhy_binary(), "explain", "--db", job.a, "--db", job.b, "--json"});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  const json j = json::parse(ex.out);
  SCOPED_TRACE(j.dump(2));
  const json& hb = j["hosts"][1];
  EXPECT_EQ(hb["anchor"], "sync_ends");
  ASSERT_TRUE(j["straggler"].is_object());
  EXPECT_EQ(j["straggler"]["rank"], 3);
  EXPECT_EQ(j["straggler"]["host"], "host-b");
  EXPECT_EQ(j["straggler"]["pid"], job.pids.at(3));
  EXPECT_EQ(j["straggler"]["cause"], "host_work");
  const int64_t err = std::llabs(hb["offset_ns"].get<int64_t>() + kSkewNs);
  EXPECT_LE(err, std::max<int64_t>(2 * hb["residual_p90_ns"].get<int64_t>(), 200'000))
      << "offset " << hb["offset_ns"];
}

TEST_F(MultiHost, RefusesUnrelatedFiles) {
  // Another job: two ranks of their own.
  const std::string c = dir_->file("c.db");
  RunResult other =
      run({gpuwhy_binary(), "trace", "--out", c, "--no-host-libs", "--", workload("sim_train"),
           "--scenario", "straggler", "--steps", "10", "--ranks", "2"},
          {{"GW_START_DELAY_MS", "300"}}, 120);
  ASSERT_EQ(other.exit_code, 0) << other.err;
  RunResult ex = run({gpuwhy_binary(), "explain", "--db", a_, "--db", c});
  EXPECT_EQ(ex.exit_code, 2);
  EXPECT_NE(ex.err.find("shares no NCCL communicator"), std::string::npos) << ex.err;
  EXPECT_EQ(std::count(ex.err.begin(), ex.err.end(), '\n'), 1) << ex.err;
  EXPECT_TRUE(ex.out.empty()) << ex.out;

  // One host's trace twice, renamed as a second host: its ranks would be in both.
  const std::string copy = dir_->file("a_copy.db");
  ASSERT_EQ(run({"/bin/cp", a_, copy}).exit_code, 0);
  set_host(copy, "host-c");
  RunResult twice = run({gpuwhy_binary(), "explain", "--db", a_, "--db", copy});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("is both pid"), std::string::npos) << twice.err;
}

TEST_F(MultiHost, QueryLeadsEveryRowWithItsHost) {
  RunResult q = run({gpuwhy_binary(), "query", "--db", a_, "--db", b_, "--format", "csv",
                     "SELECT peer AS rank, nranks FROM v_calls WHERE name = 'ncclCommInitRank' "
                     "ORDER BY peer"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out, "host,rank,nranks\r\nhost-a,0,4\r\nhost-a,1,4\r\nhost-b,2,4\r\nhost-b,3,4\r\n");
  // Still read-only, on every file.
  RunResult w = run({gpuwhy_binary(), "query", "--db", a_, "--db", b_, "DELETE FROM processes"});
  EXPECT_NE(w.exit_code, 0);
}

}  // namespace
}  // namespace gpuwhy::testing
