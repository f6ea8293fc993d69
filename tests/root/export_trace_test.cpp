// SPDX-License-Identifier: Apache-2.0
// The exports of a real trace: the agent with real eBPF traces a planted lock wait on the
// simulated runtime (with --stacks), then every export is read back by its consumer. The unit
// tests (tests/unit/export_test.cpp) do the same on the golden fixtures; this one adds what only a
// real trace has: chunks written by the agent, stacks and call sites, wake-ups by real threads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/perfetto_decode.hpp"
#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

using nlohmann::json;

// The program's path ("" when not installed): run() does not search PATH.
std::string which(const std::string& program) {
  RunResult r = run({"/bin/sh", "-c", "command -v " + program});
  while (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
  return r.exit_code == 0 ? r.out : "";
}

std::string count(const std::string& db, const std::string& sql) {
  RunResult r = run({gpuwhy_binary(), "query", "--format", "csv", "--db", db, sql});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out.substr(r.out.find('\n') + 1);
}

json rows(const std::vector<std::string>& argv) {
  RunResult r = run(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.out.find_first_not_of(" \n") == std::string::npos) return json::array();
  return json::parse(r.out, nullptr, false);
}

TEST(ExportOfARealTrace, EveryConsumerReadsWhatTheAgentRecorded) {
  if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::string sqlite3 = which("sqlite3");
  if (sqlite3.empty() || which("protoc").empty())
    GTEST_SKIP() << "sqlite3 or protoc is not installed (scripts/install-export-tools)";
  TempDir dir;
  const std::string db = dir.file("t.db");
  {
    Agent agent(db, {"--no-host-libs", "--stacks"}, dir);
    ASSERT_TRUE(agent.ready()) << agent.stderr_text();
    RunResult w = run({workload("sim_train"), "--scenario", "lock", "--steps", "60"},
                      {{"GW_START_DELAY_MS", "300"}});
    ASSERT_EQ(w.exit_code, 0) << w.err;
    ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  }
  auto exp = [&](const std::string& format, const std::string& out) {
    RunResult r = run({gpuwhy_binary(), "export", "--db", db, "--format", format, "-o", out});
    EXPECT_EQ(r.exit_code, 0) << format << ": " << r.err;
  };

  // Plain SQLite, read by stock sqlite3: the same calls, the same per-operation totals.
  const std::string plain = dir.file("plain.db");
  exp("sqlite", plain);
  {
    for (const char* q : {"SELECT count(*) AS n, sum(dur) AS ns FROM v_calls",
                          "SELECT name, sum(calls) AS calls, sum(dur_ns) AS ns FROM v_op_totals "
                          "GROUP BY name ORDER BY name",
                          "SELECT name, symbol, calls FROM v_call_sites ORDER BY name, symbol",
                          "SELECT count(*) AS n, sum(offcpu_ns) AS ns FROM v_call_offcpu"}) {
      const json want = rows({gpuwhy_binary(), "query", "--format", "json", "--db", db, q});
      ASSERT_FALSE(want.empty()) << q;
      EXPECT_EQ(rows({sqlite3, "-readonly", "-json", plain, q}), want) << q;
    }
  }

  // Perfetto: decodes with Perfetto's own .proto (a copy in tests/export/perfetto) with no
  // unknown field; every call with a duration is a slice, every off-CPU interval too, and the
  // launches carry their call site (an annotation whose interned name is "call_site"). The
  // clock snapshot relates REALTIME to MONOTONIC by the session's own offset, and the processes
  // that woke traced threads (kernel threads among them) are named by their task names.
  const std::string pf = dir.file("t.pftrace");
  exp("perfetto", pf);
  {
    RunResult d = decode_with_perfettos_proto(pf);
    ASSERT_EQ(d.exit_code, 0) << d.err;
    size_t begins = 0, sites = 0, unknown = 0, pid_named = 0, processes = 0;
    std::vector<int64_t> clocks;
    std::string site_iid, prev;
    // The interned name's iid first: protoc prints a packet's InternedData after its event.
    const size_t named = d.out.find("name: \"call_site\"");
    ASSERT_NE(named, std::string::npos);
    const size_t iid = d.out.rfind("iid: ", named);
    site_iid = d.out.substr(iid + 5, d.out.find('\n', iid) - iid - 5);
    std::istringstream lines(d.out);
    for (std::string line; std::getline(lines, line); prev = line) {
      const std::string l = line.substr(std::min(line.find_first_not_of(' '), line.size()));
      if (!l.empty() && std::isdigit(static_cast<unsigned char>(l[0]))) ++unknown;
      if (l == "type: TYPE_SLICE_BEGIN") ++begins;
      if (!site_iid.empty() && l == "name_iid: " + site_iid &&
          prev.find("debug_annotations {") != std::string::npos)
        ++sites;
      if (l.starts_with("process_name: "))
        ++processes, pid_named += l.starts_with("process_name: \"pid ");
      if (l.starts_with("timestamp: ") && prev.find("clock_id: ") != std::string::npos)
        clocks.push_back(std::stoll(l.substr(11)));
    }
    EXPECT_EQ(unknown, 0u) << "fields Perfetto's own format does not have";
    ASSERT_EQ(clocks.size(), 2u);
    EXPECT_EQ(std::to_string(clocks[0] - clocks[1]) + "\r\n",
              count(db, "SELECT mono_to_wall_ns FROM session"));
    EXPECT_EQ(std::to_string(processes) + "\r\n",
              count(db,
                    "SELECT count(*) FROM (SELECT pid FROM api_calls UNION SELECT pid FROM offcpu "
                    "UNION SELECT waker_pid FROM offcpu WHERE waker_tid NOT NULL AND waker_tid != "
                    "0 AND NOT preempted)"))
        << "a track per process, the wakers' included";
    EXPECT_EQ(std::to_string(pid_named) + "\r\n",
              count(db,
                    "SELECT count(DISTINCT waker_pid) FROM offcpu WHERE waker_tid NOT NULL AND "
                    "waker_tid != 0 AND NOT preempted AND waker_pid NOT IN (SELECT pid FROM "
                    "processes WHERE comm NOT NULL) AND waker_pid NOT IN (SELECT waker_pid FROM "
                    "offcpu WHERE waker_pid NOT NULL AND waker_comm NOT NULL)"));
    const std::string slices = count(db,
                                     "SELECT (SELECT count(*) FROM api_calls WHERE dur NOT "
                                     "NULL) + (SELECT count(*) FROM offcpu)");
    EXPECT_EQ(std::to_string(begins) + "\r\n", slices);
    EXPECT_EQ(std::to_string(sites) + "\r\n",
              count(db,
                    "SELECT count(*) FROM api_calls AS c JOIN stack_frames AS f ON "
                    "f.stack_id = c.stack_id AND f.call_site = 1"));
    EXPECT_GT(sites, 0u);
  }

  // The HTML page carries explain --json's report.
  const std::string page = dir.file("r.html");
  RunResult h = run({gpuwhy_binary(), "explain", "--db", db, "--html", page});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  std::ifstream in(page);
  std::stringstream html;
  html << in.rdbuf();
  const std::string s = html.str();
  const std::string tag = "id=\"gpuwhy-explain\">";
  const size_t at = s.find(tag);
  ASSERT_NE(at, std::string::npos);
  RunResult j = run({gpuwhy_binary(), "explain", "--db", db, "--json"});
  EXPECT_EQ(json::parse(s.substr(at + tag.size(), s.find("</script>", at) - at - tag.size())),
            json::parse(j.out));
  EXPECT_NE(s.find("id=\"chain-1\""), std::string::npos)
      << "the planted lock wait should be on the page";
}

}  // namespace
}  // namespace gpuwhy::testing
