// SPDX-License-Identifier: Apache-2.0
// `explain --db a --db b` and `query --db a --db b` end to end without root: two trace files
// written by the store's own writer, one 4-rank job with ranks 0-1 on host-a and 2-3 on host-b
// (same pids on both hosts), host-b's clock 1.5 s ahead and rank 3 entering every all-reduce
// 4 ms late. The real subcommands run in-process on a CLI11 app.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "query_cli.hpp"
#include "store_fixture.hpp"

namespace gpuwhy {
namespace {

using namespace gpuwhy::testing;
using nlohmann::json;

constexpr int64_t kSkew = 1'500 * kMs;

CliResult run_explain_cli(std::vector<std::string> args) {
  CLI::App app{"test"};
  cli::Runner run;
  cli::add_explain_command(app, run);
  args.insert(args.begin(), {"gpuwhy", "explain"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  app.parse(static_cast<int>(argv.size()), argv.data());
  CliResult r;
  if (!run) return r;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  r.code = run();
  r.out = ::testing::internal::GetCapturedStdout();
  r.err = ::testing::internal::GetCapturedStderr();
  return r;
}

// One host's file: `ranks` of a `nranks` job, pids 100, 101, ... on every host.
// `preempted_late`: the late rank lost its CPU to cpu_hog for the 4 ms before each entry (its
// lateness is then "runnable", not its own work).
void write_host(const std::string& path, const std::string& host, std::vector<int> ranks,
                int nranks, int64_t skew, int late_rank, int steps = 30,
                bool preempted_late = false) {
  store::SessionInfo s = session_info();
  s.host = host;
  s.boot_id = host + "-boot";
  auto w = store::TraceWriter::create(path, s);
  ASSERT_TRUE(w.ok()) << w.error().line();
  std::vector<Event> ev;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    const uint32_t pid = 100 + static_cast<uint32_t>(i);
    const uint64_t comm = 0x7f0000001000 + i * 0x1000;
    ApiCall init = call("ncclCommInitRank", kStart + 5 * kMs + skew, 2 * kMs, pid, pid);
    init.f.peer = r;
    init.f.nranks = nranks;
    init.f.addr = comm;
    ev.push_back(init);
    for (int k = 0; k < steps; ++k) {
      const int64_t t0 = kStart + 20 * kMs + k * 10 * kMs;
      const int64_t entry = t0 + (r == late_rank ? 4 * kMs : r * 20'000);
      const int64_t end = t0 + 4 * kMs + 200'000 + (k % 3) * 5'000;
      ApiCall c = call("ncclAllReduce", entry + skew, end - entry, pid, pid);
      c.f.addr = comm;
      c.f.bytes = 1 << 20;
      ev.push_back(c);
      if (preempted_late && r == late_rank)
        ev.push_back(offcpu(t0 + skew, 4 * kMs - 10'000, pid, pid, true, "cpu_hog", ""));
    }
  }
  ASSERT_TRUE(w.value()->write_batch(ev).ok());
  ASSERT_TRUE(w.value()->finish(kStart + 2'000 * kMs + skew).ok());
}

class ExplainHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = dir_.file("a.db");
    b_ = dir_.file("b.db");
    write_host(a_, "host-a", {0, 1}, 4, 0, 3);
    write_host(b_, "host-b", {2, 3}, 4, kSkew, 3);
  }
  TempDir dir_;
  std::string a_, b_;
};

TEST_F(ExplainHosts, NamesTheLateRankByHostRankAndPid) {
  const CliResult r = run_explain_cli({"--db", a_, "--db", b_, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  SCOPED_TRACE(j.dump(2));
  ASSERT_TRUE(j["straggler"].is_object());
  EXPECT_EQ(j["straggler"]["rank"], 3);
  EXPECT_EQ(j["straggler"]["host"], "host-b");
  EXPECT_EQ(j["straggler"]["pid"], 101);  // pid 101 is rank 1 on host-a and rank 3 on host-b
  EXPECT_EQ(j["straggler"]["last"], 30);
  EXPECT_NEAR(j["straggler"]["late_p50_ns"].get<double>(), 4.0 * kMs, 0.1 * kMs);
  EXPECT_NEAR(j["hosts"][1]["offset_ns"].get<double>(), -static_cast<double>(kSkew), 10'000);
  EXPECT_EQ(j["hosts"][0]["offset_ns"], 0);

  const CliResult text = run_explain_cli({"--db", a_, "--db", b_});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("rank 3 of 4 on host-b"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("clock offset -1.50"), std::string::npos) << text.out;
}

// Why, from the straggler's own host file: its time budget per collective against the other
// ranks' (runnable, held by cpu_hog), and that host's own report about it.
TEST(ExplainHostsWhy, NamesTheCpuTheStragglerWaitedFor) {
  TempDir dir;
  const std::string a = dir.file("a.db"), b = dir.file("b.db");
  write_host(a, "host-a", {0, 1}, 4, 0, 3);
  write_host(b, "host-b", {2, 3}, 4, kSkew, 3, 30, /*preempted_late=*/true);
  const CliResult r = run_explain_cli({"--db", a, "--db", b, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  SCOPED_TRACE(j.dump(2));
  const json& s = j["straggler"];
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["host"], "host-b");
  EXPECT_EQ(s["cause"], "runnable");
  EXPECT_NE(s["why"].get<std::string>().find("cpu_hog"), std::string::npos);
  EXPECT_NEAR(s["per_collective"]["runnable_ns"].get<double>(), 4.0 * kMs, 0.1 * kMs);
  bool contention = false;
  for (const json& c : s["host_chains"]) contention = contention || c["kind"] == "cpu_contention";
  EXPECT_TRUE(contention) << "host-b's own report names the contention";
}

TEST_F(ExplainHosts, OneFileIsTheSingleHostReport) {
  const CliResult r = run_explain_cli({"--db", a_, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_TRUE(j.contains("chains")) << "the single-file report, unchanged";
  EXPECT_FALSE(j.contains("straggler"));
}

TEST_F(ExplainHosts, RefusesWhatItCannotJoin) {
  const std::string c = dir_.file("c.db");
  write_host(c, "host-c", {0, 1}, 2, 0, 1);
  CliResult r = run_explain_cli({"--db", a_, "--db", c});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("shares no NCCL communicator"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());

  r = run_explain_cli({"--db", a_, "--db", a_});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("is given twice"), std::string::npos) << r.err;

  r = run_explain_cli({"--db", a_, "--db", b_, "--since", "1s"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("pass one --db"), std::string::npos) << r.err;
}

TEST_F(ExplainHosts, QueryLeadsEachRowWithItsHost) {
  CliResult r = run_query_cli({"--db", a_, "--db", b_, "--format", "csv",
                               "SELECT peer AS rank, nranks FROM v_calls "
                               "WHERE name = 'ncclCommInitRank' ORDER BY peer"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "host,rank,nranks\r\nhost-a,0,4\r\nhost-a,1,4\r\nhost-b,2,4\r\nhost-b,3,4\r\n");
  // The SQL positional after the files, and one file: no host column.
  r = run_query_cli({"SELECT count(*) AS n FROM v_calls", "--db", a_, "--format", "csv"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "n\r\n62\r\n");
  r = run_query_cli(
      {"--db", a_, "--db", b_, "--format", "json", "SELECT count(*) AS n FROM v_calls"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out),
            json::parse(R"([{"host":"host-a","n":62},{"host":"host-b","n":62}])"));
  // Still read-only on every file.
  r = run_query_cli({"--db", a_, "--db", b_, "DELETE FROM processes"});
  EXPECT_NE(r.code, 0);
}

}  // namespace
}  // namespace gpuwhy
