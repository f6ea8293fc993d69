// SPDX-License-Identifier: Apache-2.0
// Test support for the multi-host tests (root/multihost_test.cpp, root/fleet_clickhouse_test.cpp):
// one 4-rank NCCL job on the simulated runtime, recorded as two "hosts". Two agents run at once,
// each launching two ranks (`trace -- sh -c`), ranks 0-1 into a.db and 2-3 into b.db; the second
// agent's wall clock is 2.5 s ahead (GPUWHY_TEST_CLOCK_SKEW_NS), and each file gets the host name
// and boot id a machine of its own would have written. Rank 3 is sim_train's straggler (5 ms of
// CPU work before every all-reduce). Recorded once per test process. Header-only: the root test
// binary globs root/*.cpp only.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "support/process.hpp"
#include "support/scenario.hpp"

namespace gpuwhy::testing {

inline constexpr int64_t kHostBSkewNs = 2'500'000'000;

struct TwoHostJob {
  bool ok = false;
  std::string error;        // why not, when !ok
  std::string a, b;         // the two files
  std::map<int, int> pids;  // rank -> pid
  TempDir dir;
};

namespace detail {

inline std::string ranks_command(const std::string& id, std::initializer_list<int> ranks,
                                 bool async) {
  std::string cmd;
  for (int r : ranks)
    cmd += std::string(async ? "GWSIM_NCCL_ASYNC=1 " : "") + "GW_START_DELAY_MS=300 " +
           workload("sim_train") + " --scenario straggler --steps 40 --ranks 4 --rank " +
           std::to_string(r) + " --nccl-id " + id + " & ";
  return cmd + "wait";
}

// Stock sqlite3 (run() takes a path, not a name to look up).
inline std::string sqlite3_path() {
  for (const char* p : {"/usr/bin/sqlite3", "/usr/local/bin/sqlite3", "/bin/sqlite3"})
    if (access(p, X_OK) == 0) return p;
  return "sqlite3";
}

inline std::string set_host(const std::string& db, const std::string& host) {
  RunResult r = run({sqlite3_path(), db,
                     "UPDATE session SET host = '" + host + "', boot_id = '" + host + "-boot'"});
  return r.exit_code == 0 ? "" : "sqlite3 " + db + ": " + r.err;
}

inline void record(TwoHostJob& j, bool async) {
  const RunResult id = run({workload("sim_train"), "--print-nccl-id"});
  if (id.exit_code != 0) {
    j.error = "sim_train --print-nccl-id: " + id.err;
    return;
  }
  std::string hex = id.out;
  while (!hex.empty() && (hex.back() == '\n' || hex.back() == ' ')) hex.pop_back();
  j.a = j.dir.file("a.db");
  j.b = j.dir.file("b.db");
  Child host_a({gpuwhy_binary(), "trace", "--out", j.a, "--no-host-libs", "--", "/bin/sh", "-c",
                ranks_command(hex, {0, 1}, async)},
               j.dir.path);
  Child host_b({gpuwhy_binary(), "trace", "--out", j.b, "--no-host-libs", "--", "/bin/sh", "-c",
                ranks_command(hex, {2, 3}, async)},
               j.dir.path, {{"GPUWHY_TEST_CLOCK_SKEW_NS", std::to_string(kHostBSkewNs)}});
  const int ca = host_a.wait(180), cb = host_b.wait(180);
  if (ca != 0 || cb != 0) {
    j.error = "the traced ranks failed: " + host_a.stderr_text() + host_b.stderr_text();
    return;
  }
  for (const Child* c : {&host_a, &host_b})
    for (const nlohmann::json& s : summaries_of(c->stdout_text()))
      if (s.contains("rank") && s["rank"].get<int>() >= 0) j.pids[s["rank"]] = s["pid"];
  if (j.pids.size() != 4) {
    j.error = "expected 4 ranks' summaries: " + host_a.stdout_text() + host_b.stdout_text();
    return;
  }
  for (const auto& [db, host] : {std::pair{j.a, "host-a"}, std::pair{j.b, "host-b"}})
    if (std::string e = set_host(db, host); !e.empty()) {
      j.error = e;
      return;
    }
  j.ok = true;
}

}  // namespace detail

// The job, recorded on first use (needs root: call it after root_skip_reason() is empty).
// `async`: the ranks run with GWSIM_NCCL_ASYNC=1, so each all-reduce returns once queued and the
// wait for the peers shows in the next cudaStreamSynchronize, as real NCCL's does.
inline const TwoHostJob& two_host_job(bool async = false) {
  static TwoHostJob blocking, queued;  // destroyed at exit: their TempDirs go with them
  static bool recorded_blocking = false, recorded_queued = false;
  TwoHostJob& job = async ? queued : blocking;
  bool& recorded = async ? recorded_queued : recorded_blocking;
  if (!recorded) {
    recorded = true;
    detail::record(job, async);
  }
  return job;
}

}  // namespace gpuwhy::testing
