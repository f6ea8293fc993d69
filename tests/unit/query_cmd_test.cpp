// SPDX-License-Identifier: Apache-2.0
// `gpuwhy query`: table / csv / json output, --list-views, errors and exit codes, the warning
// for an incomplete trace. Runs the real subcommand on a CLI11 app and captures its output.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "query_cli.hpp"
#include "store_fixture.hpp"

namespace gpuwhy {
namespace {

using namespace gpuwhy::testing;

class QueryCmd : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_.file("t.db");
    auto w = make_writer(db_);
    ASSERT_TRUE(w);
    ASSERT_TRUE(
        w->write_batch(std::vector<Event>{call("cudaLaunchKernel", kStart + 5, 1500, 10, 11),
                                          call("cudaMemcpy", kStart + 9, 25, 10, 12)})
            .ok());
    ASSERT_TRUE(w->finish(kStart + kMs).ok());
  }
  CliResult q(const std::string& sql, const std::string& format = "") {
    std::vector<std::string> args{"--db", db_, sql};
    if (!format.empty()) args.insert(args.end(), {"--format", format});
    return run_query_cli(args);
  }

  TempDir dir_;
  std::string db_;
};

constexpr const char* kMixed =
    "SELECT 1 AS n, NULL AS missing, 'a,b \"c\"' AS text, 2.5 AS real, 'line1\nline2' AS multi "
    "UNION ALL SELECT -12345, 7, 'plain', NULL, ''";

TEST_F(QueryCmd, TableAlignsColumnsAndShowsNullEmpty) {
  const CliResult r = q(kMixed);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "     n  missing  text     real  multi\n"
            "------  -------  -------  ----  ------------\n"
            "     1           a,b \"c\"   2.5  line1\\nline2\n"
            "-12345        7  plain\n");
}

TEST_F(QueryCmd, TableOfARealQuery) {
  const CliResult r = q("SELECT name, dur FROM v_calls ORDER BY ts");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "name               dur\n"
            "----------------  ----\n"
            "cudaLaunchKernel  1500\n"
            "cudaMemcpy          25\n");
  const CliResult empty = q("SELECT name FROM apis WHERE 0");
  EXPECT_EQ(empty.out, "name\n----\n");
}

TEST_F(QueryCmd, CsvIsRfc4180) {
  const CliResult r = q(kMixed, "csv");
  EXPECT_EQ(r.code, 0) << r.err;
  // RFC 4180 text has no control characters: a line break is written as its escape (\n).
  EXPECT_EQ(r.out,
            "n,missing,text,real,multi\r\n"
            "1,,\"a,b \"\"c\"\"\",2.5,line1\\nline2\r\n"
            "-12345,7,plain,,\r\n");
}

TEST_F(QueryCmd, JsonHasNativeNumbersAndNull) {
  const CliResult r = q(kMixed + std::string(" UNION ALL SELECT 9007199254740993, 0, 'é', 1e300, "
                                             "x'00ff'"),
                        "json");
  EXPECT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["n"], 1);
  EXPECT_TRUE(j[0]["missing"].is_null());
  EXPECT_EQ(j[0]["text"], "a,b \"c\"");
  EXPECT_DOUBLE_EQ(j[0]["real"].get<double>(), 2.5);
  EXPECT_EQ(j[0]["multi"], "line1\nline2");
  EXPECT_EQ(j[1]["n"], -12345);
  EXPECT_TRUE(j[1]["real"].is_null());
  EXPECT_EQ(j[2]["n"].get<int64_t>(), 9007199254740993);  // exact: not through a double
  EXPECT_EQ(j[2]["text"], "é");
  EXPECT_EQ(j[2]["multi"], "X'00FF'");
  // Columns keep their order; one object per line.
  EXPECT_EQ(r.out.substr(0, 2), "[\n");
  EXPECT_NE(r.out.find("{\"n\":1,\"missing\":null,\"text\""), std::string::npos) << r.out;

  EXPECT_EQ(q("SELECT 1 WHERE 0", "json").out, "[]\n");
  const auto dup = nlohmann::json::parse(q("SELECT 1 AS a, 2 AS a", "json").out);
  EXPECT_EQ(dup[0]["a"], 1);
  EXPECT_EQ(dup[0]["a_2"], 2);
}

TEST_F(QueryCmd, SqlErrorsExitTwoWithSqlitesMessage) {
  CliResult r = q("SELECT * FROM foo");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "gpuwhy: SQL error: no such table: foo\n");
  r = q("DELETE FROM api_calls", "json");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("SQL error: not authorized"), std::string::npos) << r.err;
  r = run_query_cli({"--db", db_});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no SQL given"), std::string::npos) << r.err;
}

TEST_F(QueryCmd, FileErrorsExitOne) {
  const std::string missing = dir_.file("missing.db");
  CliResult r = run_query_cli({"--db", missing, "SELECT 1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "gpuwhy: no trace file at " + missing +
                       "; record one with 'sudo gpuwhy trace' or pass --db\n");
  const std::string text = dir_.file("x.txt");
  write_file(text, "not sqlite at all, not at all, definitely not a database header\n");
  r = run_query_cli({"--db", text, "SELECT 1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("is not a gpuwhy trace"), std::string::npos);
}

TEST_F(QueryCmd, BadFormatIsAParseError) {
  EXPECT_THROW(run_query_cli({"--db", db_, "SELECT 1", "--format", "xml"}), CLI::ValidationError);
}

TEST_F(QueryCmd, IncompleteTraceWarnsOnceOnStderr) {
  const std::string path = dir_.file("unfinished.db");
  {
    auto w = make_writer(path);
    // One full chunk (written at commit) and a call left in its thread's open chunk (lost).
    std::vector<Event> batch = full_chunk(kStart, 1, 1, "cudaMalloc");
    batch.push_back(call("cudaMalloc", kStart, 1, 1, 2));
    ASSERT_TRUE(w->write_batch(batch).ok());
  }
  const CliResult r =
      run_query_cli({"--db", path, "SELECT count(*) AS n FROM api_calls", "--format", "csv"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "n\r\n" + std::to_string(store::kChunkRows) + "\r\n");
  EXPECT_EQ(r.err, "gpuwhy: warning: " + path +
                       " is incomplete: the agent was killed (the rows it still held, up to about a second "
                   "per thread, are missing); 1 batch up to 2023-11-14 22:13:20 "
                       "UTC was committed\n");
}

TEST(QueryCmdViews, ListViewsNeedsNoTrace) {
  const CliResult r = run_query_cli({"--db", "/nonexistent/x.db", "--list-views"});
  EXPECT_EQ(r.code, 0) << r.err;
  for (const auto& v : store::shipped_views()) {
    EXPECT_NE(r.out.find(v.name + "\n    "), std::string::npos) << v.name;
  }
  EXPECT_NE(r.out.find("was this slow call waiting on the GPU"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gpuwhy
