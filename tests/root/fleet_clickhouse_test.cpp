// SPDX-License-Identifier: Apache-2.0
// The fleet path (docs/fleet.md): two hosts' traces of one 4-rank NCCL job (the multi-host
// fixture: ranks 2-3 on host-b, whose clock runs 2.5 s ahead) exported with `--format
// clickhouse`, loaded by stock clickhouse-client into a clickhouse-server this test starts on
// loopback, and asked docs/fleet.md's own queries: the late rank must be the one `explain --db a
// --db b` names, and host-b's clock offset the one explain fits.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/multihost.hpp"
#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

using nlohmann::json;

std::string which(const std::string& name) {
  for (const char* dir : {"/usr/bin/", "/usr/sbin/", "/usr/local/bin/"})
    if (access((std::string(dir) + name).c_str(), X_OK) == 0) return std::string(dir) + name;
  return {};
}

// A TCP port free on loopback now (the kernel's pick).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

// The SQL of the ```sql block after "<!-- fleet-query: NAME -->" in docs/fleet.md.
std::string fleet_query(const std::string& name) {
  std::ifstream in(std::string(GW_SOURCE_DIR) + "/docs/fleet.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const size_t at = doc.find("<!-- fleet-query: " + name + " -->");
  if (at == std::string::npos) return {};
  const size_t open = doc.find("```sql\n", at);
  const size_t close = doc.find("```", open + 7);
  if (open == std::string::npos || close == std::string::npos) return {};
  return doc.substr(open + 7, close - open - 7);
}

// A clickhouse-server of its own: data in a temp dir, listening on 127.0.0.1 only.
class Server {
 public:
  explicit Server(const TempDir& dir) : port_(free_port()) {
    const std::string root = dir.file("ch");
    std::ofstream(dir.file("ch_users.xml"))
        << "<?xml version=\"1.0\"?><yandex><profiles><default/></profiles><users><default>"
           "<password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile>"
           "<quota>default</quota></default></users><quotas><default/></quotas></yandex>\n";
    std::ofstream(dir.file("ch_config.xml"))
        << "<?xml version=\"1.0\"?><yandex><logger><level>warning</level><log>" << root
        << "/server.log</log><errorlog>" << root << "/error.log</errorlog><console>0</console>"
        << "</logger><listen_host>127.0.0.1</listen_host><tcp_port>" << port_ << "</tcp_port><path>"
        << root << "/data/</path><tmp_path>" << root << "/tmp/</tmp_path><user_files_path>" << root
        << "/files/</user_files_path>"
        << "<users_config>" << dir.file("ch_users.xml") << "</users_config>"
        << "<default_profile>default</default_profile><default_database>default"
        << "</default_database><mark_cache_size>5368709</mark_cache_size></yandex>\n";
    child_ = std::make_unique<Child>(
        std::vector<std::string>{which("clickhouse-server"),
                                 "--config-file=" + dir.file("ch_config.xml")},
        dir.path);
    for (int i = 0; i < 100 && !ready_; ++i) {
      ready_ = client({"--query", "SELECT 1"}).exit_code == 0;
      if (!ready_) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  ~Server() {
    if (child_) child_->stop(15, 30);
  }
  bool ready() const { return ready_; }
  std::string log() const { return child_ ? child_->stderr_text() : ""; }

  RunResult client(std::vector<std::string> args) const {
    std::vector<std::string> argv = {which("clickhouse-client"), "--host", "127.0.0.1", "--port",
                                     std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, {}, 60);
  }
  // Runs clickhouse-client with `file` on its standard input.
  RunResult client_with_input(const std::string& args, const std::string& file) const {
    return run({"/bin/sh", "-c",
                which("clickhouse-client") + " --host 127.0.0.1 --port " + std::to_string(port_) +
                    " " + args + " < '" + file + "'"},
               {}, 60);
  }

 private:
  int port_;
  std::unique_ptr<Child> child_;
  bool ready_ = false;
};

// TabSeparated rows of a query's output.
std::vector<std::vector<std::string>> rows_of(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::istringstream l(line);
    std::string cell;
    while (std::getline(l, cell, '\t')) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

TEST(Fleet, ClickHouseNamesTheRankExplainNames) {
  if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  if (which("clickhouse-server").empty() || which("clickhouse-client").empty())
    GTEST_SKIP() << "clickhouse-server/clickhouse-client not installed "
                    "(scripts/install-export-tools installs Debian's)";
  const TwoHostJob& job = two_host_job();
  ASSERT_TRUE(job.ok) << job.error;

  RunResult ex = run({gpuwhy_binary(), "explain", "--db", job.a, "--db", job.b, "--json"});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  const json report = json::parse(ex.out);
  ASSERT_TRUE(report["straggler"].is_object()) << report.dump(2);

  TempDir dir;
  for (const auto& [db, out] :
       {std::pair{job.a, dir.file("ea")}, std::pair{job.b, dir.file("eb")}}) {
    RunResult e = run({gpuwhy_binary(), "export", "--db", db, "--format", "clickhouse", "--job",
                       "train-42", "-o", out});
    ASSERT_EQ(e.exit_code, 0) << e.err;
  }
  Server server(dir);
  ASSERT_TRUE(server.ready()) << "clickhouse-server did not answer: " << server.log();
  RunResult schema = server.client_with_input("--multiquery", dir.file("ea") + "/schema.sql");
  ASSERT_EQ(schema.exit_code, 0) << schema.err;
  for (const std::string& e : {dir.file("ea"), dir.file("eb")}) {
    for (const char* table : {"nccl_collectives", "nccl_ranks"}) {
      RunResult ins = server.client_with_input(
          std::string("--query 'INSERT INTO gpuwhy.") + table + " FORMAT JSONEachRow'",
          e + "/" + table + ".jsonl");
      ASSERT_EQ(ins.exit_code, 0) << ins.err;
    }
  }
  RunResult n = server.client({"--query", "SELECT count() FROM gpuwhy.nccl_ranks"});
  ASSERT_EQ(n.exit_code, 0) << n.err;
  EXPECT_EQ(n.out, "4\n");

  // docs/fleet.md's late-rank query: its top row is explain's straggler.
  const std::string late = fleet_query("late_rank");
  ASSERT_FALSE(late.empty()) << "docs/fleet.md has no late_rank query";
  RunResult q = server.client({"--query", late});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const auto rows = rows_of(q.out);
  ASSERT_FALSE(rows.empty()) << q.out;
  ASSERT_GE(rows[0].size(), 5u) << q.out;
  EXPECT_EQ(rows[0][0], "train-42");
  EXPECT_EQ(rows[0][1], std::to_string(report["straggler"]["rank"].get<int>())) << q.out;
  EXPECT_EQ(rows[0][2], report["straggler"]["host"].get<std::string>()) << q.out;
  EXPECT_EQ(rows[0][3], std::to_string(report["straggler"]["pid"].get<int>())) << q.out;

  // Its clock fit agrees with explain's within explain's stated residual.
  RunResult off = server.client({"--query", fleet_query("clock_offsets")});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  for (const auto& r : rows_of(off.out)) {
    ASSERT_GE(r.size(), 3u) << off.out;
    if (r[1] != "host-b") continue;
    const int64_t explain_offset = report["hosts"][1]["offset_ns"].get<int64_t>();
    const int64_t tolerance =
        std::max<int64_t>(2 * report["hosts"][1]["residual_p90_ns"].get<int64_t>(), 200'000);
    EXPECT_LE(std::llabs(std::stoll(r[2]) - explain_offset), tolerance) << off.out;
  }

  // The other documented queries run.
  for (const char* name : {"late_rank_per_hour", "rank_budgets", "clock_offsets_async"}) {
    const std::string sql = fleet_query(name);
    ASSERT_FALSE(sql.empty()) << name;
    RunResult r = server.client({"--query", sql});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    // The async variant may find no blocked sync in this blocking job: it must only run.
    if (std::string(name) != "clock_offsets_async") {
      EXPECT_FALSE(r.out.empty()) << name;
    }
  }
}

}  // namespace
}  // namespace gpuwhy::testing
