// SPDX-License-Identifier: Apache-2.0
// `gpuwhy export` and `explain --html`, read back by the tools people use, each started here:
// stock sqlite3 answers docs/schema.md's example questions on the plain export as `gpuwhy query`
// does; Nsight SQL recipes run on the Nsight-shaped export; DuckDB reads the CSV and JSONL exports
// and counts what the trace holds; protoc decodes the Perfetto trace with the checked-in .proto
// and its slices and flows are the trace's rows; headless chromium renders the HTML report, which
// loads nothing and carries explain --json's numbers. Traces: the golden fixtures (no root).
// A consumer that is not installed skips its test, saying which (scripts/install-export-tools).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "analysis/units.hpp"
#include "analysis_test_util.hpp"
#include "export/html_report.hpp"

namespace gpuwhy {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kSource = GW_SOURCE_DIR;
const std::string kGpuwhy = std::string(GW_BINARY_DIR) + "/gpuwhy";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct ShellRun {
  int rc = 0;
  std::string out;
};

// Runs a shell command; stdout captured (stderr too with `2>&1` in the command).
ShellRun sh(const std::string& cmd) {
  ShellRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

bool have(const std::string& program) {
  return sh("command -v " + program + " >/dev/null").rc == 0;
}

std::string duckdb_dir() {
  const char* d = std::getenv("GPUWHY_TOOLS_DIR");
  return std::string(d ? d : "/var/cache/gpuwhy-test") + "/duckdb";
}

// One trace per golden fixture, built once for the whole file.
class Traces {
 public:
  static const std::string& db(const std::string& fixture) {
    static std::map<std::string, std::string> made;
    auto it = made.find(fixture);
    if (it != made.end()) return it->second;
    const fs::path dir = fs::path(GW_BINARY_DIR) / "export_test" / fixture;
    fs::create_directories(dir);
    const std::string path = (dir / "trace.db").string();
    const std::string err = analysis::testing::make_trace_db(
        path, read_file(kSource / "tests" / "golden" / fixture / "fixture.sql"));
    EXPECT_EQ(err, "") << fixture;
    return made[fixture] = path;
  }
  static fs::path dir(const std::string& fixture) { return fs::path(db(fixture)).parent_path(); }
};

const std::vector<std::string> kFixtures = {"lock_wait",      "hidden_sync",    "transfer_pageable",
                                            "cpu_contention", "nccl_straggler", "incomplete_io"};

// Exports `fixture` (extra args appended); returns the output path.
std::string do_export(const std::string& fixture, const std::string& format, const std::string& out,
                      const std::string& extra = "") {
  const std::string path = (Traces::dir(fixture) / out).string();
  const ShellRun r = sh(kGpuwhy + " export --force --db " + quote(Traces::db(fixture)) +
                        " --format " + format + " -o " + quote(path) + " " + extra + " 2>&1");
  EXPECT_EQ(r.rc, 0) << r.out;
  return path;
}

ShellRun gpuwhy_query(const std::string& db, const std::string& sql) {
  // stderr aside: an incomplete trace (incomplete_io) gets a warning line there.
  return sh(kGpuwhy + " query --format csv --db " + quote(db) + " " + quote(sql) + " 2>/dev/null");
}

// REAL values as gpuwhy query prints them, to 15 significant digits (sqlite3 -json gives 17).
json fifteen_digits(json j) {
  if (j.is_number_float()) {
    char b[40];
    std::snprintf(b, sizeof b, "%.15g", j.get<double>());
    return std::strtod(b, nullptr);
  }
  if (j.is_structured())
    for (auto& v : j) v = fifteen_digits(v);
  return j;
}

// A result as JSON rows from gpuwhy query and from the sqlite3 shell: their CSV writers quote and
// print empty results differently; the values are what is compared. A failure is a string.
json gpuwhy_rows(const std::string& db, const std::string& sql) {
  const ShellRun r =
      sh(kGpuwhy + " query --format json --db " + quote(db) + " " + quote(sql) + " 2>/dev/null");
  if (r.rc != 0) return "gpuwhy query failed (exit " + std::to_string(r.rc) + ")";
  return fifteen_digits(json::parse(r.out, nullptr, false));
}

json sqlite3_rows(const std::string& db, const std::string& sql) {
  const ShellRun r = sh("sqlite3 -readonly -json " + quote(db) + " " + quote(sql) + " 2>&1");
  if (r.rc != 0) return "sqlite3 failed: " + r.out;
  if (r.out.find_first_not_of(" \n") == std::string::npos) return json::array();
  return fifteen_digits(json::parse(r.out, nullptr, false));
}

// The statements of docs/schema.md's "Example questions" (```sql blocks, split at ';').
std::vector<std::string> documented_questions() {
  const std::string doc = read_file(kSource / "docs" / "schema.md");
  const size_t from = doc.find("## Example questions");
  const size_t to = doc.find("\n## ", from + 1);
  std::vector<std::string> out;
  const std::string part = doc.substr(from, to - from);
  const std::regex block("```sql\n([^`]*)```");
  for (auto it = std::sregex_iterator(part.begin(), part.end(), block);
       it != std::sregex_iterator(); ++it) {
    std::string sql = (*it)[1];
    size_t at;
    while ((at = sql.find(';')) != std::string::npos) {
      std::string one = sql.substr(0, at);
      sql.erase(0, at + 1);
      if (one.find_first_not_of(" \n") != std::string::npos) out.push_back(one);
    }
  }
  return out;
}

TEST(ExportPlainSqlite, StockSqlite3AnswersTheDocumentedQuestionsAsGpuwhyQueryDoes) {
  if (!have("sqlite3")) GTEST_SKIP() << "sqlite3 CLI not installed (scripts/install-export-tools)";
  std::vector<std::string> questions = documented_questions();
  ASSERT_GE(questions.size(), 9u) << "docs/schema.md's example questions not found";
  // Every shipped view, whole, and the slowest calls of an API, by the same reader.
  for (const char* q :
       {"SELECT * FROM v_calls ORDER BY call_id", "SELECT * FROM v_call_offcpu ORDER BY call_id",
        "SELECT * FROM v_call_offcpu_intervals ORDER BY call_id, offcpu_id",
        "SELECT * FROM v_op_totals ORDER BY pid, tid, api", "SELECT * FROM v_thread_offcpu",
        "SELECT * FROM v_throughput", "SELECT * FROM v_losses",
        "SELECT * FROM v_thread_cpu ORDER BY pid, tid, what",
        "SELECT call_id, name, dur FROM v_calls WHERE name = 'cudaMemcpyAsync' ORDER BY dur DESC, "
        "call_id LIMIT 5",
        "SELECT count(*), sum(dur), sum(runq) FROM offcpu", "SELECT * FROM threads",
        "SELECT * FROM processes", "SELECT * FROM session"})
    questions.push_back(q);
  for (const std::string& fixture : kFixtures) {
    const std::string plain = do_export(fixture, "sqlite", "plain.db");
    for (const std::string& q : questions) {
      const json want = gpuwhy_rows(Traces::db(fixture), q);
      ASSERT_TRUE(want.is_array()) << fixture << ": " << q << "\n" << want;
      EXPECT_EQ(sqlite3_rows(plain, q), want) << fixture << ": " << q;
    }
  }
}

TEST(ExportPlainSqlite, WindowAndPidFilterTheRows) {
  if (!have("sqlite3")) GTEST_SKIP() << "sqlite3 CLI not installed (scripts/install-export-tools)";
  const std::string db = Traces::db("lock_wait");
  const std::string plain = do_export("lock_wait", "sqlite", "window.db", "--from 1 --to 2");
  const json want = gpuwhy_rows(
      db,
      "SELECT count(*) AS n FROM api_calls WHERE ts >= (SELECT start_ns FROM session) + "
      "1000000000 AND ts < (SELECT start_ns FROM session) + 2000000000");
  ASSERT_GT(want[0]["n"].get<int>(), 0);
  EXPECT_EQ(sqlite3_rows(plain, "SELECT count(*) AS n FROM api_calls"), want);
  const json pid = gpuwhy_rows(db, "SELECT min(pid) AS pid FROM api_calls");
  const std::string one =
      do_export("lock_wait", "sqlite", "pid.db", "--pid " + pid[0]["pid"].dump());
  EXPECT_EQ(sqlite3_rows(one,
                         "SELECT DISTINCT pid FROM api_calls UNION SELECT DISTINCT pid FROM "
                         "offcpu UNION SELECT pid FROM threads"),
            pid);
}

TEST(ExportNsight, NsightRecipesRunOnTheSubset) {
  if (!have("sqlite3")) GTEST_SKIP() << "sqlite3 CLI not installed (scripts/install-export-tools)";
  for (const std::string& fixture : kFixtures) {
    const std::string db = Traces::db(fixture);
    const std::string nsys = do_export(fixture, "nsight", "nsys.sqlite");
    // The per-API summary of Nsight's cuda_api_sum, as recipes write it.
    const json want = gpuwhy_rows(
        db,
        "SELECT name, count(*) AS calls, sum(coalesce(dur, 0)) AS total_ns, max(coalesce(dur, 0)) "
        "AS max_ns FROM api_calls GROUP BY name ORDER BY total_ns DESC, name");
    ASSERT_FALSE(want.empty()) << fixture;
    EXPECT_EQ(sqlite3_rows(nsys,
                           "SELECT s.value AS name, count(*) AS calls, sum(r.end - r.start) AS "
                           "total_ns, max(r.end - r.start) AS max_ns FROM "
                           "CUPTI_ACTIVITY_KIND_RUNTIME AS r JOIN StringIds AS s ON s.id = "
                           "r.nameId GROUP BY s.value ORDER BY total_ns DESC, name"),
              want)
        << fixture;
    // Driver calls in Nsight's driver class, so a runtime-only summary does not count the time
    // of a driver call made inside a runtime call twice.
    EXPECT_EQ(sqlite3_rows(nsys,
                           "SELECT eventClass AS class, count(*) AS calls FROM "
                           "CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1 ORDER BY 1"),
              gpuwhy_rows(db,
                          "SELECT CASE family WHEN 'cuda' THEN 1 ELSE 0 END AS class, count(*) AS "
                          "calls FROM api_calls GROUP BY 1 ORDER BY 1"))
        << fixture;
    EXPECT_EQ(
        sqlite3_rows(nsys,
                     "SELECT name FROM META_DATA_EXPORT WHERE name IN "
                     "('EXPORT_SCHEMA_VERSION', 'EXPORT_PROGRAM_NAME') ORDER BY 1"),
        json::parse(R"([{"name": "EXPORT_PROGRAM_NAME"}, {"name": "EXPORT_SCHEMA_VERSION"}])"));
    // Serialized thread ids, decoded as Nsight's documentation does.
    EXPECT_EQ(sqlite3_rows(nsys,
                           "SELECT globalTid / 0x1000000 % 0x1000000 AS pid, globalTid % 0x1000000 "
                           "AS tid, s.value AS comm FROM ThreadNames JOIN StringIds AS s ON "
                           "s.id = nameId ORDER BY pid, tid"),
              gpuwhy_rows(db,
                          "SELECT pid, tid, comm FROM threads WHERE comm NOT NULL GROUP BY pid, "
                          "tid ORDER BY pid, tid"))
        << fixture;
    EXPECT_EQ(sqlite3_rows(nsys, "SELECT count(*) / 2 AS n FROM SCHED_EVENTS"),
              gpuwhy_rows(db, "SELECT count(*) AS n FROM offcpu"));
    EXPECT_EQ(sqlite3_rows(nsys, "SELECT count(*) AS n FROM PROCESSES WHERE globalPid = pid << 24"),
              gpuwhy_rows(db, "SELECT count(DISTINCT pid) AS n FROM processes"));
    // Which thread spent the most time in CUDA calls (an nsys "top threads" recipe).
    EXPECT_EQ(sqlite3_rows(nsys,
                           "SELECT globalTid % 0x1000000 AS tid, sum(end - start) AS ns FROM "
                           "CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY globalTid ORDER BY ns DESC, tid"),
              gpuwhy_rows(db,
                          "SELECT tid, sum(coalesce(dur, 0)) AS ns FROM api_calls GROUP BY "
                          "pid, tid ORDER BY ns DESC, tid"))
        << fixture;
  }
}

// The device's records in Nsight's GPU tables (the gpu_truth fixture): nsys's kernel summary
// recipe gives the trace's own per-kernel totals; copies carry CUPTI's kind numbers.
TEST(ExportNsight, GpuTablesAnswerNsysKernelAndCopyRecipes) {
  if (!have("sqlite3")) GTEST_SKIP() << "sqlite3 CLI not installed (scripts/install-export-tools)";
  const std::string db = Traces::db("gpu_truth");
  const std::string nsys = do_export("gpu_truth", "nsight", "nsys.sqlite");
  const json want = gpuwhy_rows(db,
                                "SELECT n.name AS name, count(*) AS n, sum(a.dur) AS ns, "
                                "min(a.ts) - (SELECT start_ns FROM session) AS first FROM "
                                "gpu_activity AS a JOIN gpu_kernel_names AS n ON n.id = "
                                "a.name_id WHERE a.kind = 'kernel' GROUP BY 1 ORDER BY 1");
  ASSERT_EQ(want.size(), 2u) << want;
  EXPECT_EQ(sqlite3_rows(nsys,
                         "SELECT s.value AS name, count(*) AS n, sum(k.end - k.start) AS ns, "
                         "min(k.start) AS first FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN "
                         "StringIds AS s ON s.id = k.demangledName GROUP BY 1 ORDER BY 1"),
            want);
  EXPECT_EQ(sqlite3_rows(nsys,
                         "SELECT DISTINCT s.value AS short, gridX, blockX, deviceId, streamId, "
                         "globalPid / 0x1000000 AS pid FROM CUPTI_ACTIVITY_KIND_KERNEL JOIN "
                         "StringIds AS s ON s.id = shortName ORDER BY 1"),
            json::parse(R"([{"short": "gemm_kernel", "gridX": 128, "blockX": 256, "deviceId": 0,
                             "streamId": 7, "pid": 3100},
                            {"short": "relu_kernel", "gridX": 64, "blockX": 128, "deviceId": 0,
                             "streamId": 7, "pid": 3100}])"));
  // The uploads: HtoD (1) from pageable (1) to device (3) memory, as CUPTI numbers them.
  EXPECT_EQ(sqlite3_rows(nsys,
                         "SELECT copyKind, srcKind, dstKind, count(*) AS n, sum(bytes) AS bytes, "
                         "sum(end - start) AS ns FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1, 2, 3"),
            gpuwhy_rows(db,
                        "SELECT 1 AS copyKind, 1 AS srcKind, 3 AS dstKind, count(*) AS n, "
                        "sum(bytes) AS bytes, sum(dur) AS ns FROM gpu_activity WHERE kind = "
                        "'memcpy' AND copy_kind = 'HtoD' AND src_kind = 'pageable' AND "
                        "dst_kind = 'device'"));
  EXPECT_EQ(sqlite3_rows(nsys, "SELECT count(*) AS n FROM CUPTI_ACTIVITY_KIND_MEMSET"),
            json::parse(R"([{"n": 0}])"));
  // The device the records ran on, joinable by deviceId (its properties are not recorded).
  EXPECT_EQ(sqlite3_rows(nsys,
                         "SELECT DISTINCT g.id AS id FROM TARGET_INFO_GPU AS g JOIN "
                         "CUPTI_ACTIVITY_KIND_KERNEL AS k ON k.deviceId = g.id"),
            json::parse(R"([{"id": 0}])"));
  // A trace without the device's records: the tables are there, empty.
  const std::string host_only = do_export("lock_wait", "nsight", "nsys.sqlite");
  EXPECT_EQ(sqlite3_rows(host_only, "SELECT count(*) AS n FROM CUPTI_ACTIVITY_KIND_KERNEL"),
            json::parse(R"([{"n": 0}])"));
}

std::map<std::string, std::string> trace_counts(const std::string& db) {
  std::map<std::string, std::string> counts;
  const ShellRun tables = gpuwhy_query(
      db,
      "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE '%_chunks' "
      "AND name NOT LIKE 'sqlite_%' AND name NOT IN ('reclaim', 'api_calls_per_second', "
      "'offcpu_per_second') UNION SELECT substr(name, 1, length(name) - 7) FROM sqlite_schema "
      "WHERE type = 'table' AND name LIKE '%_chunks'");
  std::istringstream in(tables.out);
  std::string name;
  std::getline(in, name);  // header
  while (std::getline(in, name)) {
    if (!name.empty() && name.back() == '\r') name.pop_back();
    const ShellRun n = gpuwhy_query(db, "SELECT count(*) FROM " + name);
    counts[name] = n.out.substr(n.out.find('\n') + 1,
                                n.out.find('\r', n.out.find('\n')) - n.out.find('\n') - 1);
  }
  return counts;
}

TEST(ExportText, DuckDbReadsCsvAndJsonlAndCountsTheTracesRows) {
  if (!have("node")) GTEST_SKIP() << "node not installed (scripts/install-export-tools)";
  if (!fs::exists(duckdb_dir() + "/node_modules/@duckdb/node-api"))
    GTEST_SKIP() << "@duckdb/node-api not installed in " << duckdb_dir()
                 << " (scripts/install-export-tools)";
  for (const std::string& fixture : {std::string("lock_wait"), std::string("transfer_pageable")}) {
    const auto want = trace_counts(Traces::db(fixture));
    ASSERT_GT(want.size(), 10u);
    for (const std::string format : {"csv", "jsonl", "parquet"}) {
      const std::string dir = do_export(fixture, format, format + "_dir");
      const ShellRun r = sh("GW_DUCKDB_DIR=" + quote(duckdb_dir()) + " node " +
                            quote((kSource / "tests/export/duckdb_counts.mjs").string()) + " " +
                            quote(dir) + " " + format + " 2>&1");
      ASSERT_EQ(r.rc, 0) << r.out;
      std::map<std::string, std::string> got;
      std::istringstream in(r.out);
      std::string table, n;
      while (in >> table >> n) got[table] = n;
      for (const auto& [t, count] : want)
        EXPECT_EQ(got[t], count) << fixture << " " << format << " " << t;
    }
  }
  // One table to standard output, with its label columns.
  const ShellRun one = sh(kGpuwhy + " export --db " + quote(Traces::db("lock_wait")) +
                          " --format csv --table api_calls -o - 2>&1");
  ASSERT_EQ(one.rc, 0) << one.out;
  EXPECT_TRUE(one.out.starts_with("row_id,ts,dur,pid,tid,api,")) << one.out.substr(0, 200);
  EXPECT_NE(one.out.find(",name,family,category\r\n"), std::string::npos);
}

// Every value as text: DuckDB's JSON gives 64-bit integers as strings, gpuwhy query's as numbers.
json as_text(const json& rows) {
  json out = json::array();
  for (const json& r : rows) {
    json o = json::object();
    for (const auto& [k, v] : r.items())
      o[k] = v.is_string() ? v.get<std::string>() : v.is_null() ? "NULL" : v.dump();
    out.push_back(o);
  }
  return out;
}

json duckdb_rows(const std::string& dir, const std::string& sql) {
  const ShellRun r = sh("GW_DUCKDB_DIR=" + quote(duckdb_dir()) + " node " +
                        quote((kSource / "tests/export/duckdb_sql.mjs").string()) + " " +
                        quote(dir) + " " + quote(sql) + " 2>&1");
  if (r.rc != 0) return "duckdb failed: " + r.out;
  return json::parse(r.out, nullptr, false);
}

// The Parquet export read by DuckDB answers as the trace does, with typed columns: `ts` a
// TIMESTAMP_NS holding the trace's epoch ns, nullable integers still integers (NULLs kept, no
// float), 64-bit values (addresses, stream handles) with every bit, names as text.
TEST(ExportParquet, DuckDbReadsTypedColumnsAndAnswersAsTheTrace) {
  if (!have("node")) GTEST_SKIP() << "node not installed (scripts/install-export-tools)";
  if (!fs::exists(duckdb_dir() + "/node_modules/@duckdb/node-api"))
    GTEST_SKIP() << "@duckdb/node-api not installed in " << duckdb_dir()
                 << " (scripts/install-export-tools)";
  for (const std::string& fixture : kFixtures) {
    const std::string db = Traces::db(fixture);
    const std::string dir = do_export(fixture, "parquet", "parquet_dir");
    EXPECT_EQ(
        duckdb_rows(dir,
                    "SELECT column_name AS c, column_type AS t FROM (DESCRIBE api_calls) "
                    "WHERE column_name IN ('ts', 'dur', 'addr', 'stream', 'name') ORDER BY 1"),
        json::parse(R"([{"c": "addr", "t": "BIGINT"}, {"c": "dur", "t": "BIGINT"},
                              {"c": "name", "t": "VARCHAR"}, {"c": "stream", "t": "BIGINT"},
                              {"c": "ts", "t": "TIMESTAMP_NS"}])"))
        << fixture;
    EXPECT_EQ(as_text(duckdb_rows(
                  dir,
                  "SELECT name, count(*) AS calls, count(dur) AS timed, sum(dur) AS ns, "
                  "count(stream) AS streams, max(addr) AS max_addr, min(addr) AS min_addr, "
                  "epoch_ns(min(ts)) AS first FROM api_calls GROUP BY name ORDER BY name")),
              as_text(gpuwhy_rows(
                  db,
                  "SELECT name, count(*) AS calls, count(dur) AS timed, sum(dur) AS ns, "
                  "count(stream) AS streams, max(addr) AS max_addr, min(addr) AS min_addr, "
                  "min(ts) AS first FROM api_calls GROUP BY name ORDER BY name")))
        << fixture;
    // The join the views make: each call's off-CPU time, from the typed columns.
    EXPECT_EQ(as_text(duckdb_rows(
                  dir,
                  "SELECT count(*) AS n, sum(least(epoch_ns(o.ts) + o.dur, epoch_ns(c.ts) + c.dur) "
                  "- greatest(epoch_ns(o.ts), epoch_ns(c.ts))) AS ns FROM api_calls AS c JOIN "
                  "offcpu AS o ON o.tid = c.tid AND epoch_ns(o.ts) < epoch_ns(c.ts) + c.dur AND "
                  "epoch_ns(o.ts) + o.dur > epoch_ns(c.ts) WHERE c.dur NOT NULL")),
              as_text(gpuwhy_rows(db,
                                  "SELECT count(*) AS n, sum(min(o.ts + o.dur, c.ts + c.dur) - "
                                  "max(o.ts, c.ts)) AS ns FROM api_calls AS c JOIN offcpu AS o ON "
                                  "o.tid = c.tid AND o.ts < c.ts + c.dur AND o.ts + o.dur > c.ts "
                                  "WHERE c.dur NOT NULL")))
        << fixture;
  }
}

// Each statement's rows, from one DuckDB session over the export (duckdb_views.mjs).
std::vector<json> duckdb_view_rows(const std::string& dir, const std::vector<std::string>& sql) {
  std::string args;
  for (const std::string& q : sql) args += " " + quote(q);
  const ShellRun r = sh("GW_DUCKDB_DIR=" + quote(duckdb_dir()) + " node " +
                        quote((kSource / "tests/export/duckdb_views.mjs").string()) + " " +
                        quote(dir) + args + " 2>&1");
  std::vector<json> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line, nullptr, false));
  if (r.rc != 0 || out.size() != sql.size()) out.assign(sql.size(), "duckdb failed: " + r.out);
  return out;
}

// The Parquet export's duckdb.sql makes DuckDB tables of the files and creates gpuwhy's views
// over them: every view runs there and answers as on the trace (call ids aside: DuckDB numbers
// rows its own way).
TEST(ExportParquet, GpuwhysViewsRunInDuckDbAndAnswerAsTheTrace) {
  if (!have("node")) GTEST_SKIP() << "node not installed (scripts/install-export-tools)";
  if (!fs::exists(duckdb_dir() + "/node_modules/@duckdb/node-api"))
    GTEST_SKIP() << "@duckdb/node-api not installed in " << duckdb_dir()
                 << " (scripts/install-export-tools)";
  const std::vector<std::string> questions = {
      "SELECT pid, tid, name, family, category, calls, dur_ns, max_dur_ns, avg_dur_ns, bytes FROM "
      "v_op_totals ORDER BY pid, tid, api",
      "SELECT count(*) AS n, sum(oncpu_ns) AS oncpu, sum(offcpu_ns) AS offcpu, sum(preempted_ns) "
      "AS preempted, sum(blocked_ns) AS blocked, sum(runq_ns) AS runq, sum(intervals) AS i, "
      "count(top_preemptor) AS p, count(top_waker) AS w FROM v_call_offcpu",
      "SELECT count(*) AS n, sum(ns) AS ns, sum(runq_ns) AS runq FROM v_call_offcpu_intervals",
      "SELECT pid, tid, comm, offcpu_ns, preempted_ns, blocked_ns, runq_ns, intervals, "
      "top_preemptor, top_preemptor_ns, top_waker, top_waker_ns FROM v_thread_offcpu ORDER BY "
      "pid, tid",
      "SELECT count(*) AS n, sum(calls) AS calls, sum(busy_ns) AS busy, sum(bytes) AS bytes FROM "
      "v_throughput",
      "SELECT count(*) AS n, sum(dur) AS dur, count(direction) AS d, count(py_file) AS py FROM "
      "v_calls",
      "SELECT count(*) AS n FROM v_call_sites",
      "SELECT count(*) AS n FROM v_python_sites",
      "SELECT pid, tid, what, samples, est_ns FROM v_thread_cpu ORDER BY pid, tid, what",
      "SELECT source, cause, count FROM v_losses ORDER BY source, cause"};
  for (const std::string& fixture : {std::string("lock_wait"), std::string("cpu_contention"),
                                     std::string("transfer_pageable")}) {
    const std::string db = Traces::db(fixture);
    const std::string dir = do_export(fixture, "parquet", "parquet_dir");
    const std::vector<json> got = duckdb_view_rows(dir, questions);
    for (size_t i = 0; i < questions.size(); ++i)
      EXPECT_EQ(as_text(got[i]), as_text(gpuwhy_rows(db, questions[i])))
          << fixture << ": " << questions[i];
  }
}

// protoc's text format, one line per field; counts of `type: X` lines and of flow ids. Event
// names, categories and annotation names are interned: a packet's InternedData names them by iid
// (protoc prints it after the event, field 12 after 11), so a packet is read whole, then resolved.
struct Decoded {
  std::map<std::string, int> types;
  int flows = 0, terminating = 0, unknown = 0;
  std::multiset<std::string> call_names;
  std::set<std::string> annotation_names;
  int misnested = 0;   // an END without an open slice, or an event earlier than the last on a track
  int unresolved = 0;  // an iid that no InternedData before or in its packet named
  std::vector<std::string> process_names;
  std::map<uint64_t, int64_t> clocks;  // the first packet's ClockSnapshot: clock id -> timestamp
  int64_t primary_clock = 0, default_clock = 0, first_flags = 0;
};

// Perfetto's own merged proto (tests/export/perfetto) or the subset gpuwhy writes from.
const fs::path kRealPerfettoProto = kSource / "tests/export/perfetto";
const fs::path kSubsetPerfettoProto = kSource / "src/export";

Decoded decode_perfetto(const std::string& file, const fs::path& proto_dir = kSubsetPerfettoProto) {
  Decoded d;
  const ShellRun r =
      sh("protoc --proto_path=" + quote(proto_dir.string()) +
         " --decode=perfetto.protos.Trace perfetto_trace.proto < " + quote(file) + " 2>&1");
  EXPECT_EQ(r.rc, 0) << r.out.substr(0, 2000);
  std::istringstream in(r.out);
  std::string line;
  std::map<std::string, std::map<uint64_t, std::string>> interned;  // table -> iid -> name
  std::map<uint64_t, std::pair<int64_t, int>> tracks;               // last event time, open slices
  std::vector<std::string> blocks;  // the nesting of the current line
  struct Packet {
    std::string type;
    uint64_t track = 0, name_iid = 0, category_iid = 0, interned_iid = 0, clock_id = 0;
    int64_t ts = -1;
    std::string interned_name, inline_name, inline_category;
    std::vector<uint64_t> annotation_iids;
  } p;
  int packets = 0;
  auto unquote = [](const std::string& v) {
    return v.size() >= 2 && v.front() == '"' ? v.substr(1, v.size() - 2) : v;
  };
  while (std::getline(in, line)) {
    const size_t b = line.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    const std::string l = line.substr(b);
    if (l.size() > 2 && l.ends_with(" {")) {
      blocks.push_back(l.substr(0, l.size() - 2));
      continue;
    }
    if (l == "}") {
      const std::string closed = blocks.empty() ? "" : blocks.back();
      if (!blocks.empty()) blocks.pop_back();
      const std::string parent = blocks.empty() ? "" : blocks.back();
      if (parent == "interned_data" && p.interned_iid != 0)
        interned[closed][p.interned_iid] = p.interned_name;
      if (closed == "interned_data" || parent == "interned_data") p.interned_iid = 0;
      if (closed == "clocks" && packets == 0) d.clocks[p.clock_id] = p.ts, p.ts = -1;
      if (!blocks.empty() || closed != "packet") continue;
      // A packet ends: resolve its names; a track's events must come in time order.
      auto name_of = [&](const std::string& table, uint64_t iid) -> std::string {
        if (iid == 0) return "";
        const auto t = interned[table].find(iid);
        if (t != interned[table].end()) return t->second;
        ++d.unresolved;
        return "";
      };
      const std::string name = p.name_iid ? name_of("event_names", p.name_iid) : p.inline_name;
      const std::string category =
          p.category_iid ? name_of("event_categories", p.category_iid) : p.inline_category;
      for (uint64_t a : p.annotation_iids)
        d.annotation_names.insert(name_of("debug_annotation_names", a));
      if (!p.type.empty()) {
        ++d.types[p.type];
        auto& [last, open] = tracks[p.track];
        if (p.ts < last) ++d.misnested;
        last = p.ts;
        if (p.type == "TYPE_SLICE_BEGIN") ++open;
        if (p.type == "TYPE_SLICE_END" && --open < 0) ++d.misnested;
        if (!category.empty() && category != "preempted" && category != "blocked" &&
            category != "wakeup" && p.type != "TYPE_SLICE_END" && p.type != "TYPE_COUNTER")
          d.call_names.insert("\"" + name + "\"");
      }
      p = Packet{};
      ++packets;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(l[0]))) ++d.unknown;  // a field the .proto lacks
    const std::string in_block = blocks.empty() ? "" : blocks.back();
    auto value = [&](const char* key) -> std::optional<std::string> {
      const std::string k = std::string(key) + ": ";
      if (!l.starts_with(k)) return std::nullopt;
      return l.substr(k.size());
    };
    if (in_block == "process")
      if (auto v = value("process_name")) d.process_names.push_back(unquote(*v));
    if (blocks.size() >= 2 && blocks[blocks.size() - 2] == "interned_data") {
      if (auto v = value("iid")) p.interned_iid = std::stoull(*v);
      if (auto v = value("name")) p.interned_name = unquote(*v);
      continue;
    }
    if (in_block == "clocks") {
      if (auto v = value("clock_id")) p.clock_id = std::stoull(*v);
      if (auto v = value("timestamp")) p.ts = std::stoll(*v);
      continue;
    }
    if (in_block == "clock_snapshot")
      if (auto v = value("primary_trace_clock"))
        d.primary_clock = *v == "BUILTIN_CLOCK_REALTIME" ? 1 : -1;
    if (in_block == "trace_packet_defaults")
      if (auto v = value("timestamp_clock_id")) d.default_clock = std::stoll(*v);
    if (in_block == "debug_annotations")
      if (auto v = value("name_iid")) p.annotation_iids.push_back(std::stoull(*v));
    if (in_block == "track_event") {
      if (auto v = value("type")) p.type = *v;
      if (auto v = value("track_uuid")) p.track = std::stoull(*v);
      if (auto v = value("name_iid")) p.name_iid = std::stoull(*v);
      if (auto v = value("category_iids")) p.category_iid = std::stoull(*v);
      if (auto v = value("name")) p.inline_name = unquote(*v);
      if (auto v = value("categories")) p.inline_category = unquote(*v);
      if (value("flow_ids")) ++d.flows;
      if (value("terminating_flow_ids")) ++d.terminating;
    }
    if (in_block == "packet") {
      if (auto v = value("timestamp")) p.ts = std::stoll(*v);
      if (auto v = value("sequence_flags"); v && packets == 0) d.first_flags = std::stoll(*v);
    }
  }
  return d;
}

int count_of(const std::string& db, const std::string& sql) {
  const ShellRun r = gpuwhy_query(db, sql);
  return std::atoi(r.out.substr(r.out.find('\n') + 1).c_str());
}

TEST(ExportPerfetto, ProtocDecodesItAndItsSlicesAndFlowsAreTheTracesRows) {
  if (!have("protoc")) GTEST_SKIP() << "protoc not installed (scripts/install-export-tools)";
  for (const std::string& fixture : kFixtures) {
    const std::string db = Traces::db(fixture);
    const std::string file = do_export(fixture, "perfetto", "trace.pftrace");
    const Decoded d = decode_perfetto(file);
    EXPECT_EQ(d.unknown, 0) << fixture << ": fields the .proto does not describe";
    EXPECT_EQ(d.misnested, 0) << fixture << ": events out of order or unbalanced on a track";
    EXPECT_EQ(d.unresolved, 0) << fixture << ": an interned name used before it was defined";
    // Perfetto's own proto reads every field as the subset does.
    const Decoded real = decode_perfetto(file, kRealPerfettoProto);
    EXPECT_EQ(real.unknown, 0) << fixture << ": fields Perfetto's own format does not have";
    EXPECT_EQ(real.types, d.types) << fixture;
    EXPECT_EQ(real.call_names, d.call_names) << fixture;
    const int calls = count_of(db, "SELECT count(*) FROM api_calls WHERE dur NOT NULL");
    const int instants = count_of(db, "SELECT count(*) FROM api_calls WHERE dur IS NULL");
    const int off = count_of(db, "SELECT count(*) FROM offcpu");
    const int wakeups = count_of(db,
                                 "SELECT count(*) FROM offcpu WHERE NOT preempted AND "
                                 "waker_tid NOT NULL AND waker_tid != 0");
    EXPECT_EQ(d.types.count("TYPE_SLICE_BEGIN") ? d.types.at("TYPE_SLICE_BEGIN") : 0, calls + off)
        << fixture;
    EXPECT_EQ(d.types.count("TYPE_SLICE_END") ? d.types.at("TYPE_SLICE_END") : 0, calls + off);
    EXPECT_EQ(d.types.count("TYPE_INSTANT") ? d.types.at("TYPE_INSTANT") : 0,
              instants + 2 * wakeups);
    EXPECT_EQ(d.flows, wakeups) << fixture;
    EXPECT_EQ(d.terminating, wakeups) << fixture;
    EXPECT_GT(d.types.count("TYPE_COUNTER") ? d.types.at("TYPE_COUNTER") : 0, 0);
    // Each call is a slice named by its API.
    const ShellRun names = gpuwhy_query(db, "SELECT name FROM api_calls ORDER BY name");
    std::multiset<std::string> want;
    std::istringstream in(names.out);
    std::string n;
    std::getline(in, n);
    while (std::getline(in, n)) want.insert("\"" + n.substr(0, n.size() - 1) + "\"");
    EXPECT_EQ(d.call_names, want) << fixture;
  }
}

// The sequence's state: a clock snapshot first (REALTIME, the trace's clock, beside MONOTONIC,
// the probes' clock, from the session's offset), the packets' default clock REALTIME; processes
// named by the process table, and a process gpuwhy did not trace by the task name its wake-ups
// recorded ("pid N" only where neither knows it); names interned, once each.
TEST(ExportPerfetto, ClockSnapshotAndNamedProcessTracks) {
  if (!have("protoc")) GTEST_SKIP() << "protoc not installed (scripts/install-export-tools)";
  for (const std::string& fixture : kFixtures) {
    const std::string db = Traces::db(fixture);
    const std::string file = do_export(fixture, "perfetto", "trace.pftrace");
    const Decoded d = decode_perfetto(file, kRealPerfettoProto);
    EXPECT_EQ(d.first_flags, 1) << fixture << ": the first packet clears the incremental state";
    EXPECT_EQ(d.primary_clock, 1) << fixture;
    EXPECT_EQ(d.default_clock, 1) << fixture;
    ASSERT_EQ(d.clocks.size(), 2u) << fixture;
    const ShellRun offset = gpuwhy_query(db, "SELECT mono_to_wall_ns FROM session");
    const int64_t mono_to_wall = std::stoll(offset.out.substr(offset.out.find('\n') + 1));
    EXPECT_EQ(d.clocks.at(1) - d.clocks.at(3), mono_to_wall) << fixture;
    // The snapshot's REALTIME reading is the export's start: no event before it.
    const ShellRun first = gpuwhy_query(
        db, "SELECT min(ts) FROM (SELECT ts FROM api_calls UNION ALL SELECT ts FROM offcpu)");
    EXPECT_LE(d.clocks.at(1), std::stoll(first.out.substr(first.out.find('\n') + 1))) << fixture;
    const int unnamed = count_of(
        db,
        "SELECT count(*) FROM (SELECT pid FROM api_calls UNION SELECT pid FROM offcpu UNION "
        "SELECT waker_pid FROM offcpu WHERE waker_tid NOT NULL AND waker_tid != 0 AND NOT "
        "preempted) WHERE pid NOT IN (SELECT pid FROM processes WHERE comm NOT NULL) AND pid NOT "
        "IN (SELECT waker_pid FROM offcpu WHERE waker_pid NOT NULL AND waker_comm NOT NULL)");
    int pid_named = 0;
    for (const std::string& n : d.process_names) pid_named += n.starts_with("pid ");
    EXPECT_EQ(pid_named, unnamed) << fixture;
    EXPECT_EQ(d.process_names.size(),
              static_cast<size_t>(count_of(
                  db,
                  "SELECT count(*) FROM (SELECT pid FROM api_calls UNION SELECT pid FROM offcpu "
                  "UNION SELECT waker_pid FROM offcpu WHERE waker_tid NOT NULL AND waker_tid != "
                  "0 AND NOT preempted)")))
        << fixture;
    EXPECT_TRUE(d.annotation_names.count("call_id")) << fixture;
  }
}

// The device's records (trace --gpu-activity; the gpu_truth fixture): a track per device and
// stream under the process, one slice per kernel, copy and memset, named by the kernel or the
// copy's kind, each as long as its record, in order and balanced.
TEST(ExportPerfetto, GpuTracksHoldTheDevicesRecords) {
  if (!have("protoc")) GTEST_SKIP() << "protoc not installed (scripts/install-export-tools)";
  const std::string db = Traces::db("gpu_truth");
  const std::string file = do_export("gpu_truth", "perfetto", "trace.pftrace");
  const Decoded d = decode_perfetto(file);
  EXPECT_EQ(d.unknown, 0);
  EXPECT_EQ(d.misnested, 0);
  const int calls = count_of(db, "SELECT count(*) FROM api_calls");
  const int gpu = count_of(db, "SELECT count(*) FROM gpu_activity");
  ASSERT_GT(gpu, 0);
  EXPECT_EQ(d.types.count("TYPE_SLICE_BEGIN") ? d.types.at("TYPE_SLICE_BEGIN") : 0, calls + gpu);
  // Slice names: the calls' APIs, the kernels' names, "memcpy HtoD" for the uploads.
  std::multiset<std::string> want;
  const ShellRun names = gpuwhy_query(
      db,
      "SELECT name FROM api_calls UNION ALL SELECT n.name FROM gpu_activity AS a JOIN "
      "gpu_kernel_names AS n ON n.id = a.name_id UNION ALL SELECT 'memcpy ' || copy_kind FROM "
      "gpu_activity WHERE kind = 'memcpy'");
  std::istringstream in(names.out);
  std::string n;
  std::getline(in, n);
  while (std::getline(in, n)) {
    if (!n.empty() && n.back() == '\r') n.pop_back();
    if (n.size() > 1 && n.front() == '"') n = n.substr(1, n.size() - 2);  // CSV-quoted
    want.insert("\"" + n + "\"");
  }
  EXPECT_EQ(d.call_names, want);
  // The GPU track: named, and its slices add up to the records' durations (one stream, no
  // overlap in the fixture).
  const ShellRun r =
      sh("protoc --proto_path=" + quote((kSource / "src/export").string()) +
         " --decode=perfetto.protos.Trace perfetto_trace.proto < " + quote(file) + " 2>&1");
  ASSERT_EQ(r.rc, 0);
  std::istringstream lines(r.out);
  std::string line, name, type;
  uint64_t uuid = 0, track = 0, gpu_track = 0;
  int64_t ts = 0, begun = 0, slice_ns = 0;
  int gpu_tracks = 0;
  while (std::getline(lines, line)) {
    const size_t b = line.find_first_not_of(' ');
    const std::string l = b == std::string::npos ? "" : line.substr(b);
    if (line == "}") {
      if (name == "\"GPU 0 stream 7\"") gpu_track = uuid, ++gpu_tracks;
      if (track != 0 && track == gpu_track && type == "TYPE_SLICE_BEGIN") begun = ts;
      if (track != 0 && track == gpu_track && type == "TYPE_SLICE_END") slice_ns += ts - begun;
      name.clear();
      type.clear();
      uuid = track = 0;
      continue;
    }
    if (l.starts_with("uuid: ")) uuid = std::stoull(l.substr(6));
    if (l.starts_with("name: ") && uuid != 0) name = l.substr(6);
    if (l.starts_with("type: ")) type = l.substr(6);
    if (l.starts_with("timestamp: ")) ts = std::stoll(l.substr(11));
    if (l.starts_with("track_uuid: ")) track = std::stoull(l.substr(12));
  }
  EXPECT_EQ(gpu_tracks, 1);
  EXPECT_EQ(slice_ns, count_of(db, "SELECT sum(dur) FROM gpu_activity"));
}

TEST(ExportPerfetto, ARefusedWindowSaysHowToNarrowIt) {
  const ShellRun r = sh(kGpuwhy + " export --force --db " + quote(Traces::db("lock_wait")) +
                        " --format perfetto --max-slices 3 -o " +
                        quote((Traces::dir("lock_wait") / "big.pftrace").string()) + " 2>&1");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("--since"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(Traces::dir("lock_wait") / "big.pftrace"));
}

TEST(Export, BadInputGetsOneLine) {
  const fs::path dir = Traces::dir("lock_wait");
  const std::string junk = (dir / "junk.db").string();
  std::ofstream(junk) << "not a database at all, just some text that is long enough to read";
  struct Case {
    std::string args, says;
  } cases[] = {
      {"--db " + quote(junk) + " --format sqlite -o " + quote((dir / "x.db").string()),
       "not a gpuwhy trace"},
      {"--db " + quote((dir / "missing.db").string()) + " --format csv -o " + quote(dir.string()),
       "no trace file"},
      {"--db " + quote(Traces::db("lock_wait")) + " --format sqlite", "no output given"},
      {"--db " + quote(Traces::db("lock_wait")) + " --format csv --table nope -o -",
       "no table 'nope'"},
      {"--db " + quote(Traces::db("lock_wait")) + " --format sqlite -o " +
           quote(Traces::db("lock_wait")),
       "is the trace itself"},
      {"--db " + quote(Traces::db("lock_wait")) + " --format sqlite --pid 999999 -o " +
           quote((dir / "y.db").string()),
       "pid 999999 is not in this trace"},
  };
  for (const Case& c : cases) {
    const ShellRun r = sh(kGpuwhy + " export " + c.args + " 2>&1");
    EXPECT_NE(r.rc, 0) << c.args;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
  EXPECT_FALSE(fs::exists(dir / "x.db"));
}

TEST(ExplainHtml, SelfContainedWithExplainJsonsNumbersAndRendersInChromium) {
  for (const std::string& fixture : {std::string("lock_wait"), std::string("hidden_sync")}) {
    const std::string db = Traces::db(fixture);
    const std::string page = (Traces::dir(fixture) / "report.html").string();
    // The fixture's folder outlives a run: --force replaces the page an earlier run wrote.
    const ShellRun made =
        sh(kGpuwhy + " explain --db " + quote(db) + " --html " + quote(page) + " --force 2>&1");
    ASSERT_EQ(made.rc, 0) << made.out;
    const std::string html = read_file(page);
    // Nothing to load: no URL, no external script, style or image.
    EXPECT_EQ(html.find("http://"), std::string::npos);
    EXPECT_EQ(html.find("https://"), std::string::npos);
    EXPECT_EQ(html.find(" src="), std::string::npos);
    EXPECT_EQ(html.find("<link"), std::string::npos);
    // The embedded report is explain --json's, and the page shows its numbers.
    const ShellRun j = sh(kGpuwhy + " explain --json --db " + quote(db));
    ASSERT_EQ(j.rc, 0);
    const std::string tag = "<script type=\"application/json\" id=\"gpuwhy-explain\">";
    const size_t at = html.find(tag);
    ASSERT_NE(at, std::string::npos);
    const size_t end = html.find("</script>", at);
    const json embedded = json::parse(html.substr(at + tag.size(), end - at - tag.size()));
    const json want = json::parse(j.out);
    EXPECT_EQ(embedded, want);
    ASSERT_FALSE(want["chains"].empty()) << fixture << " should have a chain to draw";
    for (const json& c : want["chains"]) {
      EXPECT_NE(html.find(analysis::fmt_duration(c["lost_ns"].get<int64_t>())), std::string::npos);
      EXPECT_NE(html.find(analysis::fmt_percent(c["share"].get<double>())), std::string::npos);
      EXPECT_NE(html.find("id=\"chain-" + std::to_string(c["rank"].get<int>()) + "\""),
                std::string::npos);
    }
    for (const json& o : want["stats"]["ops"]) {
      if (!o["p50_ns"].is_number()) continue;
      const std::string row_start = "<tr><td class=\"l\">" + o["name"].get<std::string>() + "</td>";
      const size_t row = html.find(row_start);
      ASSERT_NE(row, std::string::npos) << o["name"];
      const std::string tr = html.substr(row, html.find("</tr>", row) - row);
      for (const char* k : {"p50_ns", "p90_ns", "p99_ns", "max_ns"})
        EXPECT_NE(tr.find(analysis::fmt_duration(o[k].get<int64_t>())), std::string::npos)
            << o["name"] << " " << k;
    }
    EXPECT_NE(html.find("<svg class=\"tl\""), std::string::npos) << "no chain timeline";
    // The audit of the same window: a card per GPU process with `gpuwhy audit --json`'s regime
    // and GPU-busy estimate.
    const ShellRun a = sh(kGpuwhy + " audit --json --db " + quote(db));
    ASSERT_EQ(a.rc, 0) << a.out;
    const json audit = json::parse(a.out);
    ASSERT_FALSE(audit["processes"].empty());
    for (const json& p : audit["processes"]) {
      const size_t card = html.find("id=\"audit-" + std::to_string(p["pid"].get<int>()) + "\"");
      ASSERT_NE(card, std::string::npos) << "no audit card for pid " << p["pid"];
      const std::string text = html.substr(card, html.find("</section>", card) - card);
      EXPECT_NE(text.find(p["regime"].get<std::string>()), std::string::npos) << text;
      EXPECT_NE(text.find(analysis::fmt_duration(p["gpu_busy"]["estimate_ns"].get<int64_t>())),
                std::string::npos)
          << text;
    }

    if (!have("chromium")) GTEST_SKIP() << "chromium not installed (scripts/install-export-tools)";
    // Any request would go to a proxy on a closed port and fail; the page renders regardless.
    const std::string png = (Traces::dir(fixture) / "report.png").string();
    fs::remove(png);
    const ShellRun shot =
        sh("timeout 120 chromium --headless --no-sandbox --disable-gpu "
           "--proxy-server=127.0.0.1:9 --hide-scrollbars --window-size=1280,1600 "
           "--screenshot=" +
           quote(png) + " " + quote("file://" + page) + " 2>&1");
    EXPECT_EQ(shot.rc, 0) << shot.out;
    ASSERT_TRUE(fs::exists(png)) << shot.out;
    EXPECT_GT(fs::file_size(png), 20000u);
  }
}

// A thread's time budget (report "budgets": buckets that split its span), when the report has one,
// is drawn as one stacked bar with each bucket's label, time and share; without it, the
// overlapping parts.
TEST(ExplainHtml, DrawsAThreadsBudgetWhenTheReportHasOne) {
  nlohmann::ordered_json thread = {{"pid", 7},
                                   {"tid", 8},
                                   {"comm", "trainer"},
                                   {"calls", 10},
                                   {"first_rel_ns", 0},
                                   {"last_rel_ns", 1000000000},
                                   {"api_ns", 250000000},
                                   {"preempted_ns", 0},
                                   {"blocked_ns", 0},
                                   {"wakeup_ns", 0}};
  nlohmann::ordered_json report = {
      {"verdict", "v"},
      {"clean", true},
      {"trace", {{"start_ns", 0}, {"window", {{"start_rel_ns", 0}, {"end_rel_ns", 1}}}}},
      {"caveats", nlohmann::ordered_json::array()},
      {"chains", nlohmann::ordered_json::array()},
      {"stats",
       {{"ops", nlohmann::ordered_json::array()},
        {"processes", {{{"pid", 7}, {"threads", {thread}}}}}}}};
  const std::string without = render::explain_html(report, nlohmann::ordered_json::object());
  EXPECT_NE(without.find("GPU API 250 ms (25.0%)"), std::string::npos);
  report["budgets"] = {
      {{"thread", {{"pid", 7}, {"comm", "trainer"}, {"tid", 8}}},
       {"buckets",
        {{{"bucket", "gpu_wait"}, {"label", "waiting for GPU"}, {"ns", 600000000}, {"share", 0.6}},
         {{"bucket", "host_work"}, {"label", "host work"}, {"ns", 400000000}, {"share", 0.35}}}}}};
  const std::string with = render::explain_html(report, nlohmann::ordered_json::object());
  EXPECT_NE(with.find("waiting for GPU 600 ms (60.0%)"), std::string::npos);
  // The share is the report's own, not recomputed.
  EXPECT_NE(with.find("host work 400 ms (35.0%)"), std::string::npos);
  EXPECT_EQ(with.find("GPU API 250 ms"), std::string::npos);
}

}  // namespace
}  // namespace gpuwhy
