// SPDX-License-Identifier: Apache-2.0
// trace --metrics against its real consumers: a trace of the simulated runtime serves Prometheus
// metrics on a free loopback port; the scrape counts exactly the workload's calls, passes
// Debian's `promtool check metrics`, and a real `prometheus` server scraping it ingests the
// series (queried through its HTTP API). The port refused when taken, before anything is traced.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

using namespace std::chrono_literals;

// A loopback port nobody listens on now (the kernel's pick, released for the program to take).
uint16_t free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// One HTTP/1.0 GET on loopback (no chunked replies): the body, or "" when it did not answer 200.
std::string http_get(uint16_t port, const std::string& path, const std::string& accept = "") {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n";
    if (!accept.empty()) req += "Accept: " + accept + "\r\n";
    req += "\r\n";
    (void)!send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    char buf[65536];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;)
      out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const size_t body = out.find("\r\n\r\n");
  if (out.rfind("HTTP/1.", 0) != 0 || out.substr(9, 3) != "200" || body == std::string::npos)
    return "";
  return out.substr(body + 4);
}

// A sample's name and its labels ("name{a=\"x\",b=\"y\"}" -> name, {a: x, b: y}).
std::pair<std::string, std::map<std::string, std::string>> parse_series(const std::string& s) {
  const size_t brace = s.find('{');
  std::map<std::string, std::string> labels;
  if (brace == std::string::npos) return {s, labels};
  size_t i = brace + 1;
  while (i < s.size() && s[i] != '}') {
    const size_t eq = s.find("=\"", i);
    if (eq == std::string::npos) break;
    std::string value;
    size_t j = eq + 2;
    for (; j < s.size() && s[j] != '"'; ++j) {
      if (s[j] == '\\' && j + 1 < s.size()) ++j;
      value += s[j];
    }
    labels[s.substr(i, eq - i)] = value;
    i = j + 1;
    if (i < s.size() && s[i] == ',') ++i;
  }
  return {s.substr(0, brace), labels};
}

// The sum of the samples of `series` ("name{labels}") in an exposition over every series of that
// name whose labels include the ones given (a process's calls on all its devices); -1 when none.
double sample(const std::string& text, const std::string& series) {
  const auto [name, want] = parse_series(series);
  std::istringstream in(text);
  double sum = 0;
  bool found = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    const auto [n, labels] = parse_series(line.substr(0, space));
    if (n != name) continue;
    bool all = true;
    for (const auto& [k, v] : want) all = all && labels.count(k) && labels.at(k) == v;
    if (!all) continue;
    sum += std::stod(line.substr(space + 1));
    found = true;
  }
  return found ? sum : -1;
}

std::string program(const char* name) {
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/bin"}) {
    const std::string p = std::string(dir) + "/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

class Metrics : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
  TempDir dir;
};

TEST_F(Metrics, ScrapeCountsTheCallsAndPrometheusIngestsThem) {
  constexpr int kCalls = 5000;
  const uint16_t port = free_port();
  const std::string where = "127.0.0.1:" + std::to_string(port);
  // Only the test's two workloads are traced (--pid): on a shared machine another process may
  // call a GPU runtime, even one named launch_storm. Both wait until the probes are in place.
  const std::string go = dir.file("go");
  Child storm({workload("launch_storm"), "--calls", std::to_string(kCalls), "--wait-file", go},
              dir.path);
  TempDir calls_dir;  // its own output files
  Child calls_run({workload("sim_cudart_calls"), "--wait-file", go}, calls_dir.path);
  // --full: every launch timed, so the duration histogram holds every call. By default a thread
  // launching faster than --untimed-above keeps one duration in 64, and the histogram holds the
  // timed calls only (gpuwhy_api_calls_total still counts every one).
  Agent agent(
      dir.file("t.db"),
      {"--no-host-libs", "--lib", sim_dir() + "/libcudart.so.13", "--metrics", where, "--full",
       "--pid", std::to_string(storm.pid()) + "," + std::to_string(calls_run.pid())},
      dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();

  // The port is taken: a second trace says so in one line and exits before tracing anything.
  {
    RunResult second =
        run({gpuwhy_binary(), "trace", "--quiet", "--out", dir.file("t2.db"), "--metrics", where});
    EXPECT_NE(second.exit_code, 0);
    EXPECT_NE(second.err.find("cannot listen on " + where), std::string::npos) << second.err;
    EXPECT_EQ(std::count(second.err.begin(), second.err.end(), '\n'), 1) << second.err;
    struct stat st {};
    EXPECT_NE(stat(dir.file("t2.db").c_str(), &st), 0) << "no trace file when refused";
    // With a command: it never runs.
    RunResult cmd = run({gpuwhy_binary(), "trace", "--quiet", "--out", dir.file("t3.db"),
                         "--metrics", where, "--", "/bin/sh", "-c", "touch " + dir.file("ran")});
    EXPECT_NE(cmd.exit_code, 0);
    EXPECT_NE(cmd.err.find("cannot listen on " + where), std::string::npos) << cmd.err;
    EXPECT_NE(stat(dir.file("ran").c_str(), &st), 0) << "the command ran";
    RunResult bad = run({gpuwhy_binary(), "trace", "--metrics", "[::1]9464"});
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
    EXPECT_NE(bad.err.find("--metrics '[::1]9464'"), std::string::npos) << bad.err;
    RunResult empty = run({gpuwhy_binary(), "trace", "--metrics", ""});
    EXPECT_EQ(empty.exit_code, 2) << empty.err;
  }

  std::ofstream(go) << "\n";
  ASSERT_EQ(storm.wait(), 0) << storm.stderr_text();
  ASSERT_EQ(calls_run.wait(), 0) << calls_run.stderr_text();

  // The reader hands a batch over within ~100 ms; the totals are published once a second. The
  // calls: kCalls launches and one cudaStreamSynchronize (cudaStreamCreate is not probed).
  const std::string calls =
      "gpuwhy_api_calls_total{process=\"launch_storm\",api=\"cudaLaunchKernel\"}";
  std::string text;
  for (auto until = std::chrono::steady_clock::now() + 10s;
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(200ms)) {
    text = http_get(port, "/metrics");
    if (sample(text, calls) == kCalls &&
        sample(text, "gpuwhy_events_recorded_total{kind=\"api_call\"}") >= kCalls + 1)
      break;
  }
  ASSERT_EQ(sample(text, calls), kCalls) << text;
  EXPECT_EQ(
      sample(text,
             "gpuwhy_api_calls_total{process=\"launch_storm\",api=\"cudaStreamSynchronize\"}"),
      1);
  // The histogram is by API only: sim_cudart_calls launched once too.
  EXPECT_EQ(sample(text, "gpuwhy_api_call_seconds_count{api=\"cudaLaunchKernel\"}"), kCalls + 1);
  EXPECT_GE(sample(text, "gpuwhy_events_recorded_total{kind=\"api_call\"}"), kCalls + 1);
  EXPECT_EQ(sample(text, "gpuwhy_events_lost_total{source=\"bpf\",cause=\"events_ring_full\"}"), 0);
  EXPECT_EQ(sample(text, "gpuwhy_build_info{version=\"" GPUWHY_VERSION "\"}"), 1);
  EXPECT_GT(sample(text, "process_start_time_seconds"), 1.6e9);
  // Copy bytes by direction: sim_cudart_calls makes every cudart call once and prints the
  // arguments it passed (a 2D copy moves width x height bytes).
  {
    const char* kDirection[] = {"host_to_host", "host_to_device", "device_to_host",
                                "device_to_device", "default"};
    std::map<std::string, double> expected;  // sample name{labels} -> bytes
    std::istringstream lines(calls_run.stdout_text());
    for (std::string line; std::getline(lines, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || j["api"].get<std::string>().find("Memcpy") == std::string::npos)
        continue;
      const auto& a = j["args"];
      if (!a.contains("kind")) continue;
      const double bytes = a.contains("count")
                               ? a["count"].get<double>()
                               : a["width"].get<double>() * a["height"].get<double>();
      // The process label is the kernel's 15-byte comm: "sim_cudart_calls" loses its last 's'.
      expected["gpuwhy_api_bytes_total{process=\"sim_cudart_call\",api=\"" +
               j["api"].get<std::string>() + "\",direction=\"" + kDirection[a["kind"].get<int>()] +
               "\"}"] += bytes;
    }
    ASSERT_GE(expected.size(), 4u) << calls_run.stdout_text();
    std::string scrape;
    for (auto until = std::chrono::steady_clock::now() + 10s;
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(200ms)) {
      scrape = http_get(port, "/metrics");
      if (sample(scrape, expected.rbegin()->first) >= 0) break;
    }
    for (const auto& [name, bytes] : expected) EXPECT_EQ(sample(scrape, name), bytes) << name;
  }

  // OpenMetrics when asked for it.
  const std::string om = http_get(port, "/metrics", "application/openmetrics-text;version=1.0.0");
  EXPECT_NE(om.find("# TYPE gpuwhy_api_calls counter\n"), std::string::npos) << om;
  EXPECT_EQ(om.substr(om.size() - 6), "# EOF\n");

  const std::string promtool = program("promtool");
  if (promtool.empty())
    GTEST_SKIP() << "promtool is not installed (Debian package prometheus; "
                    "scripts/install-export-tools installs it): the format check did not run";
  {
    std::ofstream(dir.file("scrape.txt")) << text;
    RunResult check =
        run({"/bin/sh", "-c", promtool + " check metrics < " + dir.file("scrape.txt")});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  }

  const std::string prometheus = program("prometheus");
  if (prometheus.empty())
    GTEST_SKIP()
        << "prometheus is not installed (Debian package prometheus): ingestion not checked";
  const uint16_t prom_port = free_port();
  std::ofstream(dir.file("prometheus.yml"))
      << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
      << "scrape_configs:\n  - job_name: gpuwhy\n    static_configs:\n"
      << "      - targets: ['" << where << "']\n";
  Child prom({prometheus, "--config.file=" + dir.file("prometheus.yml"),
              "--storage.tsdb.path=" + dir.file("tsdb"),
              "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"},
             dir.path);
  // Prometheus negotiates OpenMetrics first: `up` is 1 only when its parser took the scrape.
  const std::string query =
      "/api/v1/query?query=sum(gpuwhy_api_calls_total%7Bprocess%3D%22launch_storm%22%2C"
      "api%3D%22cudaLaunchKernel%22%7D)"
      "%20and%20on()%20(up%7Bjob%3D%22gpuwhy%22%7D%20%3D%3D%201)";
  double ingested = -1;
  std::string answer;
  for (auto until = std::chrono::steady_clock::now() + 20s;
       std::chrono::steady_clock::now() < until && ingested != kCalls;
       std::this_thread::sleep_for(300ms)) {
    answer = http_get(prom_port, query);
    if (answer.empty()) continue;
    const auto j = nlohmann::json::parse(answer, nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success") continue;
    const auto& result = j["data"]["result"];
    if (!result.empty()) ingested = std::stod(result[0]["value"][1].get<std::string>());
  }
  EXPECT_EQ(ingested, kCalls) << answer << "\nprometheus: " << prom.stderr_text();
  prom.stop(SIGTERM);
  EXPECT_EQ(agent.stop(), 0) << agent.stderr_text();
}

}  // namespace
}  // namespace gpuwhy::testing
