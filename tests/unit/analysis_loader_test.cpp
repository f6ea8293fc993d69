// SPDX-License-Identifier: Apache-2.0
// The loader on real trace files (schema + lookup tables of this build, rows from SQL).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "analysis/loader.hpp"
#include "analysis/sql_scan.hpp"
#include "analysis_test_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::analysis {
namespace {

using testing::kMs;
using testing::kT0;

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuwhy-loader-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "trace.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Two GPU processes and a co-runner; the session as given.
  std::unique_ptr<store::TraceFile> make(const std::string& session_sql,
                                         const std::string& extra = "") {
    const std::string sql = "CREATE TEMP TABLE fx AS SELECT " + std::to_string(kT0) +
                            " AS t0, 1000000 AS ms;\n" + session_sql + R"(
INSERT INTO processes(pid, start_ns, comm, first_seen_ns) SELECT 10, t0, 'trainer', t0 FROM fx;
INSERT INTO processes(pid, start_ns, comm, first_seen_ns) SELECT 20, t0, 'evaluator', t0 FROM fx;
INSERT INTO processes(pid, start_ns, comm, first_seen_ns) SELECT 30, t0, 'cpu_hog', t0 FROM fx;
INSERT INTO threads(pid, tid, comm, first_seen_ns) SELECT 10, 11, 'loader', t0 FROM fx;
INSERT INTO strings(id, s) VALUES (1, 'cpu_hog');
-- pinned buffer at +0.5 s; launches every 100 ms from both GPU processes; a copy at +8 s.
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, bytes, addr)
SELECT t0 + 500 * ms, ms, 10, 10, 18, 1, 0, 1048576, 4096000 FROM fx;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + i * 100 * ms, 5000, p, p, 1, 1, 0, 0 FROM fx, n, (SELECT 10 AS p UNION ALL SELECT 20);
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, bytes, op, addr, addr2)
SELECT t0 + 8000 * ms, 2 * ms, 10, 10, 5, 1, 0, 65536, 1, 99, 4096000 FROM fx;
-- off-CPU rows of the trainer (kept) and of the co-runner itself (not a GPU process: dropped).
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state, next_pid, next_tid, next_comm)
SELECT t0 + 1000 * ms, 5 * ms, 5 * ms, 10, 10, 0, 1, 0, 30, 30, 1 FROM fx;
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state)
SELECT t0 + 1000 * ms, 5 * ms, 0, 30, 30, 0, 0, 1 FROM fx;
)" + extra;
    EXPECT_EQ(testing::make_trace_db(path_, sql), "");
    auto f = store::TraceFile::open(path_);
    EXPECT_TRUE(f.ok()) << f.error().line();
    return f.ok() ? std::move(f.value()) : nullptr;
  }

  static std::string complete() {
    return "INSERT INTO session(id, status, host, kernel, agent_version, abi_version, "
           "command_line, start_ns, end_ns, mono_to_wall_ns) SELECT 1, 'complete', 'h', 'k', "
           "'v', 1, 'c', t0, t0 + 10000 * ms, 0 FROM fx;";
  }

  std::filesystem::path dir_;
  std::string path_;
};

LoadOptions since(const std::string& s) {
  LoadOptions o;
  o.window = parse_window_request(s, "", "").value();
  return o;
}

TEST_F(LoaderTest, LoadsTheWholeTraceAndKeepsOnlyGpuProcesses) {
  auto f = make(complete());
  ASSERT_TRUE(f);
  auto rows = load_trace(*f, {});
  ASSERT_TRUE(rows.ok()) << rows.error().line();
  EXPECT_EQ(rows->calls.size(), 202u);
  ASSERT_EQ(rows->offcpu.size(), 1u);  // cpu_hog's own intervals are not loaded
  EXPECT_EQ(rows->offcpu[0].other_pid, 30u);
  EXPECT_TRUE(rows->offcpu[0].preempted);
  EXPECT_EQ(rows->string(rows->offcpu[0].other_comm), "cpu_hog");
  EXPECT_EQ(rows->process_name(10), "trainer");
  EXPECT_EQ(rows->thread_name(11), "loader");
  EXPECT_EQ(rows->api_name(1), "cudaLaunchKernel");
  EXPECT_EQ(rows->window.trace_end_ns, kT0 + 10000 * kMs);
  EXPECT_FALSE(rows->window.end_is_last_event);
  EXPECT_EQ(rows->syscall_name(202), "futex");
}

TEST_F(LoaderTest, SinceCountsBackFromTheEndAndKeepsEarlierPinnedAllocations) {
  auto f = make(complete());
  ASSERT_TRUE(f);
  auto rows = load_trace(*f, since("3s"));
  ASSERT_TRUE(rows.ok()) << rows.error().line();
  EXPECT_EQ(rows->window.start_ns, kT0 + 7000 * kMs);
  for (const CallRow& c : rows->calls) EXPECT_GE(c.ts, rows->window.start_ns);
  EXPECT_EQ(rows->calls.size(), 61u);  // 30 launches each + the copy
  ASSERT_EQ(rows->memory_calls.size(), 1u);
  EXPECT_EQ(rows->memory_calls[0].ts, kT0 + 500 * kMs);
}

TEST_F(LoaderTest, IncompleteTraceEndsAtItsLastEvent) {
  auto f = make(
      "INSERT INTO session(id, status, host, kernel, agent_version, abi_version, "
      "command_line, start_ns, mono_to_wall_ns) SELECT 1, 'recording', 'h', 'k', 'v', "
      "1, 'c', t0, 0 FROM fx;");
  ASSERT_TRUE(f);
  auto bounds = trace_bounds(f->db());
  ASSERT_TRUE(bounds.ok());
  EXPECT_TRUE(bounds->end_is_last_event);
  EXPECT_EQ(bounds->trace_end_ns, kT0 + 9900 * kMs + 5000);  // the last launch's end
  auto rows = load_trace(*f, since("1s"));
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->window.start_ns, bounds->trace_end_ns - 1000 * kMs);
}

TEST_F(LoaderTest, PidFilterAndItsErrors) {
  auto f = make(complete());
  ASSERT_TRUE(f);
  LoadOptions only;
  only.pids = {20};
  auto rows = load_trace(*f, only);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->calls.size(), 100u);
  EXPECT_TRUE(rows->offcpu.empty());

  LoadOptions unknown;
  unknown.pids = {999};
  auto bad = load_trace(*f, unknown);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().exit_code, 2);
  EXPECT_NE(bad.error().line().find("pid 999 is not in this trace"), std::string::npos);
  EXPECT_NE(bad.error().line().find("10 (trainer)"), std::string::npos);

  LoadOptions not_gpu;
  not_gpu.pids = {30};  // a traced process, but no GPU call
  auto none = load_trace(*f, not_gpu);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().what.find("made no GPU API call"), std::string::npos);
}

TEST_F(LoaderTest, ParallelScanGivesTheSameRowsInTheSameOrder) {
  // 800 k syscalls of 4 threads: ~200 chunks, scanned by rowid range on one and on four
  // connections (the extra ones read the chunk table, a real table in the file).
  auto f = make(complete(), R"(
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 799999)
INSERT INTO syscalls(ts, dur, pid, tid, nr, ret)
SELECT t0 + i * 1000, 500, 10, 10 + i % 4, i % 300, 0 FROM fx, n;
)");
  ASSERT_TRUE(f);
  auto read = [](const Query& q, std::vector<int64_t>& out) {
    out.push_back(q.i64(0) * 1000000 + q.i64(1));
  };
  const std::string sql =
      "SELECT id, rows FROM syscalls_chunks WHERE id >= :lo AND id < :hi AND ts_min < :to";
  std::vector<int64_t> serial, parallel;
  {
    ScanPool one(f->db(), 1);
    ASSERT_TRUE(one.scan("syscalls_chunks", sql, kT0, kT0 + 700 * kMs, read, serial, 8).ok());
  }
  {
    ScanPool four(f->db(), 4);
    ASSERT_EQ(four.size(), 4u);
    ASSERT_TRUE(four.scan("syscalls_chunks", sql, kT0, kT0 + 700 * kMs, read, parallel, 8).ok());
  }
  EXPECT_GT(serial.size(), 150u);
  EXPECT_EQ(serial, parallel);
}

TEST_F(LoaderTest, ChunkedRowsComeBackSortedByThreadAndTime) {
  // Two threads interleaved in time, enough rows for several chunks each: the loader's
  // per-thread-range parallel decode must give every row in the window once, sorted by (tid, ts).
  auto f = make(complete(), R"(
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 199999)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, stream)
SELECT t0 + i * 10000, 2000, 20, 21 + i % 2, 1, 1, 0, 0 FROM fx, n;
)");
  ASSERT_TRUE(f);
  auto rows = load_trace(*f, {});
  ASSERT_TRUE(rows) << rows.error().line();
  ASSERT_EQ(rows->calls.size(), 200'000u + 202u);  // + the base fixture's calls
  for (size_t i = 1; i < rows->calls.size(); ++i) {
    const CallRow& a = rows->calls[i - 1];
    const CallRow& b = rows->calls[i];
    ASSERT_TRUE(a.tid < b.tid || (a.tid == b.tid && a.ts <= b.ts)) << "row " << i;
  }
  EXPECT_EQ(rows->calls.back().tid, 22u);
}

}  // namespace
}  // namespace gpuwhy::analysis
