// SPDX-License-Identifier: Apache-2.0
// The per-second rollups (store/rollups.hpp): what the writer and the INSERT path store equals a
// GROUP BY over the event rows, whatever the chunking (full chunks, a chunk flushed by age, a
// thread over many chunks); a rolled-back write leaves no rollup row; and a file written before
// the rollup tables existed answers the views that read them, from its events.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "analysis_test_util.hpp"
#include "store/event_tables.hpp"
#include "store/rollups.hpp"
#include "store_fixture.hpp"

namespace gpuwhy {
namespace {

using namespace gpuwhy::testing;
using Rows = std::vector<std::vector<std::string>>;

// Each rollup summed per key, next to the same GROUP BY over the events: they must be equal.
constexpr const char* kApiRollup =
    "SELECT pid, tid, api, second, sum(calls), sum(dur_ns), max(max_dur_ns), sum(bytes) "
    "FROM api_calls_per_second GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4";
constexpr const char* kApiRows =
    "SELECT pid, tid, api, (ts - (SELECT start_ns FROM session)) / 1000000000, count(*), "
    "sum(dur), max(dur), sum(bytes) FROM api_calls GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4";
constexpr const char* kOffCpuRollup =
    "SELECT pid, tid, second, preempted, other_comm, sum(ns), sum(runq_ns), sum(intervals) "
    "FROM offcpu_per_second GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5";
constexpr const char* kOffCpuRows =
    "SELECT pid, tid, (ts - (SELECT start_ns FROM session)) / 1000000000, preempted != 0, "
    "CASE WHEN preempted THEN next_comm ELSE waker_comm END, sum(dur), sum(runq), count(*) "
    "FROM offcpu GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5";

// A rollup equals its GROUP BY over the events, and there is something to compare.
void expect_rollup_matches_rows(const store::TraceFile& f, const char* rollup, const char* events) {
  const Rows expected = rows(f, events);
  EXPECT_FALSE(expected.empty()) << events;
  EXPECT_EQ(rows(f, rollup), expected);
}

void expect_rollups_match_rows(const store::TraceFile& f) {
  expect_rollup_matches_rows(f, kApiRollup, kApiRows);
  expect_rollup_matches_rows(f, kOffCpuRollup, kOffCpuRows);
}

// Rows the file itself stores (not a view computing them).
std::string stored_rows(const store::TraceFile& f, const std::string& table) {
  return scalar(f, "SELECT count(*) FROM main." + table);
}

// Calls of thread 11 every millisecond for 12.4 s: three full chunks and a partial one, with keys
// (api, second) cut by chunk boundaries. Copies carry bytes, launches none.
std::vector<Event> busy_thread() {
  std::vector<Event> out;
  for (int64_t i = 0; i < 3 * int64_t{store::kChunkRows} + 100; ++i) {
    const char* api = i % 50 == 0 ? "cudaStreamSynchronize"
                      : i % 10 == 0 ? "cudaMemcpyAsync"
                                    : "cudaLaunchKernel";
    ApiCall c = call(api, kStart + i * kMs, 2000 + i % 97 * 100, 10, 11);
    if (i % 10 == 0 && i % 50 != 0) c.f.bytes = 1000 + uint64_t(i);
    out.push_back(c);
  }
  return out;
}

// Off-CPU intervals of thread 11 (preempted by one of two tasks, or blocked and woken by a known
// task or by nobody recorded: a NULL waker) and of thread 21 of another process.
std::vector<Event> intervals() {
  std::vector<Event> out;
  for (int64_t i = 0; i < 5000; ++i) {
    const bool preempted = i % 3 == 0;
    out.push_back(offcpu(kStart + i * 2 * kMs + 500'000, 300'000 + i % 13, 10, 11, preempted,
                         i % 2 ? "kworker/0:1" : "python3", i % 5 ? "irq/nvidia" : "", 50));
  }
  for (int64_t i = 0; i < 300; ++i)
    out.push_back(offcpu(kStart + i * 7 * kMs, kMs, 20, 21, i % 4 == 0, "cpu_hog", "nccl-proxy"));
  return out;
}

// A trace file in a temporary directory, written by the agent's writer.
class StoreRollup : public ::testing::Test {
 protected:
  void SetUp() override {
    w_ = make_writer(path_);
    ASSERT_TRUE(w_);
  }
  // Writes `events` as one more batch, finishes the trace at `end_ns` and opens it.
  std::unique_ptr<store::TraceFile> finish_and_open(const std::vector<Event>& events,
                                                    int64_t end_ns) {
    EXPECT_TRUE(w_->write_batch(events).ok());
    EXPECT_TRUE(w_->finish(end_ns).ok());
    w_.reset();
    return open_trace(path_);
  }
  TempDir dir_;
  const std::string path_ = dir_.file("t.db");
  std::unique_ptr<store::TraceWriter> w_;
};

TEST_F(StoreRollup, WriterRollupsEqualAGroupByOverTheRows) {
  // Thread 12's few calls (one before the session start: second -1, truncated as SQL does) and
  // thread 22's interval stay in open chunks until they are a second old.
  const std::vector<Event> early{call("cudaMalloc", kStart - 1500 * kMs, 10, 10, 12),
                                 call("cudaFree", kStart + 100 * kMs, 20, 10, 12),
                                 call("cudaFree", kStart + 1200 * kMs, 30, 10, 12),
                                 offcpu(kStart + 5 * kMs, kMs, 20, 22, false, "", "")};
  ASSERT_TRUE(w_->write_batch(early).ok());
  std::this_thread::sleep_for(std::chrono::nanoseconds(store::kChunkFlushAgeNs) +
                              std::chrono::milliseconds(50));
  ASSERT_TRUE(w_->flush_due().ok());
  {
    auto live = open_trace(path_);
    ASSERT_TRUE(live);
    EXPECT_EQ(stored_rows(*live, "api_calls_per_second"), "3");  // (api, second): 3 keys
    EXPECT_EQ(stored_rows(*live, "offcpu_per_second"), "1");
    expect_rollups_match_rows(*live);
    EXPECT_EQ(scalar(*live, "SELECT min(second) FROM api_calls_per_second"), "-1");
  }
  ASSERT_TRUE(w_->write_batch(busy_thread()).ok());
  auto f = finish_and_open(intervals(), kStart + 20'000 * kMs);
  ASSERT_TRUE(f);
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls_chunks WHERE tid = 11"), "4");
  // A key cut by a chunk boundary has a row per chunk: the views sum them.
  EXPECT_NE(scalar(*f,
                   "SELECT count(*) FROM (SELECT 1 FROM api_calls_per_second WHERE tid = 11 "
                   "GROUP BY api, second HAVING count(*) > 1)"),
            "0");
  expect_rollups_match_rows(*f);
  EXPECT_EQ(scalar(*f, "SELECT sum(calls) FROM api_calls_per_second"),
            scalar(*f, "SELECT count(*) FROM api_calls"));
}

TEST(StoreRollupInsert, InsertedRowsGetTheirRollupsToo) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  const std::string t0 = std::to_string(kStart);
  // Two threads' calls interleaved over 10 s (5000 each: two chunks per thread), three APIs, bytes
  // on one of them; thread 100's intervals alternate preempted and blocked, some without a name.
  const std::string fixture = R"(
INSERT INTO session(id, status, host, kernel, agent_version, abi_version, command_line, start_ns,
                    mono_to_wall_ns)
VALUES (1, 'complete', 'h', 'k', 'v', 1, 'c', )" + t0 + R"(, 0);
INSERT INTO strings(id, s) VALUES (1, 'kworker'), (2, 'waker');
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, bytes)
SELECT )" + t0 + R"( + i * 1000000, 1000 + i % 7, 100, 100 + i % 2, 1 + i % 3, 1, 0,
       CASE WHEN i % 3 = 1 THEN 4096 + i END FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 5999)
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state, next_comm, waker_comm)
SELECT )" + t0 + R"( + i * 2000000, 500 + i % 11, 100, 100, 100, 0, i % 2, 1 - i % 2,
       CASE WHEN i % 4 < 2 THEN 1 END, 2 FROM n;
)";
  ASSERT_EQ(analysis::testing::make_trace_db(path, fixture), "");
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_NE(stored_rows(*f, "api_calls_per_second"), "0");
  EXPECT_NE(stored_rows(*f, "offcpu_per_second"), "0");
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls_chunks"), "4");
  expect_rollups_match_rows(*f);
}

// Off-CPU intervals of thread `tid` filling one chunk: the batch writes it at once.
std::vector<Event> full_offcpu_chunk(int64_t t0, uint32_t tid) {
  std::vector<Event> b;
  for (uint32_t i = 0; i < store::kChunkRows; ++i)
    b.push_back(offcpu(t0 + i * 100, 5, 1, tid, true, "next", ""));
  return b;
}

TEST_F(StoreRollup, FailedBatchLeavesNoRollupRow) {
  ASSERT_TRUE(w_->write_batch(full_offcpu_chunk(kStart, 1)).ok());
  // The rollup rows are written, then the chunk fails: both must go.
  raw_exec(path_,
           "CREATE TRIGGER no_chunk BEFORE INSERT ON offcpu_chunks "
           "BEGIN SELECT RAISE(ABORT, 'disk says no'); END;");
  EXPECT_FALSE(w_->write_batch(full_offcpu_chunk(kStart + kMs, 2)).ok());
  raw_exec(path_, "DROP TRIGGER no_chunk;");
  // The rollup fails: the chunk is not stored either, and its rows count as lost.
  raw_exec(path_,
           "CREATE TRIGGER no_rollup BEFORE INSERT ON offcpu_per_second "
           "BEGIN SELECT RAISE(ABORT, 'disk says no'); END;");
  const Status st = w_->write_batch(full_offcpu_chunk(kStart + 2 * kMs, 3));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("offcpu_per_second"), std::string::npos) << st.error().what;
  raw_exec(path_, "DROP TRIGGER no_rollup;");
  ASSERT_TRUE(w_->write_batch(full_offcpu_chunk(kStart + 3 * kMs, 4)).ok());
  ASSERT_TRUE(w_->set_counts({}, {}).ok());

  auto f = open_trace(path_);
  ASSERT_TRUE(f);
  EXPECT_EQ(rows(*f, "SELECT DISTINCT tid FROM offcpu_per_second ORDER BY tid"),
            (Rows{{"1"}, {"4"}}));
  EXPECT_EQ(rows(*f, "SELECT DISTINCT tid FROM offcpu ORDER BY tid"), (Rows{{"1"}, {"4"}}));
  EXPECT_EQ(rows(*f, "SELECT source, cause, count FROM losses"),
            (Rows{{"store", "write_error", std::to_string(2 * store::kChunkRows)}}));
  expect_rollup_matches_rows(*f, kOffCpuRollup, kOffCpuRows);
}

int64_t count_of(sqlite3* db, const std::string& table) {
  sqlite3_stmt* s = nullptr;
  int64_t n = -1;
  if (sqlite3_prepare_v2(db, ("SELECT count(*) FROM " + table).c_str(), -1, &s, nullptr) ==
          SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW)
    n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return n;
}

TEST(StoreRollupInsert, RolledBackInsertLeavesNoRollupRow) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  ASSERT_EQ(analysis::testing::make_trace_db(path, ""), "");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_TRUE(store::attach_chunked_tables(db).ok());
  ASSERT_EQ(sqlite3_exec(db,
                         "BEGIN; INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret) "
                         "VALUES (1, 1, 1, 1, 1, 1, 0), (2, 1, 1, 2, 1, 1, 0);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  // Reading the table writes the buffered rows as chunks, with their rollups, inside the
  // transaction ...
  EXPECT_EQ(count_of(db, "api_calls"), 2);
  EXPECT_EQ(count_of(db, "api_calls_per_second"), 2);
  // ... which takes them all back.
  ASSERT_EQ(sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(count_of(db, "api_calls_chunks"), 0);
  EXPECT_EQ(count_of(db, "api_calls_per_second"), 0);
  EXPECT_EQ(sqlite3_close(db), SQLITE_OK);
}

// The whole-trace views, each in a fixed order.
const char* const kViewQueries[] = {
    "SELECT * FROM v_thread_offcpu ORDER BY pid, tid",
    "SELECT * FROM v_throughput",
    "SELECT * FROM v_op_totals ORDER BY pid, tid, api",
};

TEST_F(StoreRollup, FileWithoutRollupTablesAnswersTheSameFromItsEvents) {
  const std::string old = dir_.file("old.db");
  ASSERT_TRUE(w_->write_batch(busy_thread()).ok());
  ASSERT_TRUE(w_->upsert_thread(10, 11, "trainer", kStart).ok());
  auto with = finish_and_open(intervals(), kStart + 20'000 * kMs);
  // A schema-2 file from before the rollups: the same events, no rollup tables.
  std::filesystem::copy_file(path_, old);
  raw_exec(old, "DROP TABLE api_calls_per_second; DROP TABLE offcpu_per_second;");
  auto without = open_trace(old);
  ASSERT_TRUE(with && without);
  EXPECT_EQ(scalar(*without,
                   "SELECT count(*) FROM sqlite_schema WHERE name LIKE '%_per_second'"),
            "0");
  for (const char* q : kViewQueries) {
    SCOPED_TRACE(q);
    const Rows expected = rows(*with, q);
    EXPECT_FALSE(expected.empty());
    EXPECT_EQ(rows(*without, q), expected);
  }
  expect_rollups_match_rows(*without);
  without.reset();

  // Rows inserted into such a file get no rollup (there is no table for it) and still count.
  raw_exec(old,
           "INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret) VALUES (" +
               std::to_string(kStart) + ", 5, 10, 13, 1, 1, 0)");
  without = open_trace(old);
  ASSERT_TRUE(without);
  EXPECT_EQ(scalar(*without, "SELECT calls FROM v_op_totals WHERE tid = 13"), "1");
}

// The investigations' traces were recorded before the rollups: their views answer per row.
TEST(StoreRollupOldFiles, InvestigationTracesAnswerTheViews) {
  const auto root = std::filesystem::path(GW_SOURCE_DIR) / "investigations";
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(root)) {
    const auto db = e.path() / "trace.db";
    if (!std::filesystem::exists(db)) continue;
    SCOPED_TRACE(db.string());
    auto f = open_trace(db.string());
    ASSERT_TRUE(f);
    EXPECT_EQ(rows(*f, "SELECT pid, tid, offcpu_ns, intervals FROM v_thread_offcpu "
                       "ORDER BY pid, tid"),
              rows(*f, "SELECT pid, tid, sum(dur), count(*) FROM offcpu GROUP BY pid, tid "
                       "ORDER BY pid, tid"));
    EXPECT_EQ(rows(*f, "SELECT name, sum(calls), sum(dur_ns) FROM v_op_totals GROUP BY name "
                       "ORDER BY name"),
              rows(*f, "SELECT name, count(*), sum(dur) FROM v_calls GROUP BY name "
                       "ORDER BY name"));
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

// A table added later (cpu_samples) is absent from older files: a query says the file predates
// it, and a newer one has it.
TEST(StoreRollupOldFiles, TablesAFilePredatesAreNamedAsSuch) {
  const auto root = std::filesystem::path(GW_SOURCE_DIR) / "investigations";
  auto old = open_trace((root / "lock-convoy" / "trace.db").string());
  ASSERT_TRUE(old);
  auto q = store::run_query(*old, "SELECT count(*) FROM v_thread_cpu");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.error().line().find("no such table: cpu_samples (this trace predates that table"),
            std::string::npos)
      << q.error().line();
  auto newer = open_trace((root / "inline-checkpoint" / "trace.db").string());
  ASSERT_TRUE(newer);
  EXPECT_NE(scalar(*newer, "SELECT count(*) FROM cpu_samples"), "0");
}

TEST_F(StoreRollup, OpTotalsPerThreadAndApi) {
  ApiCall big = call("cudaMemcpy", kStart + 2500 * kMs, 700, 10, 11);
  big.f.bytes = 300;
  ApiCall small = call("cudaMemcpy", kStart + 10, 100, 10, 11);
  small.f.bytes = 20;
  auto f = finish_and_open({small, big, call("cudaLaunchKernel", kStart + 5, 40, 10, 11),
                            call("cudaLaunchKernel", kStart + 9, 60, 10, 12)},
                           kStart + 3000 * kMs);
  ASSERT_TRUE(f);
  EXPECT_EQ(rows(*f,
                 "SELECT pid, tid, name, family, category, calls, dur_ns, max_dur_ns, avg_dur_ns, "
                 "bytes FROM v_op_totals ORDER BY tid, name"),
            (Rows{{"10", "11", "cudaLaunchKernel", "cudart", "launch", "1", "40", "40", "40",
                   "NULL"},
                  {"10", "11", "cudaMemcpy", "cudart", "copy", "2", "800", "700", "400", "320"},
                  {"10", "12", "cudaLaunchKernel", "cudart", "launch", "1", "60", "60", "60",
                   "NULL"}}));
}

// Seconds truncate toward zero as SQLite's integer division does, even far from the start.
TEST(StoreRollupSecond, TruncatesLikeSqlAndNeverOverflows) {
  EXPECT_EQ(store::rollup_second(kStart + 1999 * kMs, kStart), 1);
  EXPECT_EQ(store::rollup_second(kStart - 1 * kMs, kStart), 0);
  EXPECT_EQ(store::rollup_second(kStart - 1500 * kMs, kStart), -1);
  EXPECT_EQ(store::rollup_second(INT64_MAX, INT64_MIN), (INT64_MAX / 1'000'000'000) * 2 + 1);
  EXPECT_EQ(store::rollup_second(INT64_MIN, INT64_MAX), -((INT64_MAX / 1'000'000'000) * 2 + 1));
}

}  // namespace
}  // namespace gpuwhy
