// SPDX-License-Identifier: Apache-2.0
// `gpuwhy trace -- python job.py` of a job with a long start-up and a tail (issue 31): explain
// finds the phases from the rate of the job's GPU work, reports the steady state's cause first
// (its share of the steps' own time, as the job measured it) and summarises the start-up and
// the tail last. The same steps without a start-up or a tail get neither.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/scenario.hpp"

namespace gpuwhy::testing {
namespace {

using nlohmann::json;

std::string pyenv_python(const std::string& version, const std::string& name) {
  std::vector<std::string> roots;
  if (const char* home = std::getenv("HOME"))
    roots.push_back(std::string(home) + "/.pyenv/versions");
  roots.push_back("/root/.pyenv/versions");
  for (const std::string& r : roots) {
    const std::string path = r + "/" + version + "/bin/python" + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return {};
}

const json* chain(const json& report, const std::string& kind) {
  for (const json& c : report["chains"])
    if (c["kind"] == kind) return &c;
  return nullptr;
}

bool has_caveat(const json& report, const std::string& kind) {
  for (const json& c : report["caveats"])
    if (c["kind"] == kind) return true;
  return false;
}

class Phases : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    python_ = pyenv_python("3.11.7", "3.11");
    if (python_.empty())
      GTEST_SKIP() << "no pyenv Python 3.11.7 under $HOME/.pyenv or /root/.pyenv";
  }
  // `gpuwhy trace -- python phased_job.py`; the job's summary and explain's report.
  void trace(const std::vector<std::string>& extra, json& summary, json& report) {
    const std::string db = dir_.file("t.db");
    std::vector<std::string> argv = {
        gpuwhy_binary(),
        "trace",
        "--quiet",
        "-o",
        db,
        "--",
        python_,
        std::string(GW_SOURCE_DIR) + "/tests/workloads/python/phased_job.py",
        sim_dir() + "/libcudart.so.13"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    RunResult w = run(argv, {{"GWSIM_KERNEL_NS", "150000"}});
    ASSERT_EQ(w.exit_code, 0) << w.err;
    summary = summary_of(w.out);
    ASSERT_TRUE(summary.is_object()) << w.out;
    RunResult ex = run({gpuwhy_binary(), "explain", "--db", db, "--json"});
    ASSERT_EQ(ex.exit_code, 0) << ex.err;
    report = json::parse(ex.out);
  }
  std::string python_;
  TempDir dir_;
};

TEST_F(Phases, SteadyStateCauseComesFirstAndTheStartUpAndTailLast) {
  json w, report;
  ASSERT_NO_FATAL_FAILURE(trace({}, w, report));
  SCOPED_TRACE("report: " + report["chains"].dump(1) + "\nphases: " + report["phases"].dump() +
               "\nworkload: " + w.dump());
  ASSERT_TRUE(has_caveat(report, "steady_state")) << report["caveats"].dump(1);
  // The report's window is the steps': it begins at their first launch and ends with their
  // last sync, within one step (the job's clock is read just before the first and after the
  // last step's sleep; a step is under 10 ms).
  const int64_t t0 = report["trace"]["start_ns"].get<int64_t>();
  const json& win = report["trace"]["window"];
  const int64_t from = t0 + win["start_rel_ns"].get<int64_t>();
  const int64_t to = t0 + win["end_rel_ns"].get<int64_t>();
  constexpr int64_t kStep = 10'000'000;
  EXPECT_GE(from, w["steady_start_ns"].get<int64_t>() - kStep);
  EXPECT_LE(from, w["steady_start_ns"].get<int64_t>() + kStep);
  EXPECT_GE(to, w["steady_end_ns"].get<int64_t>() - kStep);
  EXPECT_LE(to, w["steady_end_ns"].get<int64_t>() + kStep);
  // The steady state's cause first, with the steps' own share of sleep.
  ASSERT_FALSE(report["chains"].empty());
  const json& top = report["chains"][0];
  EXPECT_EQ(top["kind"], "gpu_idle");
  EXPECT_NEAR(top["share"].get<double>(), w["sleep_share"].get<double>(), 0.05);
  // The start-up and the tail summarised last, each saying where the steps begin or end.
  const json* su = chain(report, "start_up");
  const json* tail = chain(report, "tail");
  ASSERT_NE(su, nullptr);
  ASSERT_NE(tail, nullptr);
  EXPECT_EQ((*su)["severity"], "LOW");
  EXPECT_EQ((*tail)["severity"], "LOW");
  const size_t n = report["chains"].size();
  ASSERT_GE(n, 3u);
  for (size_t i = n - 2; i < n; ++i) {
    const std::string k = report["chains"][i]["kind"].get<std::string>();
    EXPECT_TRUE(k == "start_up" || k == "tail") << "chain " << i << " is " << k;
  }
}

TEST_F(Phases, StepsAloneHaveNoStartUpOrTail) {
  json w, report;
  ASSERT_NO_FATAL_FAILURE(trace({"--no-phases"}, w, report));
  SCOPED_TRACE("report: " + report["chains"].dump(1) + "\nworkload: " + w.dump());
  EXPECT_FALSE(has_caveat(report, "steady_state"));
  EXPECT_EQ(chain(report, "start_up"), nullptr);
  EXPECT_EQ(chain(report, "tail"), nullptr);
  ASSERT_FALSE(report["chains"].empty());
  EXPECT_EQ(report["chains"][0]["kind"], "gpu_idle");
  EXPECT_NEAR(report["chains"][0]["share"].get<double>(), w["sleep_share"].get<double>(), 0.05);
}

}  // namespace
}  // namespace gpuwhy::testing
