// SPDX-License-Identifier: Apache-2.0
// The real agent with real eBPF against the simulated GPU runtime, whose ground truth lets these
// tests check the agent's numbers, not just its words.
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "store/store.hpp"
#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

using nlohmann::json;

int64_t scalar(const store::TraceFile& f, const std::string& sql) {
  auto q = store::run_query(f, sql);
  EXPECT_TRUE(q.ok()) << (q.ok() ? "" : q.error().line()) << " in " << sql;
  if (!q.ok() || q->rows.empty() || q->is_null[0][0]) return -1;
  return std::stoll(q->rows[0][0]);
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

class SimRuntime : public ::testing::Test {
 public:
  std::unique_ptr<store::TraceFile> open_trace(const std::string& db) {
    auto f = store::TraceFile::open(db);
    EXPECT_TRUE(f.ok()) << f.error().line();
    return f.ok() ? std::move(f.value()) : nullptr;
  }

  // Traces `launch_storm --calls N` on the simulated runtime, the agent given `flags` besides the
  // library, in `in` (one agent per directory: its ready file lives there). The finished trace,
  // or nullptr with the failure reported.
  std::unique_ptr<store::TraceFile> trace_launch_storm(const TempDir& in,
                                                       std::vector<std::string> flags, int calls) {
    const std::string db = in.file("t.db");
    flags.insert(flags.begin(), {"--no-host-libs", "--lib", sim_dir() + "/libcudart.so.13"});
    Agent agent(db, flags, in);
    if (!agent.ready()) {
      ADD_FAILURE() << agent.stderr_text();
      return nullptr;
    }
    Child w({workload("launch_storm"), "--calls", std::to_string(calls)}, in.path);
    const int w_exit = w.wait();
    EXPECT_EQ(w_exit, 0) << w.stderr_text();
    const int agent_exit = agent.stop();
    EXPECT_EQ(agent_exit, 0) << agent.stderr_text();
    last_agent_stderr = agent.stderr_text();
    // Its own launches only: the agent traces the whole host, where other tests may run theirs.
    launches_where =
        " FROM api_calls c JOIN apis a ON a.id = c.api WHERE a.name = 'cudaLaunchKernel' "
        "AND c.pid = " +
        std::to_string(w.pid());
    return w_exit == 0 && agent_exit == 0 ? open_trace(db) : nullptr;
  }
  std::string last_agent_stderr;
  // FROM/WHERE clause selecting the launches of the last launch_storm traced.
  std::string launches_where;

 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
  TempDir dir;
};

// Started after the agent, found through the kernel's library-mapping hint (no --lib, no host
// libraries): the process is traced, and the time its thread spent off-CPU inside synchronising
// calls matches what the simulator measured around its own waits.
TEST_F(SimRuntime, LateProcessIsTracedAndSyncOffCpuMatchesTruth) {
  const std::string db = dir.file("t.db");
  Agent agent(db, {"--no-host-libs"}, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  // The first steps may run before the probes reach the new process: let it load first. Kernels
  // three times their default length keep the GPU ahead of the host, so every step's sync really
  // waits (at the default length a busy 2-CPU machine left some runs with 1-2 ms of waiting).
  RunResult w =
      run({workload("sim_train"), "--scenario", "clean", "--steps", "150", "--kernel-scale", "3"},
          {{"GWSIM_TRUTH", dir.file("truth.json")}, {"GW_START_DELAY_MS", "300"}});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  auto f = open_trace(db);
  ASSERT_TRUE(f);

  const json truth = read_json(dir.file("truth.json"));
  const int pid = truth["pid"].get<int>();
  EXPECT_GT(scalar(*f, "SELECT count(*) FROM api_calls WHERE pid = " + std::to_string(pid)), 100);
  EXPECT_EQ(scalar(*f,
                   "SELECT count(*) FROM api_calls c JOIN apis a ON a.id = c.api WHERE "
                   "a.name = 'cudaLaunchKernel' AND c.pid = " +
                       std::to_string(pid)),
            truth["calls"]["cudaLaunchKernel"].get<int64_t>());

  int compared = 0;
  for (const json& t : truth["threads"]) {
    if (!t.contains("blocked_by_api") || !t["blocked_by_api"].contains("cudaStreamSynchronize"))
      continue;
    const int64_t sim_ns = t["blocked_by_api"]["cudaStreamSynchronize"]["ns"].get<int64_t>();
    const int64_t traced_ns =
        scalar(*f,
               "SELECT sum(offcpu_ns) FROM v_call_offcpu WHERE name = 'cudaStreamSynchronize' "
               "AND tid = " +
                   std::to_string(t["tid"].get<int>()));
    ASSERT_GT(sim_ns, 10'000'000) << "the workload must really wait";
    // The simulator's clock brackets its condition-variable wait from user space; the kernel sees
    // the switch-out and switch-in themselves. They agree to within scheduling noise.
    EXPECT_NEAR(static_cast<double>(traced_ns), static_cast<double>(sim_ns), 0.10 * sim_ns)
        << "tid " << t["tid"];
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

// A copy of the runtime at a path never seen before, loaded with dlopen while tracing. The agent
// attaches within tens of milliseconds of the mapping (docs/architecture.md); calls made before
// that are missed, so the workload waits as a framework does between import and first call.
// With the syscall family (--with syscalls) the hint is sys_enter's mmap check; without it (the
// default), a return probe on libc's dlopen. Either way the workload's 100 ms linger after its
// calls (the process is traced by then) is a slow syscall: a syscalls row when the family is on,
// and in both modes an off-CPU interval that names the sleep syscall. The dlopen comes 600 ms
// after start, well after the exec hint's look at the process (200 ms), so only the hint under
// test can find the copy before its calls (the periodic scan is 10 s away).
void expect_library_copy_found(SimRuntime& t, const TempDir& dir,
                               const std::vector<std::string>& flags, bool syscalls) {
  const std::string db = dir.file("t.db");
  std::vector<std::string> args = {"--no-host-libs"};
  args.insert(args.end(), flags.begin(), flags.end());
  Agent agent(db, args, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  RunResult w = run(
      {workload("lib_copy"), "--delay-ms", "600", "--call-delay-ms", "300", "--linger-ms", "100"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  const json first = json::parse(w.out.substr(0, w.out.find('\n')));
  const std::string copy = first["copy"].get<std::string>();
  const std::string pid = std::to_string(first["pid"].get<int>());
  auto f = t.open_trace(db);
  ASSERT_TRUE(f);
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM libraries WHERE path = '" + copy + "'"), 1)
      << agent.stderr_text();
  EXPECT_EQ(scalar(*f,
                   "SELECT count(*) FROM api_calls c JOIN libraries l ON l.id = c.lib "
                   "WHERE l.path = '" +
                       copy + "' AND c.bytes = 777777"),
            1)
      << "cudaMalloc(777777) through the copy; agent said: " << agent.stderr_text();
  const int64_t slow_syscalls = scalar(*f, "SELECT count(*) FROM syscalls WHERE pid = " + pid);
  if (syscalls)
    EXPECT_GT(slow_syscalls, 0);
  else
    EXPECT_EQ(slow_syscalls, 0);
  // The scheduler saw which syscall the linger slept in (read from the saved user registers),
  // and the 300 ms between dlopen and the first call: the process is tracked from the moment the
  // dynamic linker's hook holds it for the new file.
  EXPECT_EQ(scalar(*f,
                   "SELECT count(*) FROM offcpu o JOIN syscall_names n ON n.nr = o.syscall "
                   "WHERE o.pid = " +
                       pid +
                       " AND o.dur >= 90000000 AND n.name IN "
                       "('nanosleep', 'clock_nanosleep')"),
            2)
      << "the 300 ms call delay and the 100 ms linger";
  // The file says which evidence cannot exist, for an explain run elsewhere.
  EXPECT_EQ(scalar(*f, std::string("SELECT count(*) FROM probe_families WHERE family = 'syscalls' "
                                   "AND state = '") +
                           (syscalls ? "on" : "off") + "'"),
            1);
  // sched, proc, block_io, tcp, reclaim, cpu_samples, how the API probes were attached
  // (api_uprobes), the dynamic linker's hook (rtld_hook), Python stacks (python_stacks) and
  // launch timing (launch_timing: every launch timed, the default); syscalls when asked for.
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM probe_families WHERE state = 'on'"),
            syscalls ? 11 : 10);
  EXPECT_EQ(scalar(*f,
                   "SELECT count(*) FROM probe_families WHERE family = 'api_uprobes' AND "
                   "detail LIKE 'uprobe_multi%'"),
            1);
  RunResult ex = run({gpuwhy_binary(), "explain", "--db", db});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  EXPECT_EQ(ex.out.find("syscalls are seen where a thread slept in them") != std::string::npos,
            !syscalls)
      << ex.out;
  EXPECT_EQ(ex.out.find("no slow syscalls"), std::string::npos) << ex.out;
}

// The process state letter of /proc/PID/stat ('T': stopped), 0 when it cannot be read.
char proc_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : 0;
}

// An agent killed (SIGKILL) before it read the ring record of a process the kernel stopped for a
// new runtime file never told its guardian of that process: the guardian finds it in the
// kernel's list of held pids (gw_held_pids) and continues it. The record's loss is forced
// (GPUWHY_TEST_DROP_HOLD_HINTS): otherwise the agent reads it within milliseconds.
TEST_F(SimRuntime, AProcessHeldByAnAgentThatDiesIsContinued) {
  ::setenv("GPUWHY_TEST_DROP_HOLD_HINTS", "1", 1);
  Agent agent(dir.file("t.db"), {"--no-host-libs"}, dir);
  ::unsetenv("GPUWHY_TEST_DROP_HOLD_HINTS");
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  Child w({workload("lib_copy"), "--delay-ms", "100", "--call-delay-ms", "10", "--linger-ms", "10"},
          dir.path);
  bool stopped = false;
  for (int i = 0; i < 500 && !stopped; ++i) {
    stopped = proc_state(w.pid()) == 'T';
    if (!stopped) usleep(10'000);
  }
  ASSERT_TRUE(stopped) << "the kernel should have held the workload at its dlopen";
  usleep(300'000);  // nobody else continues it: the agent dropped the hint
  EXPECT_EQ(proc_state(w.pid()), 'T');
  agent.kill9();
  EXPECT_EQ(w.wait(30), 0) << "the held workload must run on and finish once the agent is gone: "
                           << w.stderr_text();
}

TEST_F(SimRuntime, LibraryCopyAtANewPathIsPickedUp) {
  expect_library_copy_found(*this, dir, {}, false);
}

TEST_F(SimRuntime, LibraryCopyIsPickedUpWithTheSyscallFamily) {
  expect_library_copy_found(*this, dir, {"--with", "syscalls"}, true);
}

// A deliberately tiny ring: the kernel cannot hand everything over, and says how much it dropped.
TEST_F(SimRuntime, DropsAreCountedWhenTheRingIsUndersized) {
  const int calls = 200000;
  auto f = trace_launch_storm(dir, {"--ring-kb", "4"}, calls);
  ASSERT_TRUE(f);
  const int64_t stored = scalar(*f, "SELECT count(*)" + launches_where);
  const int64_t lost = scalar(*f,
                              "SELECT count FROM losses WHERE source = 'bpf' AND "
                              "cause = 'events_ring_full'");
  EXPECT_GT(lost, 0);
  EXPECT_LT(stored, calls);
  // Every launch is either stored or counted as lost (off-CPU records share the ring, so the
  // lost count may also include some of those).
  EXPECT_GE(stored + lost, calls);
  EXPECT_NE(last_agent_stderr.find("LOST"), std::string::npos) << last_agent_stderr;
}

// A launch's stream is a stack word, whose read costs more than the rest of the probe: by default
// a thread's launches read it on one in 64 (the first, the 65th, ...); the others are batched
// (bpf/api.bpf.h): they keep their time, duration and kernel, store NULL for the rest and say so
// in flags (2: not read, 8: compact). --launch-arg-sampling 1 reads every launch in full. Either
// way a stream that was read is the one the workload created (the same handle its
// cudaStreamSynchronize passes in a register).
TEST_F(SimRuntime, LaunchStreamsAreSampledUnlessEveryLaunchIsAsked) {
  const int calls = 640;
  for (const int every : {64, 1}) {
    SCOPED_TRACE("--launch-arg-sampling " + std::to_string(every));
    TempDir run_dir;
    auto f = trace_launch_storm(run_dir, {"--launch-arg-sampling", std::to_string(every)}, calls);
    ASSERT_TRUE(f);
    const std::string launches = launches_where;
    ASSERT_EQ(scalar(*f, "SELECT count(*)" + launches), calls);
    EXPECT_EQ(scalar(*f, "SELECT count(stream)" + launches), calls / every);
    EXPECT_EQ(scalar(*f, "SELECT count(*)" + launches + " AND flags & 2 AND stream IS NULL"),
              calls - calls / every);
    EXPECT_EQ(scalar(*f, "SELECT count(tpb)" + launches), calls / every)
        << "a batched launch keeps no shape";
    EXPECT_EQ(scalar(*f, "SELECT count(*)" + launches +
                             " AND flags & 8 AND tpb IS NULL AND "
                             "addr IS NOT NULL AND dur > 0 AND ret = 0"),
              calls - calls / every);
    EXPECT_EQ(scalar(*f, "SELECT count(DISTINCT addr)" + launches), 1) << "one kernel";
    const int64_t stream =
        scalar(*f, "SELECT c.stream" +
                       std::string(" FROM api_calls c JOIN apis "
                                   "a ON a.id = c.api WHERE a.name = 'cudaStreamSynchronize'"));
    EXPECT_GT(stream, 0);
    EXPECT_EQ(scalar(*f, "SELECT count(*)" + launches + " AND stream = " + std::to_string(stream)),
              calls / every);
  }
}

// Kernels before 6.6 have no uprobe_multi: the agent attaches one uprobe per function, whose
// programs take their attach cookie from the helper instead of the run context.
// --no-uprobe-multi takes that path here: every launch is recorded, batched or not, with its
// kernel, entry+return and entry-only alike, and the file says how the probes were attached.
TEST_F(SimRuntime, SingleUprobesRecordWhatUprobeMultiDoes) {
  const int calls = 640;
  for (const bool entry_only : {false, true}) {
    SCOPED_TRACE(entry_only ? "--entry-only launch" : "entry+return");
    TempDir run_dir;
    std::vector<std::string> flags{"--no-uprobe-multi"};
    if (entry_only) flags.insert(flags.end(), {"--entry-only", "launch"});
    auto f = trace_launch_storm(run_dir, flags, calls);
    ASSERT_TRUE(f);
    const std::string launches = launches_where;
    EXPECT_EQ(scalar(*f, "SELECT count(*)" + launches), calls);
    EXPECT_EQ(scalar(*f, "SELECT count(*)" + launches + " AND flags & 8"), calls - calls / 64);
    EXPECT_EQ(scalar(*f, "SELECT count(DISTINCT addr)" + launches), 1) << "one kernel";
    EXPECT_EQ(scalar(*f, "SELECT count(*)" + launches + " AND addr IS NULL"), 0);
    EXPECT_GT(scalar(*f,
                     "SELECT count(*) FROM api_calls c JOIN apis a ON a.id = c.api WHERE "
                     "a.name = 'cudaStreamSynchronize'"),
              0);
    EXPECT_EQ(scalar(*f,
                     "SELECT count(*) FROM api_calls c JOIN apis a ON a.id = c.api WHERE "
                     "a.name = 'cudaStreamSynchronize'"),
              scalar(*f,
                     "SELECT count(*) FROM api_calls c JOIN apis a ON a.id = c.api WHERE "
                     "a.name = 'cudaStreamSynchronize' AND dur > 0"))
        << "calls that are not launches keep their return probe";
    EXPECT_EQ(scalar(*f,
                     "SELECT count(*) FROM probe_families WHERE family = 'api_uprobes' AND "
                     "detail LIKE 'single uprobes%'"),
              1);
  }
}

// --no-launch-batching: every launch has a record of its own, so the ones whose stream was not
// read keep the grid and block from their registers.
TEST_F(SimRuntime, UnbatchedLaunchesKeepTheirShape) {
  const int calls = 640;
  auto f = trace_launch_storm(dir, {"--no-launch-batching"}, calls);
  ASSERT_TRUE(f);
  const std::string launches = launches_where;
  EXPECT_EQ(scalar(*f, "SELECT count(*)" + launches), calls);
  EXPECT_EQ(scalar(*f, "SELECT count(*)" + launches + " AND flags & 8"), 0) << "nothing batched";
  EXPECT_EQ(scalar(*f, "SELECT count(*)" + launches + " AND tpb = 256 AND blocks = 64"), calls);
  EXPECT_EQ(scalar(*f, "SELECT count(stream)" + launches), calls / 64);
  EXPECT_EQ(scalar(*f,
                   "SELECT coalesce(sum(count), 0) FROM event_counts WHERE source = "
                   "'launch_batch'"),
            0);
}

// A thread that launched and then kept running (no other GPU call, no sleep, no exit) while the
// trace stopped: its nine batched launches reach the trace all the same, written when something
// took the CPU from it or, if nothing did, read from its task storage at stop
// (launch_batch_test.cpp tests that path on its own), behind the first launch, read in full.
TEST_F(SimRuntime, LaunchesOfAThreadStillRunningAtStopAreKept) {
  const std::string db = dir.file("t.db"), hold = dir.file("hold");
  Agent agent(db, {"--no-host-libs", "--lib", sim_dir() + "/libcudart.so.13"}, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  Child w({workload("launch_storm"), "--calls", "10", "--hold-file", hold}, dir.path);
  for (int i = 0; i < 1000 && access((hold + ".launched").c_str(), F_OK) != 0; ++i) usleep(10'000);
  ASSERT_EQ(access((hold + ".launched").c_str(), F_OK), 0) << "the workload never launched";
  EXPECT_EQ(agent.stop(), 0) << agent.stderr_text();
  std::ofstream(hold) << "\n";
  ASSERT_EQ(w.wait(), 0) << w.stderr_text();
  auto f = open_trace(db);
  ASSERT_TRUE(f);
  const std::string launches =
      " FROM api_calls c JOIN apis a ON a.id = c.api WHERE a.name = 'cudaLaunchKernel' AND "
      "c.pid = " +
      std::to_string(w.pid());
  EXPECT_EQ(scalar(*f, "SELECT count(*)" + launches), 10);
  EXPECT_EQ(scalar(*f, "SELECT count(*)" + launches + " AND flags & 8"), 9);
  EXPECT_GE(scalar(*f,
                   "SELECT sum(count) FROM event_counts WHERE source IN ('launch_batch', "
                   "'launch_batch_at_stop')"),
            1);
  EXPECT_EQ(scalar(*f, "SELECT count(DISTINCT tid)" + launches), 1);
}

// --entry-only launch: launches are recorded by their entry probe alone (no duration, no return
// code, flags bit 2) and no return probe is attached for them, so no return finds its call
// missing; other calls keep their durations. The trace says which category was entry-only.
TEST_F(SimRuntime, EntryOnlyLaunchesAreRecordedWithoutReturnProbes) {
  const int calls = 500;
  auto f = trace_launch_storm(dir, {"--entry-only", "launch"}, calls);
  ASSERT_TRUE(f);
  const std::string launches = launches_where;
  EXPECT_EQ(scalar(*f, "SELECT count(*)" + launches), calls);
  EXPECT_EQ(scalar(*f, "SELECT count(*)" + launches +
                           " AND dur IS NULL AND ret IS NULL AND "
                           "flags & 4 AND addr IS NOT NULL"),
            calls);
  // One in 64 read in full, the others batched at entry.
  EXPECT_EQ(scalar(*f, "SELECT count(tpb)" + launches), (calls + 63) / 64);
  EXPECT_GT(scalar(*f,
                   "SELECT c.dur FROM api_calls c JOIN apis a ON a.id = c.api "
                   "WHERE a.name = 'cudaStreamSynchronize'"),
            0);
  EXPECT_EQ(scalar(*f,
                   "SELECT coalesce(sum(count), 0) FROM event_counts "
                   "WHERE source = 'return_unmatched'"),
            0);
  EXPECT_EQ(scalar(*f,
                   "SELECT count(*) FROM probe_families WHERE family = 'returns:launch' AND "
                   "state = 'off'"),
            1);
}

// With --stacks every launch carries a stack id, and the trace holds that stack resolved on the
// traced host: the probed function in the runtime at depth 0, the program's own main() below it.
// launch_storm runs long enough (~1 s) for its first stacks to be resolved while it lives.
TEST_F(SimRuntime, StacksAreStoredWithFunctionNames) {
  const int calls = 200000;
  auto f = trace_launch_storm(dir, {"--stacks"}, calls);
  ASSERT_TRUE(f);
  const std::string launches = launches_where;
  EXPECT_EQ(scalar(*f, "SELECT count(*)" + launches + " AND stack_id >= 0"), calls);
  const std::string id = std::to_string(scalar(*f, "SELECT stack_id" + launches +
                                                       " GROUP BY stack_id "
                                                       "ORDER BY count(*) DESC LIMIT 1"));
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM stack_frames WHERE stack_id = " + id +
                           " AND depth = 0 AND symbol LIKE 'cudaLaunchKernel+0x%' AND "
                           "module LIKE '%/libcudart.so.13'"),
            1);
  EXPECT_EQ(
      scalar(*f, "SELECT count(*) FROM stack_frames WHERE stack_id = " + id +
                     " AND depth > 0 AND symbol LIKE 'main+0x%' AND module LIKE '%/launch_storm'"),
      1);
  // main() is the launches' call site: the view counts them there.
  EXPECT_EQ(scalar(*f,
                   "SELECT sum(calls) FROM v_call_sites WHERE name = 'cudaLaunchKernel' AND "
                   "symbol LIKE 'main+0x%'"),
            calls);
}

}  // namespace
}  // namespace gpuwhy::testing
