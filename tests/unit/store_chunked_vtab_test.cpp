// SPDX-License-Identifier: Apache-2.0
// The event tables as SQL tables (store/chunked_vtab.hpp): rows INSERTed through SQL become chunks
// at commit and read back unchanged; every pushed-down constraint (tid, pid, ts, rowid) returns
// exactly the rows a full scan filtered here would; the tables are append-only; damaged chunks are
// SQL errors; and the per-call views work on a finished file.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "analysis_test_util.hpp"
#include "store/chunked_tables.hpp"
#include "store/chunked_vtab.hpp"
#include "store/embedded_sql.hpp"
#include "store_fixture.hpp"

namespace gpuwhy {
namespace {

using gpuwhy::testing::TempDir;
using Value = std::optional<int64_t>;
using Row = std::vector<Value>;

constexpr int64_t kT = 1'700'000'000'000'000'000;
constexpr int kApiColumns = 18;
const char* const kApiCols =
    "ts, dur, pid, tid, api, lib, ret, stream, bytes, op, addr, addr2, blocks, tpb, peer, "
    "nranks, stack_id, flags";

class ChunkedVtab : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("t.db");
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db_), SQLITE_OK);
    for (const EmbeddedSql& f : embedded_sql())
      if (f.name == "schema.sql") exec(std::string(f.text));
    auto st = store::attach_chunked_tables(db_);
    ASSERT_TRUE(st.ok()) << st.error().line();
  }
  void TearDown() override { EXPECT_EQ(sqlite3_close(db_), SQLITE_OK); }

  void exec(const std::string& sql) {
    char* msg = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg), SQLITE_OK)
        << sql.substr(0, 200) << ": " << (msg ? msg : "");
    sqlite3_free(msg);
  }
  // The error message of SQL expected to fail ("" if it did not).
  std::string error_of(const std::string& sql) {
    char* msg = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg);
    std::string out = rc == SQLITE_OK ? "" : msg ? msg : "?";
    sqlite3_free(msg);
    EXPECT_NE(rc, SQLITE_OK) << sql << " succeeded";
    return out;
  }
  std::vector<Row> query(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    std::vector<Row> out;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db_);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      Row r;
      for (int c = 0; c < sqlite3_column_count(s); ++c)
        r.push_back(sqlite3_column_type(s, c) == SQLITE_NULL ? Value{}
                                                             : Value{sqlite3_column_int64(s, c)});
      out.push_back(std::move(r));
    }
    EXPECT_EQ(rc, SQLITE_DONE) << sql << ": " << sqlite3_errmsg(db_);
    sqlite3_finalize(s);
    return out;
  }
  int64_t count(const std::string& sql) {
    auto r = query(sql);
    return r.empty() || !r[0][0] ? -1 : *r[0][0];
  }
  // idxNum of the plan SQLite picked for `alias` ("SCAN c VIRTUAL TABLE INDEX 9:..."), -1 if none.
  std::vector<int> plan_indexes(const std::string& sql, const std::string& alias) {
    std::vector<int> out;
    for (const auto& r : query_text("EXPLAIN QUERY PLAN " + sql)) {
      const std::string prefix = "SCAN " + alias + " VIRTUAL TABLE INDEX ";
      if (r.size() == 1 && r[0].starts_with(prefix))
        out.push_back(std::stoi(r[0].substr(prefix.size())));
    }
    return out;
  }
  // Every column as text ("NULL" for NULL), in the order SQLite returns the rows.
  std::vector<std::vector<std::string>> query_strings(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    std::vector<std::vector<std::string>> out;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db_);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      std::vector<std::string> r;
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const auto* t = sqlite3_column_text(s, c);
        r.push_back(t ? reinterpret_cast<const char*>(t) : "NULL");
      }
      out.push_back(std::move(r));
    }
    EXPECT_EQ(rc, SQLITE_DONE) << sql << ": " << sqlite3_errmsg(db_);
    sqlite3_finalize(s);
    return out;
  }
  // Whether SQLite sorts for the statement (EXPLAIN QUERY PLAN says "USE TEMP B-TREE").
  bool sorts(const std::string& sql) {
    for (const auto& r : query_text("EXPLAIN QUERY PLAN " + sql))
      if (r[0].find("TEMP B-TREE") != std::string::npos) return true;
    return false;
  }
  std::vector<std::vector<std::string>> query_text(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    std::vector<std::vector<std::string>> out;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db_);
    while (sqlite3_step(s) == SQLITE_ROW) {
      const auto* t = sqlite3_column_text(s, 3);
      out.push_back({t ? reinterpret_cast<const char*>(t) : ""});
    }
    sqlite3_finalize(s);
    return out;
  }

  // Inserts api_calls rows through one prepared INSERT, in one transaction.
  void insert_calls(const std::vector<Row>& rows) {
    exec("BEGIN");
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db_,
                                 (std::string("INSERT INTO api_calls(") + kApiCols +
                                  ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
                                     .c_str(),
                                 -1, &s, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db_);
    for (const Row& r : rows) {
      for (int c = 0; c < kApiColumns; ++c)
        r[c] ? sqlite3_bind_int64(s, c + 1, *r[c]) : sqlite3_bind_null(s, c + 1);
      ASSERT_EQ(sqlite3_step(s), SQLITE_DONE) << sqlite3_errmsg(db_);
      sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    exec("COMMIT");
  }

  TempDir dir_;
  std::string path_;
  sqlite3* db_ = nullptr;
};

// Random calls of thread (pid, tid): timestamps in random order, NULLs and 64-bit extremes in the
// optional columns.
std::vector<Row> random_calls(int64_t pid, int64_t tid, int n, uint64_t seed, int64_t spread_ns) {
  std::mt19937_64 rng(seed);
  std::vector<Row> rows;
  for (int i = 0; i < n; ++i) {
    Row r(kApiColumns);
    r[0] = kT + static_cast<int64_t>(rng() % static_cast<uint64_t>(spread_ns));
    r[1] = static_cast<int64_t>(rng() % 100'000);
    r[2] = pid;
    r[3] = tid;
    r[4] = static_cast<int64_t>(rng() % 40);
    r[5] = 1;
    r[6] = rng() % 10 == 0 ? 700 : 0;
    for (int c = 7; c < 17; ++c) {
      switch (rng() % 4) {
        case 0:
          break;  // NULL
        case 1:
          r[c] = static_cast<int64_t>(rng());
          break;
        case 2:
          r[c] = rng() % 2 ? INT64_MIN : INT64_MAX;
          break;
        default:
          r[c] = static_cast<int64_t>(rng() % 5);
          break;
      }
    }
    r[17] = 0;
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<Row> sorted(std::vector<Row> rows) {
  std::sort(rows.begin(), rows.end());
  return rows;
}

TEST_F(ChunkedVtab, InsertedRowsReadBackUnchangedWithTheirNulls) {
  std::vector<Row> all;
  for (auto [pid, tid, n] : std::initializer_list<std::tuple<int, int, int>>{
           {10, 11, 1500}, {10, 12, 700}, {20, 21, 5}}) {
    auto rows = random_calls(pid, tid, n, tid, 1'000'000'000);
    all.insert(all.end(), rows.begin(), rows.end());
  }
  insert_calls(all);
  EXPECT_EQ(sorted(query(std::string("SELECT ") + kApiCols + " FROM api_calls")), sorted(all));
  EXPECT_EQ(count("SELECT count(*) FROM api_calls_chunks"), 3) << "one chunk per thread";
  EXPECT_EQ(count("SELECT sum(rows) FROM api_calls_chunks"), 2205);
  // A second connection (what a reader opens) sees the same rows.
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &other), SQLITE_OK);
  ASSERT_TRUE(store::attach_chunked_tables(other).ok());
  std::swap(db_, other);
  EXPECT_EQ(sorted(query(std::string("SELECT ") + kApiCols + " FROM api_calls")), sorted(all));
  std::swap(db_, other);
  sqlite3_close(other);
}

TEST_F(ChunkedVtab, ColumnValuesAreIntegersAndKeysAreRequired) {
  exec("INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret) VALUES (2e6, '7', 1, 1, 1, 1, 0)");
  EXPECT_EQ(query("SELECT ts, dur, flags, stream FROM api_calls"),
            (std::vector<Row>{{2'000'000, 7, 0, std::nullopt}}))
      << "integral REAL and numeric text are integers; flags defaults to 0";
  exec(
      "INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, flags) VALUES (3, 1, 1, 1, 1, 1, 0, "
      "1)");
  EXPECT_EQ(count("SELECT sum(flags) FROM api_calls"), 1);
  EXPECT_EQ(error_of("INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret) "
                     "VALUES (1, 1.5, 1, 1, 1, 1, 0)"),
            "api_calls.dur must be an integer");
  EXPECT_EQ(error_of("INSERT INTO offcpu(ts, dur, runq, pid, cpu, preempted, state) "
                     "VALUES (1, 1, 0, 1, 0, 0, 1)"),
            "offcpu.tid may not be NULL");
  EXPECT_EQ(error_of("INSERT INTO syscalls(ts, dur, pid, tid, nr) VALUES (1, -5, 1, 1, 0)"),
            "syscalls.dur may not be negative");
  EXPECT_EQ(error_of("INSERT INTO reclaim(ts, dur, pid, tid) VALUES ('soon', 1, 1, 1)"),
            "reclaim.ts must be an integer");
  EXPECT_EQ(error_of("INSERT INTO block_io(ts, dur, pid, tid) VALUES (9223372036854775000, 1000, "
                     "1, 1)"),
            "block_io.ts + dur does not fit in 64 bits");
  EXPECT_EQ(count("SELECT count(*) FROM api_calls"), 2);
}

TEST_F(ChunkedVtab, UpdateAndDeleteAreRefused) {
  exec("INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret) VALUES (1, 1, 1, 1, 1, 1, 0)");
  exec(
      "INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state) "
      "VALUES (1, 1, 0, 1, 1, 0, 0, 1)");
  EXPECT_EQ(error_of("UPDATE api_calls SET dur = 2"),
            "api_calls rows cannot be changed: trace event tables are append-only");
  EXPECT_EQ(error_of("DELETE FROM offcpu"),
            "offcpu rows cannot be changed: trace event tables are append-only");
  EXPECT_EQ(error_of("DELETE FROM api_calls WHERE tid = 1"),
            "api_calls rows cannot be changed: trace event tables are append-only");
  EXPECT_EQ(count("SELECT dur FROM api_calls"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM offcpu"), 1);
}

TEST_F(ChunkedVtab, RollbackDropsBufferedRows) {
  const std::string ins = "INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret) VALUES ";
  exec("BEGIN; " + ins + "(1, 1, 1, 1, 1, 1, 0), (2, 1, 1, 1, 1, 1, 0); ROLLBACK");
  EXPECT_EQ(count("SELECT count(*) FROM api_calls"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM api_calls_chunks"), 0);

  // Rows read back inside their transaction; a savepoint and a failed statement undo only theirs.
  exec("BEGIN; " + ins + "(10, 1, 1, 1, 1, 1, 0)");
  EXPECT_EQ(count("SELECT count(*) FROM api_calls"), 1) << "rows are visible before COMMIT";
  exec("SAVEPOINT s; " + ins + "(20, 1, 1, 1, 1, 1, 0); ROLLBACK TO s; RELEASE s");
  exec(ins + "(30, 1, 1, 1, 1, 1, 0)");
  EXPECT_NE(error_of(ins + "(40, 1, 1, 1, 1, 1, 0), (50, 1, 1, NULL, 1, 1, 0)"), "");
  exec("COMMIT");
  EXPECT_EQ(query("SELECT ts FROM api_calls WHERE tid = 1 ORDER BY ts"),
            (std::vector<Row>{{10}, {30}}));

  // A rolled-back chunk's id is reused by the next one: nothing stale is read from the cache.
  exec("BEGIN; " + ins + "(60, 1, 2, 2, 1, 1, 0)");
  EXPECT_EQ(count("SELECT ts FROM api_calls WHERE tid = 2"), 60);
  exec("ROLLBACK; " + ins + "(70, 1, 2, 2, 1, 1, 0)");
  EXPECT_EQ(query("SELECT ts FROM api_calls WHERE tid = 2"), (std::vector<Row>{{70}}));
}

// Everything from a full scan, then each constraint SQLite pushes down gives what the same filter
// applied here gives, in the order asked for.
class ChunkedVtabPushdown : public ChunkedVtab {
 protected:
  void SetUp() override {
    ChunkedVtab::SetUp();
    std::vector<Row> rows;
    // Thread 11: 10000 calls in random order: three chunks with overlapping time ranges.
    // Thread 12: 9000 calls in time order: three chunks one after the other. Thread 21: a few.
    auto a = random_calls(10, 11, 10'000, 1, 10'000'000);
    auto b = random_calls(10, 12, 9'000, 2, 10'000'000);
    std::sort(b.begin(), b.end());
    auto c = random_calls(20, 21, 50, 3, 10'000'000);
    for (auto* v : {&a, &b, &c}) rows.insert(rows.end(), v->begin(), v->end());
    insert_calls(rows);
    full_ = query("SELECT rowid, ts, dur, pid, tid, stream FROM api_calls");
    ASSERT_EQ(full_.size(), rows.size());
  }

  // Rows of the full scan that satisfy `keep`, as (rowid, ts, dur, pid, tid, stream).
  template <class F>
  std::vector<Row> expected(F keep) const {
    std::vector<Row> out;
    for (const Row& r : full_)
      if (keep(*r[0], *r[1], *r[3], *r[4])) out.push_back(r);
    return out;
  }
  std::vector<Row> got(const std::string& where) {
    return query("SELECT rowid, ts, dur, pid, tid, stream FROM api_calls WHERE " + where);
  }

  std::vector<Row> full_;
};

TEST_F(ChunkedVtabPushdown, RowidsAreUniqueAndFindTheirRow) {
  EXPECT_EQ(count("SELECT count(DISTINCT rowid) FROM api_calls"), 19'050);
  EXPECT_EQ(count("SELECT count(*) FROM api_calls_chunks"), 3 + 3 + 1);
  for (size_t i = 0; i < full_.size(); i += 997) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got("rowid = " + std::to_string(*full_[i][0])), std::vector<Row>{full_[i]});
  }
  EXPECT_TRUE(got("rowid = 0").empty());
  EXPECT_TRUE(got("rowid = -5").empty());
  EXPECT_TRUE(got("rowid = " + std::to_string(*full_.back()[0] + 1)).empty());
  const int64_t r1 = *full_[3000][0], r2 = *full_[12000][0];
  EXPECT_EQ(
      sorted(got("rowid >= " + std::to_string(r1) + " AND rowid < " + std::to_string(r2))),
      sorted(expected([&](int64_t id, int64_t, int64_t, int64_t) { return id >= r1 && id < r2; })));
  EXPECT_EQ(query("SELECT rowid FROM api_calls ORDER BY rowid DESC LIMIT 1"),
            (std::vector<Row>{{*std::max_element(full_.begin(), full_.end())->at(0)}}));
}

TEST_F(ChunkedVtabPushdown, ThreadAndTimeConstraintsDropNoRow) {
  const int64_t mid = kT + 5'000'000;
  // Boundaries on real timestamps, so strict and non-strict comparisons differ.
  const int64_t at = *full_[4321][1], at2 = *full_[17000][1];
  struct Case {
    std::string where;
    std::function<bool(int64_t, int64_t, int64_t, int64_t)> keep;
  };
  const std::vector<Case> cases = {
      {"tid = 11", [](int64_t, int64_t, int64_t, int64_t tid) { return tid == 11; }},
      {"tid = '12'", [](int64_t, int64_t, int64_t, int64_t tid) { return tid == 12; }},
      {"tid = 12.0", [](int64_t, int64_t, int64_t, int64_t tid) { return tid == 12; }},
      {"tid = 12.5", [](int64_t, int64_t, int64_t, int64_t) { return false; }},
      {"tid = NULL", [](int64_t, int64_t, int64_t, int64_t) { return false; }},
      {"tid IN (11, 21, 99)",
       [](int64_t, int64_t, int64_t, int64_t tid) { return tid == 11 || tid == 21; }},
      {"tid = 11 AND pid = 10",
       [](int64_t, int64_t, int64_t pid, int64_t tid) { return tid == 11 && pid == 10; }},
      {"tid = 11 AND pid = 20", [](int64_t, int64_t, int64_t, int64_t) { return false; }},
      {"pid = 10", [](int64_t, int64_t, int64_t pid, int64_t) { return pid == 10; }},
      {"tid = 11 AND ts >= " + std::to_string(at),
       [&](int64_t, int64_t ts, int64_t, int64_t tid) { return tid == 11 && ts >= at; }},
      {"tid = 11 AND ts > " + std::to_string(at),
       [&](int64_t, int64_t ts, int64_t, int64_t tid) { return tid == 11 && ts > at; }},
      {"tid = 11 AND ts < " + std::to_string(at),
       [&](int64_t, int64_t ts, int64_t, int64_t tid) { return tid == 11 && ts < at; }},
      {"tid = 11 AND ts <= " + std::to_string(at),
       [&](int64_t, int64_t ts, int64_t, int64_t tid) { return tid == 11 && ts <= at; }},
      {"tid = 11 AND ts = " + std::to_string(at),
       [&](int64_t, int64_t ts, int64_t, int64_t tid) { return tid == 11 && ts == at; }},
      {"tid = 12 AND ts >= " + std::to_string(mid) + " AND ts < " + std::to_string(mid + 1'000'000),
       [&](int64_t, int64_t ts, int64_t, int64_t tid) {
         return tid == 12 && ts >= mid && ts < mid + 1'000'000;
       }},
      {"tid = 11 AND ts > " + std::to_string(mid) + " - 0.5 AND ts <= " + std::to_string(mid) +
           " + 2000000.5",
       [&](int64_t, int64_t ts, int64_t, int64_t tid) {
         return tid == 11 && ts >= mid && ts <= mid + 2'000'000;
       }},
      {"ts BETWEEN " + std::to_string(at) + " AND " + std::to_string(at2),
       [&](int64_t, int64_t ts, int64_t, int64_t) { return ts >= at && ts <= at2; }},
      {"pid = 10 AND ts >= " + std::to_string(mid),
       [&](int64_t, int64_t ts, int64_t pid, int64_t) { return pid == 10 && ts >= mid; }},
      {"ts < 'x' AND tid = 21", [](int64_t, int64_t, int64_t, int64_t tid) { return tid == 21; }},
      {"ts > 'x'", [](int64_t, int64_t, int64_t, int64_t) { return false; }},
      {"tid = 11 AND ts > 9223372036854775807",
       [](int64_t, int64_t, int64_t, int64_t) { return false; }},
      {"tid = 11 AND ts < 1e300", [](int64_t, int64_t, int64_t, int64_t tid) { return tid == 11; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.where);
    EXPECT_EQ(sorted(got(c.where)), sorted(expected(c.keep)));
  }
  // The thread plans really are pushed down (bit 0 of idxNum: tid).
  for (const char* where : {"tid = 11", "tid = 11 AND ts > 5", "tid = '12'"})
    for (int idx : plan_indexes("SELECT * FROM api_calls WHERE " + std::string(where), "api_calls"))
      EXPECT_EQ(idx & 1, 1) << where;
}

TEST_F(ChunkedVtabPushdown, OrderByTimeMergesOverlappingChunks) {
  for (int tid : {11, 12}) {
    std::vector<int64_t> want;
    for (const Row& r : full_)
      if (*r[4] == tid) want.push_back(*r[1]);
    std::sort(want.begin(), want.end());
    std::vector<int64_t> asc, desc;
    for (const Row& r :
         query("SELECT ts FROM api_calls WHERE tid = " + std::to_string(tid) + " ORDER BY ts"))
      asc.push_back(*r[0]);
    for (const Row& r :
         query("SELECT ts FROM api_calls WHERE tid = " + std::to_string(tid) + " ORDER BY ts DESC"))
      desc.push_back(*r[0]);
    EXPECT_EQ(asc, want);
    std::reverse(desc.begin(), desc.end());
    EXPECT_EQ(desc, want);
    // max(ts) before a time: the views' "last interval before the call" probe.
    for (size_t i = 0; i < want.size(); i += 613) {
      const int64_t x = want[i];
      const auto prev = std::lower_bound(want.begin(), want.end(), x);
      const Value expect = prev == want.begin() ? Value{} : Value{*(prev - 1)};
      EXPECT_EQ(query("SELECT max(ts) FROM api_calls WHERE tid = " + std::to_string(tid) +
                      " AND ts < " + std::to_string(x))[0][0],
                expect);
    }
  }
  // Several threads: SQLite sorts (an IN list cannot use one thread's order).
  std::vector<int64_t> both;
  for (const Row& r : full_)
    if (*r[4] != 21) both.push_back(*r[1]);
  std::sort(both.begin(), both.end());
  std::vector<int64_t> got_both;
  for (const Row& r : query("SELECT ts FROM api_calls WHERE tid IN (11, 12) ORDER BY ts"))
    got_both.push_back(*r[0]);
  EXPECT_EQ(got_both, both);
}

// GROUP BY and DISTINCT on the table's own columns: the rows come out grouped by the table (no
// sorter in the plan) and every aggregate equals what SQLite's sorter gives for the same query
// ("+col" is an expression, so SQLite sorts for it itself).
TEST_F(ChunkedVtabPushdown, GroupByAndDistinctGiveWhatTheSorterGives) {
  const std::string at = std::to_string(*full_[4321][1]);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"SELECT api, count(*), sum(dur), min(rowid), max(rowid) FROM api_calls GROUP BY %1",
       "api"},
      {"SELECT stream, count(*), total(dur), min(ts) FROM api_calls GROUP BY %1", "stream"},
      {"SELECT tid, op, count(*), total(bytes), max(rowid) FROM api_calls GROUP BY %1, %2",
       "tid|op"},
      {"SELECT peer, blocks, count(*) FROM api_calls WHERE pid = 10 GROUP BY %1, %2",
       "peer|blocks"},
      {"SELECT api, count(*), sum(dur) FROM api_calls WHERE tid = 11 AND ts > " + at +
           " GROUP BY %1",
       "api"},
      {"SELECT ret, count(*), sum(rowid % 1000) FROM api_calls WHERE tid = 21 GROUP BY %1",
       "ret"},
  };
  auto fill = [](std::string sql, const std::string& keys, bool plus) {
    std::vector<std::string> k;
    for (size_t b = 0, e; b <= keys.size(); b = e + 1) {
      e = keys.find('|', b);
      if (e == std::string::npos) e = keys.size();
      k.push_back((plus ? "+" : "") + keys.substr(b, e - b));
    }
    for (size_t i = 0; i < k.size(); ++i) {
      const std::string mark = "%" + std::to_string(i + 1);
      sql.replace(sql.find(mark), mark.size(), k[i]);
    }
    return sql;
  };
  for (const auto& [sql, keys] : cases) {
    const std::string grouped = fill(sql, keys, false), sorted_sql = fill(sql, keys, true);
    SCOPED_TRACE(grouped);
    EXPECT_FALSE(sorts(grouped)) << "the table groups the rows itself";
    EXPECT_TRUE(sorts(sorted_sql));
    const auto want = query_strings(sorted_sql);
    EXPECT_GT(want.size(), 1u);
    EXPECT_EQ(query_strings(grouped), want) << "same groups, in the same (ascending) order";
  }
  // DISTINCT with ORDER BY on its columns: distinct rows in the order asked for, NULLs first
  // ascending and last descending.
  for (auto [order, plus] : {std::pair{"op DESC, peer", "+op DESC, +peer"},
                             std::pair{"op, peer DESC", "+op, +peer DESC"}}) {
    const std::string sql = std::string("SELECT DISTINCT op, peer FROM api_calls ORDER BY ");
    SCOPED_TRACE(sql + order);
    EXPECT_EQ(query_strings(sql + order), query_strings(sql + plus));
  }
}

// Keys with more distinct values than the table counts groups for, and scans over the memory
// budget, still answer right: the first sorts the kept rows, the second leaves it to SQLite.
TEST_F(ChunkedVtabPushdown, ManyKeysAndOverBudgetScansStillGroup) {
  const std::string sql =
      "SELECT tid, api, count(*), sum(dur), max(rowid) FROM api_calls GROUP BY tid, api";
  const std::string by_ts = "SELECT ts, count(*), sum(dur) FROM api_calls GROUP BY ts";
  const auto want = query_strings(sql), want_ts = query_strings(by_ts);
  ASSERT_GT(want.size(), 50u);
  for (const store::ChunkedTableOptions& o :
       {store::ChunkedTableOptions{.max_groups = 8}, store::ChunkedTableOptions{.group_budget_bytes = 1000}}) {
    sqlite3* other = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &other), SQLITE_OK);
    ASSERT_TRUE(store::attach_chunked_tables(other, o).ok());
    std::swap(db_, other);
    EXPECT_EQ(sorts(sql), o.group_budget_bytes == 1000);
    EXPECT_EQ(query_strings(sql), want);
    EXPECT_EQ(query_strings(by_ts), want_ts);
    std::swap(db_, other);
    sqlite3_close(other);
  }
}

// api_calls.name, family and category: hidden text columns read from apis for the row's api,
// grouped and ordered by their text (two ids may share a name), NULL for an id apis lacks; a
// name added to apis later is seen by the next statement; they cannot be inserted.
TEST_F(ChunkedVtabPushdown, LabelColumnsNameTheApiWithoutAJoin) {
  exec("BEGIN");
  for (int id = 0; id < 30; ++id)
    exec("INSERT INTO apis(id, name, family, category) VALUES (" + std::to_string(id) + ", 'fn" +
         std::to_string(id % 7) + "', '" + (id % 2 ? "cudart" : "nccl") + "', 'c" +
         std::to_string(id % 3) + "')");
  exec("COMMIT");
  EXPECT_EQ(query_strings("SELECT * FROM api_calls LIMIT 1")[0].size(), 19u)
      << "label columns are hidden from SELECT *";
  const std::string joined =
      "SELECT a.name, a.family, count(*), sum(c.dur) FROM api_calls c LEFT JOIN apis a "
      "ON a.id = c.api GROUP BY a.name, a.family ORDER BY 1, 2";
  const std::string labels =
      "SELECT name, family, count(*), sum(dur) FROM api_calls GROUP BY name, family";
  EXPECT_FALSE(sorts(labels));
  const auto want = query_strings(joined);
  EXPECT_EQ(want.size(), 1u + 7 * 2) << "ids 30-39 have no name: one NULL group";
  EXPECT_EQ(query_strings(labels), want);
  EXPECT_EQ(query_strings("SELECT count(*) FROM api_calls WHERE category = 'c1'"),
            query_strings("SELECT count(*) FROM api_calls c JOIN apis a ON a.id = c.api "
                          "WHERE a.category = 'c1'"));
  EXPECT_EQ(query_strings("SELECT DISTINCT name FROM api_calls WHERE api = 35"),
            (std::vector<std::vector<std::string>>{{"NULL"}}));
  exec("INSERT INTO apis(id, name, family, category) VALUES (35, 'late', 'hip', 'c0')");
  EXPECT_EQ(query_strings("SELECT DISTINCT name FROM api_calls WHERE api = 35"),
            (std::vector<std::vector<std::string>>{{"late"}}));
  EXPECT_NE(error_of("INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret, name) "
                     "VALUES (1, 1, 1, 1, 1, 1, 0, 'x')")
                .find("api_calls.name cannot be set"),
            std::string::npos);
}

TEST_F(ChunkedVtab, DamagedChunksAreSqlErrors) {
  insert_calls(random_calls(1, 2, 50, 7, 1'000'000));
  ASSERT_EQ(count("SELECT count(*) FROM api_calls"), 50);
  exec("UPDATE api_calls_chunks SET data = substr(data, 1, length(data) - 9)");
  for (const char* sql : {"SELECT * FROM api_calls", "SELECT * FROM api_calls WHERE tid = 2",
                          "SELECT * FROM api_calls WHERE rowid = 4096"}) {
    const std::string err = error_of(sql);
    EXPECT_NE(err.find("corrupt event chunk in the trace file"), std::string::npos)
        << sql << ": " << err;
    EXPECT_NE(err.find("main.api_calls_chunks id 1"), std::string::npos) << err;
  }
  exec("UPDATE api_calls_chunks SET data = X'09'");
  EXPECT_NE(error_of("SELECT count(*) FROM api_calls").find("event chunk format 9 is not known"),
            std::string::npos);
  exec("UPDATE api_calls_chunks SET data = X''");
  EXPECT_NE(error_of("SELECT count(*) FROM api_calls").find("corrupt"), std::string::npos);
}

// The per-call views on a finished file opened by TraceFile (read-only, authorizer on): a thread
// with more off-CPU intervals than one chunk holds, a second thread's intervals interleaved.
TEST(ChunkedVtabViews, CallOffCpuCountsTheCallersIntervals) {
  TempDir dir;
  const std::string path = dir.file("trace.db");
  const std::string t0 = std::to_string(kT);
  // Thread 100: off CPU for 400 ns every 1000 ns (odd ones preempted). Thread 200: off CPU all the
  // time (must never count). Calls of thread 100: 1500 ns every 2500 ns, starting at +300.
  const std::string fixture = R"(
INSERT INTO session(id, status, host, kernel, agent_version, abi_version, command_line, start_ns,
                    end_ns, mono_to_wall_ns)
VALUES (1, 'complete', 'h', 'k', 'v', 1, 'c', )" +
                              t0 + ", " + t0 + R"( + 20000000, 0);
INSERT INTO strings(id, s) VALUES (1, 'kworker'), (2, 'waker');
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state, next_pid, next_tid, next_comm,
                   waker_pid, waker_tid, waker_comm)
SELECT )" + t0 + R"( + i * 1000, 400, 100, 100, 100, 0, i % 2, 1 - i % 2, 7, 7, 1, 8, 8, 2 FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999)
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state)
SELECT )" + t0 + R"( + i * 10000, 10000, 0, 200, 200, 1, 0, 1 FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 3999)
INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret)
SELECT )" + t0 + R"( + 300 + i * 2500, 1500, 100, 100, 1, 1, 0 FROM n;
)";
  ASSERT_EQ(analysis::testing::make_trace_db(path, fixture), "");
  auto f = gpuwhy::testing::open_trace(path);
  ASSERT_TRUE(f);

  // Expected, from the intervals' definition: overlap of [ts, ts+1500) with [k*1000, k*1000+400).
  auto r = store::run_query(
      *f,
      "SELECT ts, offcpu_ns, preempted_ns, blocked_ns, runq_ns, intervals, top_preemptor, "
      "top_waker FROM v_call_offcpu ORDER BY call_id");
  ASSERT_TRUE(r.ok()) << r.error().line();
  ASSERT_EQ(r->rows.size(), 4000u);
  std::vector<std::pair<int64_t, std::vector<std::string>>> rows;
  for (const auto& row : r->rows) rows.push_back({std::stoll(row[0]) - kT, row});
  std::sort(rows.begin(), rows.end());
  for (int i = 0; i < 4000; ++i) {
    const int64_t ts = 300 + int64_t{i} * 2500, end = ts + 1500;
    int64_t off = 0, pre = 0, runq = 0, n = 0;
    for (int64_t k = ts / 1000 - 1; k <= end / 1000; ++k) {
      const int64_t a = k * 1000, b = a + 400;
      const int64_t ov = std::min(b, end) - std::max(a, ts);
      if (k < 0 || k > 9999 || ov <= 0) continue;
      off += ov;
      pre += (k % 2) ? ov : 0;
      runq += std::max<int64_t>(0, std::min(b, end) - std::max(b - 100, ts));
      ++n;
    }
    SCOPED_TRACE("call " + std::to_string(i));
    const auto& got = rows[static_cast<size_t>(i)];
    ASSERT_EQ(got.first, ts);
    EXPECT_EQ(got.second[1], std::to_string(off));
    EXPECT_EQ(got.second[2], std::to_string(pre));
    EXPECT_EQ(got.second[3], std::to_string(off - pre));
    EXPECT_EQ(got.second[4], std::to_string(runq));
    EXPECT_EQ(got.second[5], std::to_string(n));
    if (pre > 0) {
      EXPECT_EQ(got.second[6], "kworker");
    }
    if (off - pre > 0) {
      EXPECT_EQ(got.second[7], "waker");
    }
  }
  // offcpu is probed by thread in every per-call subquery, never scanned per call.
  auto plan = store::run_query(*f, "EXPLAIN QUERY PLAN SELECT * FROM v_call_offcpu");
  ASSERT_TRUE(plan.ok()) << plan.error().line();
  int probes = 0;
  for (const auto& row : plan->rows) {
    const std::string& detail = row.back();
    for (const char* alias : {"SCAN o VIRTUAL TABLE INDEX ", "SCAN p VIRTUAL TABLE INDEX "})
      if (detail.starts_with(alias)) {
        EXPECT_EQ(std::stoi(detail.substr(std::string(alias).size())) & 1, 1) << detail;
        ++probes;
      }
  }
  EXPECT_GT(probes, 0);
}

// A reader of a live trace keeps per-thread chunk directories between queries: chunks the writer
// commits later must still be found by the next query.
TEST(ChunkedVtabLive, ThreadQueriesSeeChunksCommittedSinceTheLastOne) {
  using namespace gpuwhy::testing;
  TempDir dir;
  const std::string path = dir.file("live.db");
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  ASSERT_TRUE(w->write_batch(full_chunk(kStart, 10, 11)).ok());
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  // With a table of the file in the statement, SQLite opens the read transaction before the
  // first xFilter: the file's data version then decides whether the directory is still good.
  const std::string joined =
      "SELECT count(*) FROM api_calls c JOIN apis a ON a.id = c.api WHERE c.tid = 11";
  EXPECT_EQ(scalar(*f, joined), std::to_string(store::kChunkRows));
  const std::string by_thread = "SELECT count(*), max(ts) FROM api_calls WHERE tid = 11";
  const int64_t n = store::kChunkRows;
  EXPECT_EQ(rows(*f, by_thread),
            (std::vector<std::vector<std::string>>{
                {std::to_string(n), std::to_string(kStart + (n - 1) * 1000)}}));
  ASSERT_TRUE(w->write_batch(full_chunk(kStart + 10 * kMs, 10, 11)).ok());
  EXPECT_EQ(scalar(*f, joined), std::to_string(2 * store::kChunkRows));
  EXPECT_EQ(rows(*f, by_thread),
            (std::vector<std::vector<std::string>>{
                {std::to_string(2 * n), std::to_string(kStart + 10 * kMs + (n - 1) * 1000)}}));
  EXPECT_EQ(scalar(*f, "SELECT max(ts) FROM api_calls WHERE tid = 11 AND ts < " +
                           std::to_string(kStart + 10 * kMs + 1)),
            std::to_string(kStart + 10 * kMs));
}

}  // namespace
}  // namespace gpuwhy
