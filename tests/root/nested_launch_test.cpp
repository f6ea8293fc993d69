// SPDX-License-Identifier: Apache-2.0
// A driver launch made inside a probed runtime launch (NVIDIA's libcudart launches through
// libcuda) tells explain nothing the runtime launch does not: where the kernel has uprobe
// sessions (Linux 6.13), its probe's entry sees the open runtime launch, records nothing, counts
// it (event_counts launch_nested_skipped) and makes the kernel skip its return probe
// (bpf/api.bpf.h, gw_launch_session). A driver launch made outside one (Triton, JAX) is
// recorded with its duration. The simulated libcudart launches through the simulated libcuda with
// GWSIM_CUDART_VIA_DRIVER=1, as the real one does.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "probes/uprobe_multi.hpp"
#include "store/store.hpp"
#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

constexpr int kRuntimeLaunches = 2000;  // cudaLaunchKernel -> cuLaunchKernel (the summary: 2,000)
constexpr int kDriverLaunches = 300;    // cuLaunchKernel alone

int64_t scalar(const store::TraceFile& f, const std::string& sql) {
  auto q = store::run_query(f, sql);
  EXPECT_TRUE(q.ok()) << (q.ok() ? "" : q.error().line()) << " in " << sql;
  if (!q.ok() || q->rows.empty() || q->is_null[0][0]) return -1;
  return std::stoll(q->rows[0][0]);
}

class NestedLaunches : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }

  // Traces launch_storm's runtime launches (through the driver) and direct driver launches, the
  // agent probing the simulated libcudart and libcuda and given `flags`. Sets pid_.
  std::unique_ptr<store::TraceFile> trace(const TempDir& in, std::vector<std::string> flags) {
    const std::string db = in.file("t.db");
    flags.insert(flags.begin(), {"--no-host-libs", "--lib", sim_dir() + "/libcudart.so.13", "--lib",
                                 sim_dir() + "/libcuda.so.1"});
    Agent agent(db, flags, in);
    if (!agent.ready()) {
      ADD_FAILURE() << agent.stderr_text();
      return nullptr;
    }
    Child w({workload("launch_storm"), "--calls", std::to_string(kRuntimeLaunches),
             "--driver-calls", std::to_string(kDriverLaunches)},
            in.path, {{"GWSIM_CUDART_VIA_DRIVER", "1"}});
    const int w_exit = w.wait();
    EXPECT_EQ(w_exit, 0) << w.stderr_text();
    const int agent_exit = agent.stop();
    EXPECT_EQ(agent_exit, 0) << agent.stderr_text();
    agent_stderr_ = agent.stderr_text();
    pid_ = std::to_string(w.pid());
    if (w_exit != 0 || agent_exit != 0) return nullptr;
    auto f = store::TraceFile::open(db);
    EXPECT_TRUE(f.ok()) << f.error().line();
    return f.ok() ? std::move(f.value()) : nullptr;
  }

  // The workload's calls of `api` (FROM/WHERE), aliased c.
  std::string calls_of(const std::string& api) const {
    return " FROM api_calls c JOIN apis a ON a.id = c.api WHERE a.name = '" + api +
           "' AND c.pid = " + pid_;
  }
  // Its driver launches that began inside one of its runtime launches on the same thread.
  std::string nested_driver_launches() const {
    return "SELECT count(*)" + calls_of("cuLaunchKernel") +
           " AND EXISTS (SELECT 1 FROM api_calls r JOIN apis ra ON ra.id = r.api WHERE "
           "ra.name = 'cudaLaunchKernel' AND r.tid = c.tid AND c.ts >= r.ts AND "
           "c.ts < r.ts + r.dur)";
  }
  int64_t event_count(const store::TraceFile& f, const std::string& source) const {
    return scalar(
        f, "SELECT coalesce(sum(count), 0) FROM event_counts WHERE source = '" + source + "'");
  }

  TempDir dir;
  std::string pid_, agent_stderr_;
};

// Entry and return probes (every launch through the batched fast path but one in 64, and with
// --launch-arg-sampling 1 every launch through the spec's path): the runtime launches are all
// recorded, the driver launches nested in them are not (counted instead), the direct ones are,
// with their durations; nothing is lost and no return is left unmatched. A kernel without uprobe
// sessions records the nested ones as before.
TEST_F(NestedLaunches, DriverLaunchesInsideRuntimeLaunchesAreSkippedDirectOnesRecorded) {
  const bool sessions = probes::kernel_has_uprobe_session();
  for (const std::string sampling : {"64", "1"}) {
    SCOPED_TRACE("--launch-arg-sampling " + sampling);
    TempDir run_dir;
    auto f = trace(run_dir, {"--launch-arg-sampling", sampling});
    ASSERT_TRUE(f);
    EXPECT_EQ(scalar(*f, "SELECT count(*)" + calls_of("cudaLaunchKernel")), kRuntimeLaunches);
    EXPECT_EQ(scalar(*f, "SELECT count(dur)" + calls_of("cudaLaunchKernel")), kRuntimeLaunches);
    const int nested = sessions ? 0 : kRuntimeLaunches;
    EXPECT_EQ(scalar(*f, nested_driver_launches()), nested);
    EXPECT_EQ(scalar(*f, "SELECT count(*)" + calls_of("cuLaunchKernel")), kDriverLaunches + nested);
    // The direct ones keep their durations (and their kernel: the workload's one).
    EXPECT_EQ(scalar(*f, "SELECT count(*)" + calls_of("cuLaunchKernel") +
                             " AND dur > 0 AND ret = 0 AND addr IS NOT NULL"),
              kDriverLaunches + nested);
    EXPECT_EQ(scalar(*f, "SELECT count(DISTINCT addr)" + calls_of("cuLaunchKernel")), 1);
    EXPECT_EQ(event_count(*f, "launch_nested_skipped"), sessions ? kRuntimeLaunches : 0);
    // The open-call flag that marks a runtime launch (0x8000) never reaches a record.
    EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls WHERE flags & 32768 AND pid = " + pid_),
              0);
    EXPECT_EQ(event_count(*f, "return_unmatched"), 0);
    EXPECT_EQ(event_count(*f, "entry_unmatched"), 0);
    EXPECT_EQ(scalar(*f, "SELECT coalesce(sum(count), 0) FROM losses WHERE source = 'bpf'"), 0);
    EXPECT_EQ(scalar(*f,
                     "SELECT count(*) FROM probe_families WHERE family = 'api_uprobes' AND "
                     "detail LIKE '%uprobe session%'"),
              sessions ? 1 : 0);
    if (sessions)
      EXPECT_NE(agent_stderr_.find("2,000 driver launches made inside runtime launches"),
                std::string::npos)
          << agent_stderr_;
  }
}

// --no-uprobe-session (the path of kernels before 6.13; --no-uprobe-multi's single uprobes take no
// session either, left out here: detaching ~70 single uprobes takes ~15 s) and --entry-only launch
// (whose runtime launches are never on the thread's open-call stack, so nesting cannot be seen)
// probe the driver launches as before: every one is recorded, nested or not, and none is counted
// as skipped.
TEST_F(NestedLaunches, WithoutSessionsOrEntryOnlyEveryDriverLaunchIsRecorded) {
  for (const std::string flag : {"--no-uprobe-session", "--entry-only"}) {
    SCOPED_TRACE(flag);
    const bool entry_only = flag == "--entry-only";
    TempDir run_dir;
    auto f = trace(run_dir, entry_only ? std::vector<std::string>{flag, "launch"}
                                       : std::vector<std::string>{flag});
    ASSERT_TRUE(f);
    EXPECT_EQ(scalar(*f, "SELECT count(*)" + calls_of("cudaLaunchKernel")), kRuntimeLaunches);
    EXPECT_EQ(scalar(*f, "SELECT count(*)" + calls_of("cuLaunchKernel")),
              kRuntimeLaunches + kDriverLaunches);
    // Entry-only launches have no duration (NULL), so none lies inside another.
    if (!entry_only) EXPECT_EQ(scalar(*f, nested_driver_launches()), kRuntimeLaunches);
    EXPECT_EQ(scalar(*f, "SELECT count(dur)" + calls_of("cuLaunchKernel")),
              entry_only ? 0 : kRuntimeLaunches + kDriverLaunches);
    EXPECT_EQ(event_count(*f, "launch_nested_skipped"), 0);
    EXPECT_EQ(event_count(*f, "return_unmatched"), 0);
    EXPECT_EQ(scalar(*f, "SELECT coalesce(sum(count), 0) FROM losses WHERE source = 'bpf'"), 0);
    EXPECT_EQ(agent_stderr_.find("driver launches made inside runtime launches"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace gpuwhy::testing
