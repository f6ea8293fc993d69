// SPDX-License-Identifier: Apache-2.0
// Each tool of gpuwhy's MCP server on a golden fixture trace (tests/golden): explain returns the
// report `gpuwhy explain --json` prints, query goes through query's guarded read-only path under
// its limits and caps its rows, the listings count what the trace holds, the schema resource is
// docs/schema.md. Failures are tool results with isError and one line; the trace is never written.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "analysis/analysis.hpp"
#include "analysis/audit.hpp"
#include "export/audit_render.hpp"
#include "mcp/capped_rows.hpp"
#include "mcp_client.hpp"
#include "store_fixture.hpp"

namespace gpuwhy::testing {
namespace {

namespace fs = std::filesystem;

// nccl_straggler: ranks 7000-7002 (one thread each, 2500 calls each), data_prep preempting rank2;
// chains: 1 nccl_straggler, 2 cpu_contention, then LOW hidden_sync ones.
class McpTools : public ::testing::Test {
 protected:
  const std::string& db_ = fixture_trace("nccl_straggler");
  McpClient client_{options_for(db_)};
};

TEST_F(McpTools, ListsSevenReadOnlyToolsWithObjectSchemas) {
  const json r = client_.request("tools/list")["result"];
  std::vector<std::string> names;
  for (const json& t : r["tools"]) {
    names.push_back(t["name"]);
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t.dump();
    EXPECT_TRUE(t["inputSchema"]["properties"].is_object()) << t.dump();
    EXPECT_GT(t["description"].get<std::string>().size(), 40u);
    EXPECT_EQ(t["annotations"]["readOnlyHint"], true);
    EXPECT_EQ(t["annotations"]["openWorldHint"], false);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"explain", "chain_evidence", "query", "processes",
                                             "threads", "top_operations", "audit"}));
  EXPECT_EQ(r["tools"][2]["inputSchema"]["required"], json::array({"sql"}));
}

// MCP 2025-06-18: explain, audit and query declare an output schema and return their result as
// structuredContent too, the same JSON as the text block, which is compact (indentation was ~45%
// of an explain report's tokens). Clients of earlier revisions get neither, as those have none.
TEST_F(McpTools, ExplainAuditAndQueryReturnStructuredContentAndCompactText) {
  const json list = client_.request("tools/list")["result"]["tools"];
  for (const json& t : list) {
    const std::string name = t["name"];
    const bool declared = name == "explain" || name == "audit" || name == "query";
    EXPECT_EQ(t.contains("outputSchema"), declared) << name;
    if (declared) EXPECT_EQ(t["outputSchema"]["type"], "object") << name;
  }
  const std::pair<const char*, json> calls[] = {
      {"explain", json::object()},
      {"audit", json::object()},
      {"query", {{"sql", "SELECT pid, comm FROM processes"}}},
      {"processes", json::object()}};
  for (const auto& [tool, args] : calls) {
    const json r = client_.call(tool, args);
    ASSERT_EQ(r.value("isError", true), false) << tool << ": " << r.dump();
    const std::string text = r["content"][0]["text"];
    // The compact form: what dumping the parsed text (keys in their order) without indent gives.
    EXPECT_EQ(text, nlohmann::ordered_json::parse(text).dump()) << tool;
    EXPECT_EQ(text.find('\n'), std::string::npos) << tool;
    if (std::string(tool) == "processes") {
      EXPECT_FALSE(r.contains("structuredContent"));  // no output schema declared
      continue;
    }
    ASSERT_TRUE(r.contains("structuredContent")) << tool;
    EXPECT_EQ(r["structuredContent"], json::parse(text)) << tool;
  }
  // The schema's required members are in the results.
  const json explain = client_.call("explain")["structuredContent"];
  const json schema = list[0]["outputSchema"];
  for (const json& member : schema["required"])
    EXPECT_TRUE(explain.contains(member.get<std::string>())) << member;

  McpClient old(options_for(db_), "2025-03-26");
  const json old_tools = old.request("tools/list")["result"]["tools"];  // kept: the loop must
  for (const json& t : old_tools)  // not walk a destroyed temporary
    EXPECT_FALSE(t.contains("outputSchema")) << t["name"];
  const json r = old.call("explain");
  EXPECT_FALSE(r.contains("structuredContent"));
  EXPECT_EQ(json::parse(r["content"][0]["text"].get<std::string>()), client_.ok("explain"));
}

TEST_F(McpTools, ExplainReturnsTheReportOfExplainJson) {
  // tests/golden/nccl_straggler/explain.json is `gpuwhy explain --json` on this trace.
  const json expected =
      json::parse(file_text(fs::path(GW_SOURCE_DIR) / "tests/golden/nccl_straggler/explain.json"));
  EXPECT_EQ(client_.ok("explain"), expected);
}

TEST_F(McpTools, AuditReturnsTheReportOfAuditJson) {
  // What `gpuwhy audit --json --price-per-gpu-hour 2` prints: the same code path, called here.
  auto file = store::TraceFile::open(db_);
  ASSERT_TRUE(file) << file.error().line();
  auto rows = analysis::load_trace(*file.value(), {});
  ASSERT_TRUE(rows) << rows.error().line();
  const json expected = json::parse(
      render::audit_json(analysis::audit(std::move(rows.value()), {.price_per_gpu_hour = 2}))
          .dump());
  EXPECT_EQ(client_.ok("audit", {{"price_per_gpu_hour", 2}}), expected);
  EXPECT_GT(expected["window_cost"].get<double>(), 0);
  const json one = client_.ok("audit", {{"pid", {7000}}});
  ASSERT_EQ(one["processes"].size(), 1u);
  EXPECT_EQ(one["processes"][0]["pid"], 7000);
  EXPECT_FALSE(one.contains("window_cost"));
  EXPECT_EQ(client_.call("audit", {{"price_per_gpu_hour", -1}})["code"], mcp::kInvalidParams);
  EXPECT_EQ(client_.failure("audit", {{"pid", {9}}}).find("pid 9 is not in this trace"), 0u);
}

TEST_F(McpTools, ExplainTakesTheWindowAndPidsOfTheCommandLine) {
  const json last2 = client_.ok("explain", {{"since", "2s"}});
  EXPECT_EQ(last2["trace"]["window"]["start_rel_ns"], 8'000'000'000);
  EXPECT_EQ(last2["trace"]["window"]["duration_ns"], 2'000'000'000);
  const json numbers = client_.ok("explain", {{"from", 1}, {"to", "3s"}});
  EXPECT_EQ(numbers["trace"]["window"]["start_rel_ns"], 1'000'000'000);
  EXPECT_EQ(numbers["trace"]["window"]["end_rel_ns"], 3'000'000'000);
  const json one = client_.ok("explain", {{"pid", {7000}}});
  EXPECT_EQ(one["trace"]["processes"], 1);
  EXPECT_EQ(one["stats"]["processes"][0]["pid"], 7000);
}

TEST_F(McpTools, ExplainFailuresAreOneLineToolErrors) {
  EXPECT_EQ(client_.failure("explain", {{"pid", {9}}}).find("pid 9 is not in this trace"), 0u);
  const std::string bad = client_.failure("explain", {{"since", "5x"}});
  EXPECT_EQ(bad.find("cannot read since '5x'"), 0u) << bad;
  EXPECT_NE(client_.failure("explain", {{"since", "1s"}, {"from", 0}}).find("cannot be combined"),
            std::string::npos);
  EXPECT_NE(client_.failure("explain", {{"from", "20s"}}).find("window"), std::string::npos);
  EXPECT_EQ(client_.call("explain", {{"pid", {"seven"}}})["code"], mcp::kInvalidParams);
  EXPECT_EQ(client_.call("explain", {{"window", "5m"}})["code"], mcp::kInvalidParams);
}

TEST_F(McpTools, ChainEvidenceGivesOneChainOfTheReportByRankOrKind) {
  const json report = client_.ok("explain");
  const json first = client_.ok("chain_evidence", {{"rank", 1}});
  EXPECT_EQ(first, report["chains"][0]);
  EXPECT_EQ(first["kind"], "nccl_straggler");
  EXPECT_FALSE(first["evidence"].empty());
  const json contention = client_.ok("chain_evidence", {{"kind", "cpu_contention"}});
  EXPECT_EQ(contention["rank"], 2);
  EXPECT_EQ(contention["culprit"]["comm"], "data_prep") << contention.dump();
  EXPECT_EQ(client_.failure("chain_evidence", {{"kind", "io_stall"}}),
            "no chain of kind 'io_stall' in this window; the report's chains are 1 "
            "nccl_straggler (HIGH), 2 cpu_contention (HIGH), 3 hidden_sync (LOW), 4 hidden_sync "
            "(LOW), 5 hidden_sync (LOW)");
  EXPECT_EQ(client_.call("chain_evidence", json::object())["code"], mcp::kInvalidParams);
  EXPECT_EQ(client_.call("chain_evidence", {{"rank", 1}, {"kind", "x"}})["code"],
            mcp::kInvalidParams);
  EXPECT_EQ(client_.call("chain_evidence", {{"rank", 0}})["code"], mcp::kInvalidParams);
  McpClient clean(options_for(fixture_trace("clean")));
  EXPECT_EQ(clean.failure("chain_evidence", {{"rank", 1}})
                .find("no chain ranked 1: the report found no chain in this window"),
            0u);
}

TEST_F(McpTools, QueryReturnsTypedRows) {
  const json r =
      client_.ok("query", {{"sql",
                            "SELECT count(*) AS n, 1.5 AS x, NULL AS z, 'a' AS s, x'00ff' AS b "
                            "FROM api_calls"}});
  EXPECT_EQ(r["columns"], json::array({"n", "x", "z", "s", "b"}));
  EXPECT_EQ(r["rows"], json::array({json::array({7500, 1.5, nullptr, "a", "X'00FF'"})}));
  EXPECT_EQ(r["row_count"], 1);
  EXPECT_EQ(r["truncated"], false);
  EXPECT_FALSE(r.contains("note"));
  // The shipped views are there, as in gpuwhy query.
  EXPECT_EQ(client_.ok("query", {{"sql", "SELECT sum(calls) FROM v_op_totals"}})["rows"][0][0],
            7500);
}

// Two columns of one name (a join's two pids) both come back: the query tool's rows are arrays in
// column order, and rows as objects (the listing tools) get gpuwhy query --json's unique keys.
TEST_F(McpTools, ColumnsOfTheSameNameKeepEveryValue) {
  const json r = client_.ok("query", {{"sql", "SELECT 1 AS a, 2 AS a"}});
  EXPECT_EQ(r["columns"], json::array({"a", "a"}));
  EXPECT_EQ(r["rows"], json::array({json::array({1, 2})}));

  auto file = store::TraceFile::open(db_);
  ASSERT_TRUE(file) << file.error().line();
  const char* join =
      "SELECT p.pid, t.pid, t.tid, 7 AS pid_2 FROM processes AS p JOIN threads AS t "
      "ON t.pid = p.pid WHERE p.pid = 7001";
  auto rows = mcp::capped_rows(**file, join, {.max_rows = 5, .as_objects = true});
  ASSERT_TRUE(rows) << rows.error().line();
  ASSERT_EQ(rows->rows.size(), 1u);
  const auto& row = rows->rows[0];
  EXPECT_EQ(row.size(), 4u) << row.dump();  // none overwritten
  EXPECT_EQ(row.at("pid"), 7001);
  EXPECT_EQ(row.at("pid_2"), 7001);
  EXPECT_EQ(row.at("tid"), 7001);
  EXPECT_EQ(row.at("pid_2_2"), 7);  // a column already named like the renamed one
}

TEST_F(McpTools, QueryStopsAtItsRowCapAndSaysSo) {
  const char* sql = "SELECT ts, dur FROM api_calls ORDER BY ts";
  const json dflt = client_.ok("query", {{"sql", sql}});
  EXPECT_EQ(dflt["row_count"], 200);
  EXPECT_EQ(dflt["truncated"], true);
  EXPECT_NE(dflt["note"].get<std::string>().find("only the first 200 rows"), std::string::npos);
  const json ten = client_.ok("query", {{"sql", sql}, {"max_rows", 10}});
  EXPECT_EQ(ten["rows"].size(), 10u);
  EXPECT_EQ(ten["rows"][0], dflt["rows"][0]);
  const json all = client_.ok("query", {{"sql", "SELECT pid FROM processes"}, {"max_rows", 3}});
  EXPECT_EQ(all["truncated"], false);  // exactly the cap is not truncated
  EXPECT_EQ(client_.ok("query", {{"sql", sql}, {"max_rows", 5000}})["row_count"], 5000);
  const json over = client_.call("query", {{"sql", sql}, {"max_rows", 5001}});
  EXPECT_EQ(over["code"], mcp::kInvalidParams);
  EXPECT_NE(over["message"].get<std::string>().find("between 1 and 5000"), std::string::npos);

  mcp::ServerOptions small = options_for(db_);
  small.max_result_bytes = 1000;
  McpClient capped(small);
  const json bytes = capped.ok("query", {{"sql", sql}});
  EXPECT_EQ(bytes["truncated"], true);
  EXPECT_LT(bytes["row_count"].get<int>(), 200);
  EXPECT_NE(bytes["note"].get<std::string>().find("KiB of JSON"), std::string::npos);
}

TEST_F(McpTools, QueryFailuresAreOneLineToolErrors) {
  EXPECT_EQ(client_.failure("query", {{"sql", "SELEC 1"}}),
            "SQL error: near \"SELEC\": syntax error");
  EXPECT_EQ(client_.failure("query", {{"sql", "SELECT * FROM nothing_here"}}),
            "SQL error: no such table: nothing_here");
  EXPECT_NE(client_.failure("query", {{"sql", "DELETE FROM processes"}}).find("read-only"),
            std::string::npos);
  EXPECT_NE(client_.failure("query", {{"sql", "SELECT 1; SELECT 2"}}).find("more than one"),
            std::string::npos);
  EXPECT_NE(client_.failure("query", {{"sql", "ATTACH '/tmp/x.db' AS x"}}).find("SQL error"),
            std::string::npos);
  EXPECT_NE(client_.failure("query", {{"sql", "PRAGMA journal_mode=DELETE"}}).find("SQL error"),
            std::string::npos);
}

TEST_F(McpTools, QueryHasTheTimeoutAndMemoryLimitsOfGpuwhyQuery) {
  mcp::ServerOptions slow = options_for(db_);
  slow.query_timeout_s = 0.2;
  McpClient timed(slow);
  const std::string timeout = timed.failure(
      "query", {{"sql",
                 "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT "
                 "count(*) FROM c"}});
  EXPECT_EQ(timeout.find("the query ran longer than the server's limit of 0.2 s"), 0u) << timeout;

  mcp::ServerOptions small = options_for(db_);
  small.query_max_memory_mb = 8;
  McpClient limited(small);
  const sqlite3_int64 before = sqlite3_hard_heap_limit64(-1);
  // One string of 3 M numbers: about 20 MiB in SQLite's heap.
  const std::string memory = limited.failure(
      "query", {{"sql",
                 "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < "
                 "3000000) SELECT length(group_concat(x)) FROM c"}});
  EXPECT_EQ(memory.find("the query needed more than the server's limit of 8 MiB"), 0u) << memory;
  // The cap is SQLite's, process-wide: the next tool is not held to it.
  EXPECT_EQ(sqlite3_hard_heap_limit64(-1), before);
  EXPECT_EQ(limited.ok("explain")["chains"][0]["kind"], "nccl_straggler");
}

TEST_F(McpTools, ProcessesAndThreadsCountCallsPerProcessAndThread) {
  const json p = client_.ok("processes");
  ASSERT_EQ(p["processes"].size(), 3u) << p.dump();
  EXPECT_EQ(p["truncated"], false);
  for (const json& row : p["processes"]) {
    EXPECT_EQ(row["calls"], 2500);
    EXPECT_EQ(row["threads"], 1);
    EXPECT_EQ(row["comm"], "rank" + std::to_string(row["pid"].get<int>() - 7000));
    EXPECT_GT(row["api_ns"].get<int64_t>(), 0);
  }
  const json one = client_.ok("processes", {{"pid", {7002}}});
  ASSERT_EQ(one["processes"].size(), 1u);
  EXPECT_EQ(one["processes"][0]["comm"], "rank2");
  const json t = client_.ok("threads", {{"limit", 2}});
  EXPECT_EQ(t["threads"].size(), 2u);
  EXPECT_EQ(t["truncated"], true);
  EXPECT_EQ(t["threads"][0]["calls"], 2500);
  EXPECT_EQ(t["threads"][0]["tid"], t["threads"][0]["pid"]);
  EXPECT_EQ(client_.ok("threads", {{"pid", {7001}}})["threads"][0]["process_comm"], "rank1");
  EXPECT_EQ(client_.call("threads", {{"limit", "2"}})["code"], mcp::kInvalidParams);
}

TEST_F(McpTools, TopOperationsRanksApisByTimeOrCalls) {
  const json r = client_.ok("top_operations");
  ASSERT_EQ(r["operations"].size(), 3u) << r.dump();
  EXPECT_EQ(r["operations"][0]["name"], "ncclAllReduce");
  EXPECT_EQ(r["operations"][0]["calls"], 1500);
  EXPECT_EQ(r["operations"][0]["total_ns"], 6'400'000'000);
  EXPECT_EQ(r["operations"][0]["processes"], 3);
  EXPECT_NEAR(r["operations"][0]["share"].get<double>(), 6.4 / 7.1725, 1e-4);
  const json by_calls = client_.ok("top_operations", {{"order_by", "calls"}, {"limit", 1}});
  ASSERT_EQ(by_calls["operations"].size(), 1u);
  EXPECT_EQ(by_calls["operations"][0]["name"], "cudaLaunchKernel");
  EXPECT_EQ(by_calls["truncated"], true);
  const json rank0 = client_.ok("top_operations", {{"pid", {7000}}});
  EXPECT_EQ(rank0["operations"][0]["processes"], 1);
  EXPECT_EQ(client_.call("top_operations", {{"order_by", "name"}})["code"], mcp::kInvalidParams);
}

TEST_F(McpTools, ResourcesAreTheSchemaDocumentAndTheViews) {
  const json list = client_.request("resources/list")["result"]["resources"];
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["uri"], "gpuwhy://schema");
  const json schema =
      client_.request("resources/read", {{"uri", "gpuwhy://schema"}})["result"]["contents"];
  ASSERT_EQ(schema.size(), 1u);
  EXPECT_EQ(schema[0]["mimeType"], "text/markdown");
  EXPECT_EQ(schema[0]["text"], file_text(fs::path(GW_SOURCE_DIR) / "docs/schema.md"));
  const std::string views = client_.request(
      "resources/read", {{"uri", "gpuwhy://views"}})["result"]["contents"][0]["text"];
  for (const store::ViewInfo& v : store::shipped_views())
    EXPECT_NE(views.find("## " + v.name + "\n"), std::string::npos) << v.name;
}

TEST(McpTrace, AFileThatIsGoneIsAToolErrorAndTheServerGoesOn) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  fs::copy_file(fixture_trace("hidden_sync"), db);
  McpClient client(options_for(db));
  EXPECT_EQ(client.ok("processes")["processes"].size(), 1u);
  fs::remove(db);
  EXPECT_EQ(client.failure("explain"),
            "no trace file at " + db + "; record one with 'sudo gpuwhy trace' or pass --db");
  EXPECT_EQ(client.failure("query", {{"sql", "SELECT 1"}}).find("no trace file at"), 0u);
  EXPECT_EQ(client.request("ping")["result"], json::object());
}

TEST(McpTrace, NoToolCallWritesTheTrace) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  fs::copy_file(fixture_trace("nccl_straggler"), db);
  const std::string before = slurp(db);
  const auto mtime = fs::last_write_time(db);
  {
    McpClient client(options_for(db));
    client.ok("explain");
    client.ok("chain_evidence", {{"rank", 2}});
    client.ok("processes");
    client.ok("threads");
    client.ok("top_operations");
    client.ok("query", {{"sql", "SELECT * FROM v_calls LIMIT 5"}});
    client.failure("query", {{"sql", "UPDATE processes SET comm = 'x'"}});
    client.failure("query", {{"sql", "CREATE TABLE t(x)"}});
    client.failure("query", {{"sql", "DROP TABLE processes"}});
    client.failure("query", {{"sql", "VACUUM"}});
    client.failure("query", {{"sql", "PRAGMA user_version = 7"}});
  }
  EXPECT_EQ(slurp(db), before);
  EXPECT_EQ(fs::last_write_time(db), mtime);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir.path())) files.push_back(e.path().filename());
  EXPECT_EQ(files, std::vector<std::string>{"t.db"});
}

}  // namespace
}  // namespace gpuwhy::testing
