// SPDX-License-Identifier: Apache-2.0
// Causes one level below "runnable" and "its own host work" (issue 31), told from what the
// kernel itself records, never from the workload's shape: a cgroup's CPU quota (the scheduler's
// throttling state at each switch-out) and the kernel's work on the thread's behalf (CPU samples
// in kernel code outside any syscall, with the thread's fault counters). Each scenario measures
// its own truth (the cgroup's cpu.stat, its own time touching new memory and its own fault
// count) and also runs without its fault, when explain must not report it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/process.hpp"
#include "support/scenario.hpp"

namespace gpuwhy::testing {
namespace {

using nlohmann::json;

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  f.flush();
  return static_cast<bool>(f);
}

// A cgroup of the test's own with a CPU quota of `quota_us` per `period_us`, on the v1 cpu
// hierarchy where the host has one, else on v2 with the cpu controller enabled for it.
// Removed (after its processes exited) when destroyed.
class QuotaCgroup {
 public:
  QuotaCgroup(int64_t quota_us, int64_t period_us) {
    std::istringstream mi(read_text("/proc/self/mountinfo"));
    std::string v1, v2;
    for (std::string line; std::getline(mi, line);) {
      const size_t dash = line.find(" - ");
      if (dash == std::string::npos) continue;
      std::istringstream head(line.substr(0, dash)), tail(line.substr(dash + 3));
      std::string f[5], fstype, source, opts;
      for (std::string& x : f) head >> x;
      tail >> fstype >> source >> opts;
      if (fstype == "cgroup" && ("," + opts + ",").find(",cpu,") != std::string::npos) v1 = f[4];
      if (fstype == "cgroup2" && v2.empty()) v2 = f[4];
    }
    const std::string name = "gpuwhy-test-" + std::to_string(getpid());
    if (!v1.empty()) {
      path_ = v1 + "/" + name;
      if (mkdir(path_.c_str(), 0755) != 0) {
        fail("mkdir " + path_);
        return;
      }
      if (!write_text(path_ + "/cpu.cfs_period_us", std::to_string(period_us)) ||
          !write_text(path_ + "/cpu.cfs_quota_us", std::to_string(quota_us))) {
        fail("cannot set the quota of " + path_);
        return;
      }
      cgroup_ = "/" + name;
      version_ = 1;
    } else if (!v2.empty()) {
      if (read_text(v2 + "/cgroup.controllers").find("cpu") == std::string::npos) {
        fail("the cgroup v2 hierarchy at " + v2 + " has no cpu controller");
        return;
      }
      write_text(v2 + "/cgroup.subtree_control", "+cpu");
      path_ = v2 + "/" + name;
      if (mkdir(path_.c_str(), 0755) != 0) {
        fail("mkdir " + path_);
        return;
      }
      if (!write_text(path_ + "/cpu.max",
                      std::to_string(quota_us) + " " + std::to_string(period_us))) {
        fail("cannot write " + path_ + "/cpu.max");
        return;
      }
      cgroup_ = "/" + name;
      version_ = 2;
    } else {
      why_ = "no cgroup hierarchy with the cpu controller is mounted";
    }
  }
  ~QuotaCgroup() {
    if (!path_.empty()) rmdir(path_.c_str());
  }
  const std::string& skip_reason() const { return why_; }
  const std::string& dir() const { return path_; }
  const std::string& cgroup() const { return cgroup_; }  // as /proc/PID/cgroup names it
  int version() const { return version_; }
  // `sh -c` that moves itself into the cgroup, then execs the workload: started inside it.
  std::vector<std::string> wrap() const {
    return {"/bin/sh", "-c", "echo $$ > '" + path_ + "/cgroup.procs' && exec \"$@\"", "sh"};
  }

 private:
  void fail(const std::string& why) { why_ = why + ": " + std::strerror(errno); }
  std::string path_, cgroup_, why_;
  int version_ = 0;
};

std::vector<json> chains_of(const json& report, int64_t tid, const std::string& kind) {
  std::vector<json> out;
  for (const json& c : report["chains"])
    if (c["thread"].is_object() && c["thread"]["tid"].get<int64_t>() == tid && c["kind"] == kind)
      out.push_back(c);
  return out;
}

int64_t trainer_tid(const json& line) { return line["trainer_tids"][0].get<int64_t>(); }

class KernelCauses : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
};

// A quota of a tenth of a CPU in periods of 20 ms on a host-bound step (4 ms of collate on the
// CPU per 2 ms of GPU work): the trainer is held off the CPU most of the time, every period,
// even when other programs leave it only part of its CPU (a loaded machine).
TEST_F(KernelCauses, CpuQuotaIsNamedWithTheCgroupAndItsLimit) {
  QuotaCgroup cg(2'000, 20'000);
  if (!cg.skip_reason().empty()) GTEST_SKIP() << cg.skip_reason();
  TempDir dir;
  TracedScenario t;
  ASSERT_NO_FATAL_FAILURE(
      trace_scenario(dir, "cpu-quota", {"--cgroup", cg.dir(), "--steps", "40"}, {}, t, cg.wrap()));
  const json w = summary_of(t.workload.out);
  SCOPED_TRACE("report: " + t.report["chains"].dump(1) + "\nworkload: " + w.dump());
  const double truth = w["throttled_share"].get<double>();
  ASSERT_GT(truth, 0.3) << "the quota did not throttle the workload";
  const std::vector<json> q = chains_of(t.report, trainer_tid(w), "cpu_quota");
  ASSERT_EQ(q.size(), 1u) << "no cpu_quota chain for the trainer";
  // The kernel says when the thread was throttled at its switch-out, not when the quota was
  // refilled: a throttled wait that ends in the run queue behind another task (a loaded
  // machine) is counted whole. So the share lies between the group's throttled time (cpu.stat)
  // and the thread's whole run-queue wait (schedstat), each measured by the workload.
  const double share = q[0]["share"].get<double>();
  EXPECT_GE(share, truth - 0.05);
  EXPECT_LE(share, w["runq_share"].get<double>() + 0.05);
  EXPECT_EQ(t.report["chains"][0]["kind"], "cpu_quota");
  ASSERT_TRUE(HasCulprit(q[0]));
  EXPECT_EQ(q[0]["culprit"]["cgroup"], cg.cgroup());
  EXPECT_NE(q[0]["fix"].get<std::string>().find("CPU limit"), std::string::npos);
  double quota = 0, period = 0;
  for (const auto& [k, v] : q[0]["metrics"].items()) {
    if (k == "quota_us") quota = v.get<double>();
    if (k == "period_us") period = v.get<double>();
  }
  EXPECT_EQ(quota, 2'000);
  EXPECT_EQ(period, 20'000);
}

TEST_F(KernelCauses, NoQuotaNoThrottling) {
  TempDir dir;
  TracedScenario t;
  ASSERT_NO_FATAL_FAILURE(trace_scenario(dir, "cpu-quota", {"--steps", "40"}, {}, t));
  const json w = summary_of(t.workload.out);
  EXPECT_TRUE(chains_of(t.report, trainer_tid(w), "cpu_quota").empty())
      << t.report["chains"].dump(1);
}

// 64 MiB of fresh memory written every step (16,384 first-touch faults): the kernel's work
// inside what would read as the thread's own host work. Sampled at 997 Hz.
// The truth is the thread's CPU time in the touch loop (CLOCK_THREAD_CPUTIME_ID, exact): nearly
// all of it is fault handling (the same loop over pages already mapped costs about 1% of it
// here). explain counts the thread's kernel-mode samples, and they fall short of it for a reason
// of the sampling, not of explain: the timer's interrupt that comes while the fault path has
// interrupts off is taken where they come back on, often on the return to user mode, so part of
// the kernel's time is sampled as user mode (measured: 9% of the loop's samples). So the share
// lies between the truth less the thread's user-mode samples and the truth, each widened by the
// sampling error (binomial, three sigma over the span's samples) and the loop's own user work
// (2 points). getrusage's system time is no truth here: the kernel splits a thread's CPU time
// into user and system by tick samples, rescaled over its whole life (it once read more than the
// loop's CPU time).
TEST_F(KernelCauses, PageFaultChurnIsTheKernelsWork) {
  TempDir dir;
  TracedScenario t;
  ASSERT_NO_FATAL_FAILURE(trace_scenario(dir, "fault-churn", {}, {"--sample-hz", "997"}, t));
  const json w = summary_of(t.workload.out);
  SCOPED_TRACE("report: " + t.report["chains"].dump(1) + "\nworkload: " + w.dump());
  const std::vector<json> f = chains_of(t.report, trainer_tid(w), "page_faults");
  ASSERT_EQ(f.size(), 1u) << "no page_faults chain for the trainer";
  const double span = w["span_ns"].get<double>(), truth = w["touch_share"].get<double>();
  RunResult q = run({gpuwhy_binary(), "query", "--format", "json", "--db", t.db,
                     "SELECT count(*) AS n, coalesce(sum(CASE WHEN kernel = 0 THEN dur END), 0) "
                     "AS user_ns FROM cpu_samples WHERE tid = " +
                         std::to_string(trainer_tid(w))});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const json samples = json::parse(q.out).at(0);
  const double n = samples["n"].get<double>();
  ASSERT_GT(n, 1000) << "the trainer's samples";
  const double user = samples["user_ns"].get<double>() / span;
  const double sigma = std::sqrt(truth * (1 - truth) / n);
  const double share = f[0]["share"].get<double>();
  EXPECT_LE(share, truth + 3 * sigma) << "more kernel time than the loop's CPU time";
  EXPECT_GE(share, truth - user - 0.02 - 3 * sigma) << "user-mode samples " << user;
  double minor = -1;
  for (const auto& [k, v] : f[0]["metrics"].items())
    if (k == "minor_faults") minor = v.get<double>();
  const double want = w["minor_faults"].get<double>();
  // The counters are read at the first and last sample of the span: the faults before the
  // first sample (StepGpu's set-up) and after the last are outside, a step's worth at most.
  EXPECT_NEAR(minor, want, want * 0.05 + 16'384) << "minor faults";
  EXPECT_NE(f[0]["fix"].get<std::string>().find("reuse"), std::string::npos);
}

TEST_F(KernelCauses, ReusedBuffersAreNotFaultChurn) {
  TempDir dir;
  TracedScenario t;
  ASSERT_NO_FATAL_FAILURE(
      trace_scenario(dir, "fault-churn", {"--reuse", "1"}, {"--sample-hz", "997"}, t));
  const json w = summary_of(t.workload.out);
  for (const json& c : chains_of(t.report, trainer_tid(w), "page_faults"))
    EXPECT_LT(c["share"].get<double>(), 0.02) << c.dump();
}

// A chain's metric by name; NaN when absent.
double metric_of(const json& chain, const std::string& name) {
  for (const auto& [k, v] : chain["metrics"].items())
    if (k == name) return v.get<double>();
  return std::nan("");
}

// The trainer's input-starved chain: its wait for the loader worker `loader_pid`.
json producer_chain(const json& report, int64_t trainer, int64_t loader_pid) {
  for (const json& c : chains_of(report, trainer, "io_stall"))
    if (HasCulprit(c) && c["culprit"]["pid"].get<int64_t>() == loader_pid) return c;
  return {};
}

// Two levels: the trainer waits on a pipe for its loader worker (level one), and the worker is
// late because its own cgroup's quota throttles it (level two): 0.4 of a CPU in 50 ms periods for
// 6 ms of decoding per batch. The workload's truth is the group's throttled time (cpu.stat; only
// the worker runs in it) over the run. The trainer waits for the worker through most of the run,
// so the throttled time explain finds inside those waits lies between the group's throttled time
// less the run's time outside the waits and the group's throttled time. A wait ends when the
// worker's write wakes the trainer: the trainer's run-queue wait after that (a loaded machine's,
// read_runq_ns) is inside its read() but outside the wait, and explain counts it as waiting for
// a CPU, so the waits' truth is the read time less it (read_waiting_share).
TEST_F(KernelCauses, ThrottledProducerIsTheSecondLevel) {
  QuotaCgroup cg(20'000, 50'000);
  if (!cg.skip_reason().empty()) GTEST_SKIP() << cg.skip_reason();
  TempDir dir;
  TracedScenario t;
  ASSERT_NO_FATAL_FAILURE(
      trace_scenario(dir, "quota-loader", {"--loader-cgroup", cg.dir()}, {}, t));
  const json w = summary_of(t.workload.out);
  SCOPED_TRACE("report: " + t.report["chains"].dump(1) + "\nworkload: " + w.dump());
  const double span = w["span_ns"].get<double>();
  const double waited = w["read_blocked_ns"].get<double>() - w["read_runq_ns"].get<double>();
  const double throttled = w["loader_throttled_ns"].get<double>();
  ASSERT_GT(throttled, 0.3 * span) << "the quota did not throttle the loader";
  const json c = producer_chain(t.report, trainer_tid(w), w["loader_pid"].get<int64_t>());
  ASSERT_FALSE(c.is_null()) << "no input-starved chain naming the loader worker";
  EXPECT_NEAR(c["share"].get<double>(), w["read_waiting_share"].get<double>(), 0.05);
  const double wait = metric_of(c, "producer_wait_ns");
  ASSERT_GT(wait, 0.5 * waited) << "the waits the loader's states cover";
  const double found = metric_of(c, "producer_throttled_ns");
  EXPECT_GE(found, throttled - (span - waited) - 0.05 * wait);
  EXPECT_LE(found, throttled + 0.05 * wait);
  EXPECT_GE(found, 0.5 * wait) << "throttling is why the loader was late";
  EXPECT_EQ(c["culprit"]["cgroup"], cg.cgroup());
  EXPECT_NE(c["fix"].get<std::string>().find("CPU quota"), std::string::npos);
  bool said = false;
  for (const json& e : c["evidence"])
    said =
        said || e["text"].get<std::string>().find("throttled by its cgroup") != std::string::npos;
  EXPECT_TRUE(said) << "the second level is in the evidence";
}

// The same job without the quota: the worker is late in its own code (on the CPU, or waiting for
// one on a loaded machine), never throttled, and the fix is not a quota.
TEST_F(KernelCauses, UnthrottledProducerIsNotTheQuotas) {
  TempDir dir;
  TracedScenario t;
  ASSERT_NO_FATAL_FAILURE(trace_scenario(dir, "quota-loader", {}, {}, t));
  const json w = summary_of(t.workload.out);
  SCOPED_TRACE("report: " + t.report["chains"].dump(1) + "\nworkload: " + w.dump());
  const json c = producer_chain(t.report, trainer_tid(w), w["loader_pid"].get<int64_t>());
  ASSERT_FALSE(c.is_null()) << "no input-starved chain naming the loader worker";
  const double wait = metric_of(c, "producer_wait_ns");
  ASSERT_GT(wait, 0);
  EXPECT_LT(metric_of(c, "producer_throttled_ns"), 0.02 * wait);
  // Its CPU time bounds the time it can have been on the CPU during the waits; outside them
  // (the trainer's run-queue wait after each wake-up included) it can have run at most the rest
  // of the run.
  const double cpu = w["loader_cpu_ns"].get<double>();
  const double waited = w["read_blocked_ns"].get<double>() - w["read_runq_ns"].get<double>();
  EXPECT_LE(metric_of(c, "producer_on_cpu_ns"), cpu + 0.05 * wait);
  EXPECT_GE(metric_of(c, "producer_on_cpu_ns"),
            cpu - (w["span_ns"].get<double>() - waited) - 0.05 * wait);
  EXPECT_EQ(c["fix"].get<std::string>().find("CPU quota"), std::string::npos);
}

// The interpreter's lock, on the real CPython builds of this machine: the main thread makes the
// GPU calls (each releases the GIL and takes it back) while a "metrics" thread runs pure Python.
// The workload's truth is its main thread's time asleep over the loop (wall less its CPU time
// and run-queue wait, from the kernel's schedstat): the GPU calls barely block, so nearly all of
// it is waiting for the GIL.
struct Python {
  std::string name, pyenv_version;
};
void PrintTo(const Python& p, std::ostream* os) { *os << p.name; }

std::string find_python(const Python& p) {
  std::vector<std::string> roots;
  if (const char* home = std::getenv("HOME"))
    roots.push_back(std::string(home) + "/.pyenv/versions");
  roots.push_back("/root/.pyenv/versions");
  for (const std::string& r : roots) {
    const std::string path = r + "/" + p.pyenv_version + "/bin/python" + p.name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return {};
}

class GilHolder : public ::testing::TestWithParam<Python> {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    python_ = find_python(GetParam());
    if (python_.empty())
      GTEST_SKIP() << "no pyenv Python " << GetParam().pyenv_version
                   << " under $HOME/.pyenv or /root/.pyenv";
  }
  // Traces gil_holder.py; returns its summary and explain's report.
  void trace(const std::vector<std::string>& extra, json& summary, json& report) {
    const std::string db = dir_.file("t.db");
    Agent agent(db, {"--no-host-libs", "--lib", sim_dir() + "/libcudart.so.13"}, dir_);
    ASSERT_TRUE(agent.ready()) << agent.stderr_text();
    std::vector<std::string> argv = {
        python_, std::string(GW_SOURCE_DIR) + "/tests/workloads/python/gil_holder.py",
        sim_dir() + "/libcudart.so.13", "40"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    RunResult w = run(argv);
    ASSERT_EQ(w.exit_code, 0) << w.err;
    ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
    summary = summary_of(w.out);
    RunResult ex = run({gpuwhy_binary(), "explain", "--db", db, "--json"});
    ASSERT_EQ(ex.exit_code, 0) << ex.err;
    report = json::parse(ex.out);
  }
  std::string python_;
  TempDir dir_;
};

TEST_P(GilHolder, TheHolderAndItsLineAreNamed) {
  json w, report;
  ASSERT_NO_FATAL_FAILURE(trace({}, w, report));
  SCOPED_TRACE("report: " + report["chains"].dump(1) + "\nworkload: " + w.dump());
  const int64_t main_tid = w["main_tid"].get<int64_t>();
  const std::vector<json> g = chains_of(report, main_tid, "gil_contention");
  ASSERT_EQ(g.size(), 1u) << "no gil_contention chain for the main thread";
  EXPECT_NEAR(g[0]["share"].get<double>(), w["asleep_share"].get<double>(), 0.05);
  ASSERT_TRUE(HasCulprit(g[0]));
  EXPECT_EQ(g[0]["culprit"]["tid"], w["aggregator_tid"]);
  bool line = false;
  for (const json& e : g[0]["evidence"])
    line |= e["text"].get<std::string>().find("aggregate_metrics") != std::string::npos;
  EXPECT_TRUE(line) << "the holder's Python line is not named";
  // Not a lock of the program's, not a timer sleep.
  for (const json& c : chains_of(report, main_tid, "lock_wait"))
    EXPECT_LT(c["share"].get<double>(), 0.05) << c.dump();
}

TEST_P(GilHolder, AloneItIsNotGilBound) {
  json w, report;
  ASSERT_NO_FATAL_FAILURE(trace({"--no-aggregator"}, w, report));
  for (const json& c : chains_of(report, w["main_tid"].get<int64_t>(), "gil_contention"))
    EXPECT_LT(c["share"].get<double>(), 0.02) << c.dump();
}

INSTANTIATE_TEST_SUITE_P(Interpreters, GilHolder,
                         ::testing::Values(Python{"3.11", "3.11.7"}, Python{"3.12", "3.12.1"},
                                           Python{"3.13", "3.13.0"}),
                         [](const ::testing::TestParamInfo<Python>& i) {
                           std::string n = "py" + i.param.name;
                           n.erase(std::remove(n.begin(), n.end(), '.'), n.end());
                           return n;
                         });

}  // namespace
}  // namespace gpuwhy::testing
