// SPDX-License-Identifier: Apache-2.0
// Who held the CPU while the dispatch thread waited for it, traced with real eBPF (issue 14):
// sim_train's neighbour scenario pins the dispatch thread, the runtime's helper thread (wakes
// every 300 us, runs 4 us) and another job's busy process (renamed "other_job") to one CPU. The
// helper preempts the dispatch thread now and then, and the other job then keeps the CPU for
// milliseconds: the recorded runs must give the other job most of the dispatch thread's
// runnable time and the helper a small share, and the stored names must follow the rename.
#include "analysis/cpu_holders.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "analysis/loader.hpp"
#include "store/store.hpp"
#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

using nlohmann::json;

// The workload's JSON summary: its last stdout line that parses as one.
json summary_line(const std::string& out) {
  json last;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(start, end - start);
    if (!line.empty() && line[0] == '{') {
      json j = json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.contains("workload")) last = j;
    }
    start = end + 1;
  }
  return last;
}

TEST(CpuHolders, NeighbourHoldsTheDispatchThreadsWaitNotTheHelper) {
  if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  ASSERT_GT(online, 0);
  const std::string cpu = std::to_string(online - 1);
  TempDir dir;
  const std::string db = dir.file("t.db");
  Agent agent(db, {"--no-host-libs"}, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  RunResult w =
      run({workload("sim_train"), "--scenario", "neighbour", "--steps", "120", "--cpu", cpu},
          {{"GW_START_DELAY_MS", "300"}});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  const json wl = summary_line(w.out);
  ASSERT_FALSE(wl.is_null()) << w.out;
  const auto dispatch = wl["trainer_tids"][0].get<uint32_t>();
  const auto helper = wl["helper_tid"].get<uint32_t>();
  const auto other = wl["other_job_pid"].get<uint32_t>();
  ASSERT_NE(helper, 0u);
  ASSERT_NE(other, 0u);

  auto file = store::TraceFile::open(db);
  ASSERT_TRUE(file) << file.error().line();
  auto rows = analysis::load_trace(**file, {});
  ASSERT_TRUE(rows) << rows.error().line();
  const analysis::CpuHolders holders(*rows);
  ASSERT_TRUE(holders.recorded());
  EXPECT_FALSE(rows->cpu_runs.empty());

  // The dispatch thread's runnable time, by holder.
  const auto pid = wl["pid"].get<uint32_t>();
  int64_t total = 0, by_other = 0, by_helper = 0, unknown = 0, by_job = 0;
  std::map<std::string, int64_t> by_name;  // for the message
  size_t waits = 0, helper_took = 0;
  std::vector<analysis::HolderTime> out;
  for (const analysis::OffCpuRow& o : rows->offcpu) {
    if (o.tid != dispatch || o.runq <= 0) continue;
    ++waits;
    if (o.preempted && o.other_tid == helper) ++helper_took;
    out.clear();
    holders.holders(o, rows->window.start_ns, rows->window.end_ns, out);
    for (const analysis::HolderTime& h : out) {
      total += h.ns;
      if (h.pid == analysis::kUnknownHolder) {
        unknown += h.ns;
        by_name["(unknown)"] += h.ns;
        continue;
      }
      if (h.pid == other) by_other += h.ns;
      if (h.tid == helper) by_helper += h.ns;
      if (h.pid == pid && h.tid != helper) by_job = std::max(by_job, h.ns);
      by_name[std::string(rows->string(h.comm)) + " " + std::to_string(h.tid)] += h.ns;
    }
  }
  std::string who;
  for (const auto& [name, ns] : by_name) who += name + ": " + std::to_string(ns / 1000) + " us\n";
  SCOPED_TRACE("dispatch thread " + std::to_string(dispatch) + ": " + std::to_string(waits) +
               " waits (" + std::to_string(helper_took) + " preemptions by the helper), held by\n" +
               who + "workload: " + w.out);
  ASSERT_GT(total, 0);
  // On an idle host the other job holds nearly all of it; on a shared CI machine other
  // processes (compilers, other tests) also run on that CPU, so the other job is compared with
  // the helper and the job's own threads, not with the whole wait.
  EXPECT_GE(by_other, (by_other + by_helper) * 8 / 10)
      << "the other job, not the helper that preempted the dispatch thread, holds the wait";
  EXPECT_GT(by_other, by_job) << "the other job holds more than any thread of the job itself";
  EXPECT_GE(by_other, total / 4);
  EXPECT_GT(by_helper, 0) << "the helper's few microseconds are recorded too";
  // A small share: a few microseconds per wake-up. On a loaded VM those microseconds stretch
  // (CI saw 11% once, right after its build); the claim itself is the comparison with the
  // other job above.
  EXPECT_LE(by_helper, total / 6) << "the helper holds only a small share";
  EXPECT_LE(unknown, total / 20) << "the runs should cover the waits";

  // Names follow task_rename: the forked child was first seen under its parent's name.
  EXPECT_EQ(rows->process_name(other), "other_job");
  EXPECT_EQ(rows->thread_name(other), "other_job");
  EXPECT_EQ(rows->thread_name(helper), "cuda-EvtHandlr");
  // Each traced thread's allowed CPUs, and the host's.
  for (const analysis::ThreadRow& t : rows->threads) {
    if (t.tid == dispatch || t.tid == helper || t.tid == other) {
      EXPECT_EQ(t.cpus_allowed, 1u) << "thread " << t.tid << " is pinned to one CPU";
    }
  }
  EXPECT_EQ(rows->session.online_cpus, static_cast<uint32_t>(online));
}

}  // namespace
}  // namespace gpuwhy::testing
