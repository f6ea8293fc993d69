// SPDX-License-Identifier: Apache-2.0
// Adaptive launch timing (issue 33, bpf/api.bpf.h gw_launch_untimed): by default a thread that
// made at least 10,000 launches a second over a whole 67 ms window times only the launches whose
// arguments it samples (1 in 64) and records the others at entry only, through a session probe
// that skips their return trap. Every launch is still recorded with its start and kernel; the
// driver launch each untimed runtime launch makes is still skipped as nested (found by its return
// address, not by an open call); a direct driver launch is still recorded; explain says how the
// durations were derived. `trace --full` times every launch. A thread below the rate keeps every
// duration.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probes/uprobe_multi.hpp"
#include "store/store.hpp"
#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

constexpr int kFast = 200000;     // launch_storm at full speed: far above 10,000 a second
constexpr int kDirect = 300;      // cuLaunchKernel alone, after them
constexpr int kSampleEvery = 64;  // --launch-arg-sampling's default

int64_t scalar(const store::TraceFile& f, const std::string& sql) {
  auto q = store::run_query(f, sql);
  EXPECT_TRUE(q.ok()) << (q.ok() ? "" : q.error().line()) << " in " << sql;
  if (!q.ok() || q->rows.empty() || q->is_null[0][0]) return -1;
  return std::stoll(q->rows[0][0]);
}

class LaunchTiming : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }

  // launch_storm (runtime launches through the simulated driver, then direct driver launches)
  // under an agent given `flags`; explain's JSON report in report_.
  std::unique_ptr<store::TraceFile> trace(std::vector<std::string> flags,
                                          std::vector<std::string> args) {
    db_ = dir_.file("t.db");
    flags.insert(flags.begin(), {"--no-host-libs", "--lib", sim_dir() + "/libcudart.so.13", "--lib",
                                 sim_dir() + "/libcuda.so.1"});
    Agent agent(db_, flags, dir_);
    if (!agent.ready()) {
      ADD_FAILURE() << agent.stderr_text();
      return nullptr;
    }
    args.insert(args.begin(), workload("launch_storm"));
    Child w(args, dir_.path, {{"GWSIM_CUDART_VIA_DRIVER", "1"}});
    const int w_exit = w.wait();
    EXPECT_EQ(w_exit, 0) << w.stderr_text();
    const int agent_exit = agent.stop();
    EXPECT_EQ(agent_exit, 0) << agent.stderr_text();
    pid_ = std::to_string(w.pid());
    if (w_exit != 0 || agent_exit != 0) return nullptr;
    RunResult ex = run({gpuwhy_binary(), "explain", "--db", db_, "--json"});
    EXPECT_EQ(ex.exit_code, 0) << ex.err;
    report_ = nlohmann::json::parse(ex.out, nullptr, false);
    auto f = store::TraceFile::open(db_);
    EXPECT_TRUE(f.ok()) << f.error().line();
    return f.ok() ? std::move(f.value()) : nullptr;
  }
  std::string calls_of(const std::string& api) const {
    return " FROM api_calls c JOIN apis a ON a.id = c.api WHERE a.name = '" + api +
           "' AND c.pid = " + pid_;
  }
  int64_t event_count(const store::TraceFile& f, const std::string& source) const {
    return scalar(
        f, "SELECT coalesce(sum(count), 0) FROM event_counts WHERE source = '" + source + "'");
  }
  bool has_caveat(const std::string& kind) const {
    for (const nlohmann::json& c : report_["caveats"])
      if (c["kind"] == kind) return true;
    return false;
  }
  // explain's cudaLaunchKernel row of the whole trace.
  nlohmann::json launch_op() const {
    for (const nlohmann::json& o : report_["stats"]["ops"])
      if (o["name"] == "cudaLaunchKernel") return o;
    return nullptr;
  }
  // What every mode must keep: each launch recorded, its nested driver launch skipped and
  // counted, the direct ones recorded (timed too when `all_timed`: a fast thread's direct
  // launches are untimed like its runtime ones), nothing lost or unmatched.
  void expect_every_launch(const store::TraceFile& f, int runtime_launches, bool all_timed) {
    EXPECT_EQ(scalar(f, "SELECT count(*)" + calls_of("cudaLaunchKernel")), runtime_launches);
    EXPECT_EQ(scalar(f, "SELECT count(*)" + calls_of("cudaLaunchKernel") + " AND addr IS NULL"), 0);
    EXPECT_EQ(scalar(f, "SELECT count(*)" + calls_of("cuLaunchKernel")), kDirect);
    if (all_timed) EXPECT_EQ(scalar(f, "SELECT count(dur)" + calls_of("cuLaunchKernel")), kDirect);
    EXPECT_EQ(event_count(f, "launch_nested_skipped"), runtime_launches);
    EXPECT_EQ(event_count(f, "return_unmatched"), 0);
    EXPECT_EQ(event_count(f, "entry_unmatched"), 0);
    EXPECT_EQ(scalar(f, "SELECT coalesce(sum(count), 0) FROM losses WHERE source = 'bpf'"), 0);
    ASSERT_TRUE(launch_op().is_object()) << report_.dump().substr(0, 2000);
    EXPECT_EQ(launch_op()["count"], runtime_launches);
  }

  TempDir dir_;
  std::string db_, pid_;
  nlohmann::json report_;
};

const std::vector<std::string> kFastArgs = {"--calls", std::to_string(kFast), "--driver-calls",
                                            std::to_string(kDirect)};

TEST_F(LaunchTiming, AFastThreadTimesOnlyItsSampledLaunchesAndCountsEveryOne) {
  if (!probes::kernel_has_uprobe_session()) GTEST_SKIP() << "needs uprobe sessions (Linux 6.13)";
  auto f = trace({"--untimed-above", "10000"}, kFastArgs);
  ASSERT_TRUE(f);
  ASSERT_NO_FATAL_FAILURE(expect_every_launch(*f, kFast, false));
  const int64_t timed = scalar(*f, "SELECT count(dur)" + calls_of("cudaLaunchKernel"));
  const int64_t untimed = kFast - timed;
  // The sampled launches (their stream read: tpb kept) are always timed; the thread is far above
  // the rate for most of its run, so most launches are not.
  EXPECT_EQ(scalar(*f, "SELECT count(*)" + calls_of("cudaLaunchKernel") +
                           " AND tpb IS NOT NULL AND dur IS NOT NULL"),
            (kFast + kSampleEvery - 1) / kSampleEvery);
  EXPECT_GT(untimed, kFast / 2);
  // An untimed launch is an entry-only batched one: flags 4 (no return) and 8 (batched).
  EXPECT_EQ(scalar(*f, "SELECT count(*)" + calls_of("cudaLaunchKernel") +
                           " AND dur IS NULL AND ret IS NULL AND flags & 12 = 12"),
            untimed);
  EXPECT_EQ(scalar(*f,
                   "SELECT count(*) FROM probe_families WHERE family = 'launch_timing' AND "
                   "state = 'sampled' AND detail LIKE 'a thread above 10000 launches/s times 1 "
                   "launch in 64 %'"),
            1);
  EXPECT_EQ(report_["trace"]["launch_timing"]["mode"], "adaptive");
  EXPECT_EQ(report_["trace"]["launch_timing"]["timed_one_in"], kSampleEvery);
  EXPECT_TRUE(has_caveat("launches_sampled"));
  // explain counts every launch and says how many durations it estimated.
  EXPECT_EQ(launch_op()["durations_imputed"], untimed);
  EXPECT_GT(launch_op()["total_ns"].get<int64_t>(), 0);
}

TEST_F(LaunchTiming, FullTimesEveryLaunch) {
  auto f = trace({"--full"}, kFastArgs);
  ASSERT_TRUE(f);
  ASSERT_NO_FATAL_FAILURE(expect_every_launch(*f, kFast, true));
  EXPECT_EQ(scalar(*f, "SELECT count(dur)" + calls_of("cudaLaunchKernel")), kFast);
  EXPECT_EQ(scalar(*f,
                   "SELECT count(*) FROM probe_families WHERE family = 'launch_timing' AND "
                   "state = 'on' AND detail LIKE '%trace --full%'"),
            1);
  EXPECT_EQ(report_["trace"]["launch_timing"]["mode"], "full");
  EXPECT_FALSE(has_caveat("launches_sampled"));
  EXPECT_FALSE(launch_op().contains("durations_imputed"));
}

// 150 us of host CPU per launch: under 6,700 launches a second, below the rate in every window.
TEST_F(LaunchTiming, ASlowThreadKeepsEveryDuration) {
  constexpr int kSlow = 1500;
  auto f =
      trace({"--untimed-above", "10000"}, {"--calls", std::to_string(kSlow), "--launch-ns",
                                           "150000", "--driver-calls", std::to_string(kDirect)});
  ASSERT_TRUE(f);
  ASSERT_NO_FATAL_FAILURE(expect_every_launch(*f, kSlow, true));
  EXPECT_EQ(scalar(*f, "SELECT count(dur)" + calls_of("cudaLaunchKernel")), kSlow);
  EXPECT_FALSE(launch_op().contains("durations_imputed"));
}

}  // namespace
}  // namespace gpuwhy::testing
