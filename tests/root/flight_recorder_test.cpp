// SPDX-License-Identifier: Apache-2.0
// The flight recorder with real eBPF (trace --keep / --max-size): a small budget driven several
// times past its size by launch storms on the simulated runtime keeps the trace file and its
// -wal within it (sampled while recording), keeps the newest workload whole and drops the
// oldest, with counts that add up with the retention record; explain reads the file while the
// agent ages out, and states the window and what aged out. A SIGKILL while ageing out leaves a
// file that stock sqlite3's integrity_check and explain read; --keep drops by age; SIGHUP does
// not end the recorder and SIGTERM finishes it (a plain trace finishes on SIGHUP); a budget below
// the floor is refused.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <filesystem>
#include <thread>

#include "store/store.hpp"
#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kBudget =
    8ull << 20;  // below the CLI's 64M floor (--max-size-floor): seconds to fill

std::string query1(const std::string& db, const std::string& sql) {
  auto f = store::TraceFile::open(db);
  if (!f) return "<open: " + f.error().line() + ">";
  auto r = store::run_query(**f, sql);
  if (!r) return "<query: " + r.error().line() + ">";
  return r->rows.empty() || r->is_null[0][0] ? "<no row>" : r->rows[0][0];
}

int64_t query_int(const std::string& db, const std::string& sql) {
  const std::string v = query1(db, sql);
  return !v.empty() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-')
             ? std::stoll(v)
             : -1;
}

// Stock sqlite3 (the test runs it by path: run() does not search PATH).
std::string sqlite3_path() {
  for (const char* p : {"/usr/bin/sqlite3", "/usr/local/bin/sqlite3", "/bin/sqlite3"})
    if (access(p, X_OK) == 0) return p;
  return "sqlite3";
}

uint64_t size_of(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// The pid a launch_storm run printed in its JSON line.
std::string storm_pid(const RunResult& r) {
  const size_t at = r.out.find("\"pid\":");
  if (at == std::string::npos) return "";
  return std::to_string(std::stoll(r.out.substr(at + 6)));
}

RunResult storm(int calls) {
  return run({workload("launch_storm"), "--calls", std::to_string(calls)});
}

// Samples F + F-wal every 5 ms while it lives: the largest total seen.
class SizeSampler {
 public:
  explicit SizeSampler(std::string db)
      : db_(std::move(db)), t_([this] {
          while (!stop_) {
            peak_ = std::max<uint64_t>(peak_, size_of(db_) + size_of(db_ + "-wal"));
            std::this_thread::sleep_for(5ms);
          }
        }) {}
  ~SizeSampler() { finish(); }
  uint64_t finish() {
    stop_ = true;
    if (t_.joinable()) t_.join();
    return peak_;
  }

 private:
  std::string db_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> peak_{0};
  std::thread t_;
};

class FlightRecorder : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
  std::vector<std::string> flags(std::vector<std::string> more) const {
    std::vector<std::string> f = {"--no-host-libs", "--lib", sim_dir() + "/libcudart.so.13",
                                  "--max-size-floor", "1M"};
    f.insert(f.end(), more.begin(), more.end());
    return f;
  }
  TempDir dir;
};

TEST_F(FlightRecorder, SizeBudgetHoldsAndTheNewestWindowStays) {
  const std::string db = dir.file("t.db");
  Agent agent(db, flags({"--max-size", "8M"}), dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  SizeSampler sampler(db);
  const std::string first = storm_pid(storm(100000));
  ASSERT_FALSE(first.empty());
  // Storms until several budgets' worth went through the file (bounded: 30 s).
  const auto until = std::chrono::steady_clock::now() + 30s;
  bool explained_live = false;
  while (std::chrono::steady_clock::now() < until) {
    RunResult w = storm(400000);
    ASSERT_EQ(w.exit_code, 0) << w.err;
    const int64_t aged = query_int(db, "SELECT coalesce(events, 0) FROM retention");
    if (aged > 0 && !explained_live) {
      // A reader during age-out: explain on the live file (WAL), while storms keep coming.
      std::thread more([] { (void)storm(400000); });
      RunResult e = run({gpuwhy_binary(), "explain", "--db", db});
      more.join();
      EXPECT_EQ(e.exit_code, 0) << e.err;
      EXPECT_NE(e.out.find("events aged out before"), std::string::npos) << e.out;
      explained_live = true;
    }
    if (aged > 3'000'000) break;
  }
  EXPECT_TRUE(explained_live) << "nothing was aged out in 30 s";
  // The newest workload, after the file is full: all of it must be kept.
  RunResult last = storm(50000);
  ASSERT_EQ(last.exit_code, 0) << last.err;
  const std::string newest = storm_pid(last);
  std::this_thread::sleep_for(1500ms);  // its open chunk is written within a second
  ASSERT_EQ(agent.stop_with(SIGTERM), 0) << agent.stderr_text();
  const uint64_t peak = sampler.finish();
  EXPECT_LE(peak, kBudget) << "F + F-wal passed the budget while recording";
  EXPECT_GT(peak, kBudget / 2) << "the test did not fill the budget";
  EXPECT_LE(size_of(db) + size_of(db + "-wal"), kBudget);
  EXPECT_NE(agent.stderr_text().find("gpuwhy: flight recorder: "), std::string::npos)
      << agent.stderr_text();

  EXPECT_EQ(query1(db, "SELECT status FROM session"), "complete");
  // Stock sqlite3 reads it and finds it sound.
  RunResult check = run({sqlite3_path(), "-readonly", db, "PRAGMA integrity_check"});
  EXPECT_EQ(check.out, "ok\n") << check.err;
  EXPECT_EQ(
      query_int(
          db, "SELECT count(*) FROM api_calls WHERE name = 'cudaLaunchKernel' AND pid = " + newest),
      50000)
      << "the newest workload lost calls";
  EXPECT_EQ(
      query_int(
          db, "SELECT count(*) FROM api_calls WHERE name = 'cudaLaunchKernel' AND pid = " + first),
      0)
      << "the oldest workload was not aged out";
  // Kept + aged out = received, less what never reached the file.
  const int64_t kept = query_int(db, "SELECT count(*) FROM api_calls");
  const int64_t aged =
      query_int(db, "SELECT coalesce(sum(events), 0) FROM aged_out WHERE name = 'api_calls'");
  const int64_t received =
      query_int(db, "SELECT count FROM event_counts WHERE source = 'api_call'");
  const int64_t unwritten = query_int(db,
                                      "SELECT coalesce(sum(count), 0) FROM losses WHERE source = "
                                      "'store'");
  EXPECT_GT(aged, 0);
  EXPECT_LE(kept + aged, received);
  EXPECT_GE(kept + aged, received - unwritten);
  EXPECT_EQ(query_int(db,
                      "SELECT count(*) FROM api_calls_chunks WHERE end_max < "
                      "(SELECT window_start_ns FROM retention)"),
            0);
  // The rollups went with their chunks.
  EXPECT_EQ(query_int(db, "SELECT sum(calls) FROM api_calls_per_second"), kept);

  RunResult e = run({gpuwhy_binary(), "explain", "--db", db});
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("caveat   flight recorder (--max-size 8 MiB): "), std::string::npos)
      << e.out;
  RunResult j = run({gpuwhy_binary(), "explain", "--json", "--db", db});
  EXPECT_NE(j.out.find("\"aged_out\""), std::string::npos) << j.out;
}

TEST_F(FlightRecorder, SigkillWhileAgeingOutLeavesAReadableFile) {
  const std::string db = dir.file("t.db");
  Agent agent(db, flags({"--max-size", "8M"}), dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  std::atomic<bool> stop{false};
  std::thread load([&] {
    while (!stop) (void)storm(300000);
  });
  // Age-outs come every fraction of a second at this rate: kill during the stream of them.
  const auto until = std::chrono::steady_clock::now() + 30s;
  int64_t outs = 0;
  while (std::chrono::steady_clock::now() < until &&
         (outs = query_int(db, "SELECT age_outs FROM retention")) < 3)
    std::this_thread::sleep_for(100ms);
  EXPECT_GE(outs, 3);
  std::this_thread::sleep_for(150ms);
  agent.kill9();
  stop = true;
  load.join();
  EXPECT_LE(size_of(db) + size_of(db + "-wal"), kBudget);
  RunResult check = run({sqlite3_path(), "-readonly", db, "PRAGMA integrity_check"});
  EXPECT_EQ(check.out, "ok\n") << check.err;
  EXPECT_EQ(query1(db, "SELECT status FROM session"), "recording");
  RunResult e = run({gpuwhy_binary(), "explain", "--db", db});
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("events aged out before"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("the agent was killed"), std::string::npos) << e.out;
}

TEST_F(FlightRecorder, KeepDropsByAgeAndSighupDoesNotStopIt) {
  const std::string db = dir.file("t.db");
  Agent agent(db, flags({"--keep", "5s", "--age-check-ms", "100"}), dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  // Polls `sql` until it reads `want` (a chunk is written within about two seconds).
  auto await = [&](const std::string& sql, int64_t want) {
    int64_t got = -1;
    for (int i = 0; i < 40 && (got = query_int(db, sql)) != want; ++i)
      std::this_thread::sleep_for(100ms);
    return got;
  };
  RunResult old_run = storm(2000);
  ASSERT_EQ(old_run.exit_code, 0) << old_run.err;
  const auto old_end = std::chrono::steady_clock::now();
  const std::string old_calls =
      "SELECT count(*) FROM api_calls WHERE name = 'cudaLaunchKernel' AND pid = " +
      storm_pid(old_run);
  EXPECT_EQ(await(old_calls, 2000), 2000);

  // A service manager's reload: the recorder keeps going, into the same file.
  ASSERT_EQ(kill(agent.pid(), SIGHUP), 0);
  std::this_thread::sleep_for(300ms);
  ASSERT_EQ(kill(agent.pid(), 0), 0) << "SIGHUP ended the flight recorder";
  std::this_thread::sleep_until(old_end + 6s);  // the old calls are now older than --keep
  RunResult new_run = storm(2000);
  ASSERT_EQ(new_run.exit_code, 0) << new_run.err;
  const std::string new_calls =
      "SELECT count(*) FROM api_calls WHERE name = 'cudaLaunchKernel' AND pid = " +
      storm_pid(new_run);
  EXPECT_EQ(await(new_calls, 2000), 2000);
  EXPECT_EQ(await(old_calls, 0), 0);
  EXPECT_GE(query_int(db, "SELECT events FROM aged_out WHERE name = 'api_calls'"), 2000);
  EXPECT_GT(query_int(db, "SELECT window_start_ns FROM retention"),
            query_int(db, "SELECT start_ns FROM session"));

  ASSERT_EQ(agent.stop_with(SIGTERM), 0) << agent.stderr_text();
  EXPECT_NE(agent.stderr_text().find("SIGHUP: still recording"), std::string::npos)
      << agent.stderr_text();
  EXPECT_EQ(query1(db, "SELECT status FROM session"), "complete");
  RunResult e = run({gpuwhy_binary(), "explain", "--db", db});
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("flight recorder (--keep 5"), std::string::npos) << e.out;
}

// Without --keep/--max-size, a hangup (the terminal went away) finishes the file cleanly.
TEST_F(FlightRecorder, PlainTraceFinishesOnSighup) {
  const std::string db = dir.file("t.db");
  Agent agent(db, flags({}), dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  ASSERT_EQ(storm(1000).exit_code, 0);
  EXPECT_EQ(agent.stop_with(SIGHUP), 0) << agent.stderr_text();
  EXPECT_EQ(query1(db, "SELECT status FROM session"), "complete");
  EXPECT_EQ(query1(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'retention'"), "0");
}

TEST_F(FlightRecorder, BudgetBelowTheFloorIsRefused) {
  RunResult r = run({gpuwhy_binary(), "trace", "--max-size", "10M", "-o", dir.file("t.db")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--max-size 10M is below the smallest budget, 64M"), std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.db")));
  RunResult bad = run({gpuwhy_binary(), "trace", "--keep", "soon", "-o", dir.file("t.db")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--keep 'soon' is not a duration"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace gpuwhy::testing
