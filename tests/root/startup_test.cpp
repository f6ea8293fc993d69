// SPDX-License-Identifier: Apache-2.0
// Nothing lost at start-up: a process that maps a GPU runtime the agent has never seen (a copy at
// a fresh path, as a venv's or a container's is) is held at the dynamic linker's hook until the
// runtime is probed, so every call it makes is recorded from its first; and `gpuwhy trace --
// CMD` traces a command from its first instruction and exits with its status.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "store/store.hpp"
#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

int64_t scalar(const store::TraceFile& f, const std::string& sql) {
  auto q = store::run_query(f, sql);
  EXPECT_TRUE(q.ok()) << (q.ok() ? "" : q.error().line()) << " in " << sql;
  if (!q.ok() || q->rows.empty() || q->is_null[0][0]) return -1;
  return std::stoll(q->rows[0][0]);
}

std::string text(const store::TraceFile& f, const std::string& sql) {
  auto q = store::run_query(f, sql);
  EXPECT_TRUE(q.ok()) << (q.ok() ? "" : q.error().line()) << " in " << sql;
  if (!q.ok() || q->rows.empty() || q->is_null[0][0]) return "";
  return q->rows[0][0];
}

json first_json_line(const std::string& out) { return json::parse(out.substr(0, out.find('\n'))); }

class Startup : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
  // A copy of the simulated libcudart.so.13 in a directory of its own: a file no trace has seen.
  std::string fresh_runtime_dir() {
    const std::string d = copies.file("lib");
    fs::create_directories(d);
    fs::copy_file(sim_dir() + "/libcudart.so.13", d + "/libcudart.so.13");
    return d;
  }
  std::unique_ptr<store::TraceFile> open_trace(const std::string& db) {
    auto f = store::TraceFile::open(db);
    EXPECT_TRUE(f.ok()) << f.error().line();
    return f.ok() ? std::move(f.value()) : nullptr;
  }
  // Processes counted as having run unprobed code (losses, source 'discovery') and their rows.
  void expect_no_startup_gaps(const store::TraceFile& f, const std::string& agent_err) {
    EXPECT_EQ(scalar(f, "SELECT sum(count) FROM losses WHERE source = 'discovery'"), 0) << agent_err;
    EXPECT_EQ(scalar(f, "SELECT count(*) FROM startup_gaps"), 0) << agent_err;
  }
  TempDir dir, copies;
};

// launch_storm, linked against libcudart.so.13 and pointed at the fresh copy, starts launching at
// once: 200,000 launches in its first milliseconds. Every one is in the trace, the process has
// its row, and the agent says it held one process (the first to map the copy).
TEST_F(Startup, ProcessMappingANewRuntimeAtStartIsTracedFromItsFirstCall) {
  const std::string lib_dir = fresh_runtime_dir();
  const std::string db = dir.file("t.db");
  Agent agent(db, {}, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  RunResult w = run({workload("launch_storm"), "--calls", "200000"},
                    {{"LD_LIBRARY_PATH", lib_dir}});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  const json out = first_json_line(w.out);
  const std::string pid = std::to_string(out["pid"].get<int>());
  auto f = open_trace(db);
  ASSERT_TRUE(f);
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls c JOIN apis a ON a.id = c.api JOIN "
                       "libraries l ON l.id = c.lib WHERE a.name = 'cudaLaunchKernel' AND "
                       "c.pid = " + pid + " AND l.path = '" + lib_dir + "/libcudart.so.13'"),
            out["ok"].get<int64_t>())
      << agent.stderr_text();
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM processes WHERE pid = " + pid), 1);
  EXPECT_GE(scalar(*f, "SELECT count FROM event_counts WHERE source = 'held_processes'"), 1);
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM probe_families WHERE family = 'rtld_hook' AND "
                       "state = 'on'"),
            1);
  expect_no_startup_gaps(*f, agent.stderr_text());
}

// The same for a runtime loaded with dlopen from a fresh path and called the moment dlopen
// returns (no delay before, none between).
TEST_F(Startup, RuntimeDlopenedFromANewPathIsProbedBeforeItsFirstCall) {
  const std::string db = dir.file("t.db");
  Agent agent(db, {"--no-host-libs"}, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  RunResult w = run({workload("lib_copy"), "--delay-ms", "0", "--call-delay-ms", "0"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  const std::string copy = first_json_line(w.out)["copy"].get<std::string>();
  auto f = open_trace(db);
  ASSERT_TRUE(f);
  // cudaMalloc(777777), cudaMemcpy, cudaFree: all three, the first included.
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls c JOIN libraries l ON l.id = c.lib "
                       "WHERE l.path = '" + copy + "'"),
            3)
      << agent.stderr_text();
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls WHERE bytes = 777777"), 1);
  expect_no_startup_gaps(*f, agent.stderr_text());
}

// Process churn: thousands of short processes, every tenth calling the fresh runtime ten times.
// Every GPU call is recorded, or the processes that may have missed some are counted.
TEST_F(Startup, ChurnRecordsEveryGpuCall) {
  const std::string lib_dir = fresh_runtime_dir();
  const std::string db = dir.file("t.db");
  Agent agent(db, {}, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  RunResult w = run({workload("churn"), "--gpu", workload("first_call"), "--lib-dir", lib_dir,
                     "--procs", "3000", "--gpu-every", "10", "--calls", "10", "--parallel", "8"},
                    {}, 240);
  ASSERT_EQ(w.exit_code, 0) << w.out << w.err;
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  std::printf("%s", w.out.c_str());
  const json out = first_json_line(w.out);
  ASSERT_EQ(out["failed"].get<int64_t>(), 0);
  auto f = open_trace(db);
  ASSERT_TRUE(f);
  const int64_t recorded = scalar(*f, "SELECT count(*) FROM api_calls c JOIN libraries l ON "
                                      "l.id = c.lib WHERE l.path LIKE '" + lib_dir + "/%'");
  const int64_t late = scalar(*f, "SELECT sum(count) FROM losses WHERE source = 'discovery'");
  EXPECT_EQ(scalar(*f, "SELECT count(DISTINCT pid) FROM api_calls c JOIN libraries l ON "
                       "l.id = c.lib WHERE l.path LIKE '" + lib_dir + "/%'"),
            out["gpu_procs"].get<int64_t>() - late);
  // Nothing missed is the goal; a miss must at least be counted, never silent.
  if (late == 0) EXPECT_EQ(recorded, out["gpu_calls"].get<int64_t>()) << agent.stderr_text();
  else EXPECT_GE(recorded, out["gpu_calls"].get<int64_t>() - late * 10) << agent.stderr_text();
  EXPECT_EQ(late, 0) << agent.stderr_text();
}

// trace -- CMD: the command's first GPU call (main's first statement) is recorded; the command's
// exit status is gpuwhy's; only the command is traced (the pid filter names it).
TEST_F(Startup, TracedCommandIsSeenFromItsFirstCallAndPassesItsStatus) {
  const std::string lib_dir = fresh_runtime_dir();
  const std::string db = dir.file("t.db");
  RunResult r = run({gpuwhy_binary(), "trace", "--quiet", "-o", db, "--", workload("first_call"),
                     "--calls", "5", "--exit", "7"},
                    {{"LD_LIBRARY_PATH", lib_dir}});
  ASSERT_EQ(r.exit_code, 7) << r.err;
  const json out = first_json_line(r.out);
  const std::string pid = std::to_string(out["pid"].get<int>());
  auto f = open_trace(db);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status(), "complete");
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls WHERE pid = " + pid), 5) << r.err;
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls c JOIN apis a ON a.id = c.api WHERE "
                       "a.name = 'cudaMalloc' AND c.bytes = 31337 AND c.pid = " + pid),
            3)
      << r.err;
  EXPECT_EQ(text(*f, "SELECT pid_filter FROM session"), pid);
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM proc_events WHERE kind = 'exec' AND pid <> " + pid), 0)
      << "a traced command's trace stores no other process's exec";
  expect_no_startup_gaps(*f, r.err);
}

// A command that cannot be run: one line, exit 127 (as a shell says it), no trace left running.
TEST_F(Startup, CommandThatCannotRunGetsOneLineAnd127) {
  RunResult r = run({gpuwhy_binary(), "trace", "--quiet", "-o", dir.file("t.db"), "--",
                     dir.file("no-such-program")});
  EXPECT_EQ(r.exit_code, 127) << r.err;
  EXPECT_NE(r.err.find("cannot run"), std::string::npos) << r.err;
}

// SIGTERM sent to gpuwhy goes on to the command; the trace ends with it and passes its status.
TEST_F(Startup, StopSignalsAreForwardedToTheCommand) {
  const std::string db = dir.file("t.db");
  Child agent({gpuwhy_binary(), "trace", "--quiet", "-o", db, "--ready-file", dir.file("ready"),
               "--", "sleep", "60"},
              dir.path);
  for (int i = 0; i < 600 && access(dir.file("ready").c_str(), F_OK) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(access(dir.file("ready").c_str(), F_OK), 0) << agent.stderr_text();
  EXPECT_EQ(agent.stop(SIGTERM), 128 + SIGTERM) << agent.stderr_text();
  auto f = open_trace(db);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status(), "complete");
}

// -p takes a comma-separated list as well as repeats.
TEST_F(Startup, PidListIsCommaSeparated) {
  Child a({"sleep", "30"}, dir.path), b({"sleep", "30"}, dir.path);
  const std::string db = dir.file("t.db");
  RunResult r = run({gpuwhy_binary(), "trace", "--quiet", "--duration", "1s", "-o", db, "-p",
                     std::to_string(a.pid()) + "," + std::to_string(b.pid())});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = open_trace(db);
  ASSERT_TRUE(f);
  const pid_t lo = std::min(a.pid(), b.pid()), hi = std::max(a.pid(), b.pid());
  EXPECT_EQ(text(*f, "SELECT pid_filter FROM session"),
            std::to_string(lo) + "," + std::to_string(hi));
  a.stop(SIGKILL);
  b.stop(SIGKILL);
}

}  // namespace
}  // namespace gpuwhy::testing
