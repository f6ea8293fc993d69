// SPDX-License-Identifier: Apache-2.0
// Test support for the scenario suites (root/scenario_test.cpp, root/budget_scenario_test.cpp):
// trace one sim_train scenario with the real agent, read explain's JSON report and the
// workload's JSON summary lines. Header-only: the root test binary globs root/*.cpp only.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace gpuwhy::testing {

// A chain's culprit, or a failure that shows the chain when it names none (a null culprit must
// fail the test, not throw out of it).
inline ::testing::AssertionResult HasCulprit(const nlohmann::json& chain) {
  if (chain.contains("culprit") && chain["culprit"].is_object())
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the chain names no culprit: " << chain.dump();
}

// Every line of a workload's stdout that parses as one of its JSON summaries, in order.
inline std::vector<nlohmann::json> summaries_of(const std::string& out) {
  std::vector<nlohmann::json> all;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(start, end - start);
    if (!line.empty() && line[0] == '{') {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.contains("workload")) all.push_back(std::move(j));
    }
    start = end + 1;
  }
  return all;
}

// The last line of the workload's stdout that parses as its JSON summary (a rank's own
// "rank_done" line does not count).
inline nlohmann::json summary_of(const std::string& out) {
  nlohmann::json last;
  for (nlohmann::json& j : summaries_of(out))
    if (!j.contains("rank_done")) last = std::move(j);
  return last;
}

// One scenario traced: the agent started with `flags` (besides --no-host-libs), sim_train run
// with `args` (besides the scenario) once the probes are attached, the agent stopped, and
// explain's JSON report read. The trace stays in `dir` (t.db).
struct TracedScenario {
  std::string db;
  RunResult workload;
  nlohmann::json report;
};

// GPUWHY_TEST_REPORT_DIR=DIR: each scenario's explain report is also written to DIR, named by
// the scenario, its arguments and the trace flags (and _runN for repeats), for comparing a suite's
// answers between two trace modes (bench/compare_reports.py; docs/testing.md).
inline void save_report(const std::string& scenario, const std::vector<std::string>& args,
                        const std::vector<std::string>& flags, const nlohmann::json& report) {
  const char* dir = std::getenv("GPUWHY_TEST_REPORT_DIR");
  if (!dir || !*dir) return;
  std::string name = scenario;
  for (const std::vector<std::string>* words : {&args, &flags})
    for (const std::string& w : *words) name += "_" + w;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.') ch = '_';
  std::string path;
  for (int run = 1;; ++run) {
    path = std::string(dir) + "/" + name + "_run" + std::to_string(run) + ".json";
    if (!std::filesystem::exists(path)) break;
  }
  std::ofstream(path) << report.dump(1) << "\n";
}

// `wrap`: a command line the workload's is appended to (`sh -c '...; exec "$@"' sh`): how a test
// starts it the way a container runtime would, inside a cgroup.
inline void trace_scenario(const TempDir& dir, const std::string& scenario,
                           const std::vector<std::string>& args,
                           const std::vector<std::string>& flags, TracedScenario& out,
                           const std::vector<std::string>& wrap = {}) {
  out.db = dir.file("t.db");
  std::vector<std::string> agent_flags = {"--no-host-libs"};
  agent_flags.insert(agent_flags.end(), flags.begin(), flags.end());
  Agent agent(out.db, agent_flags, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  std::vector<std::string> argv = wrap;
  for (const std::string& a : {workload("sim_train"), std::string("--scenario"), scenario})
    argv.push_back(a);
  argv.insert(argv.end(), args.begin(), args.end());
  // The process loads the runtime, waits, then starts: the probes reach it before step one.
  out.workload = run(argv, {{"GW_START_DELAY_MS", "300"}});
  ASSERT_EQ(out.workload.exit_code, 0) << out.workload.err;
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  RunResult ex = run({gpuwhy_binary(), "explain", "--db", out.db, "--json"});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  out.report = nlohmann::json::parse(ex.out);
  save_report(scenario, args, flags, out.report);
}

}  // namespace gpuwhy::testing
