// SPDX-License-Identifier: Apache-2.0
// The MCP server as a real consumer sees it: the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk, installed by scripts/install-export-tools) starts `gpuwhy mcp` on a
// golden fixture trace over stdio and calls its tools (tests/mcp/sdk_client.mjs). The report it
// gets from explain is `gpuwhy explain --json`'s, byte for byte once parsed, as compact text and
// as structuredContent the SDK validated against the tool's outputSchema; a file that is no trace
// is an error result the SDK user reads, not a closed connection.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "mcp_client.hpp"
#include "store_fixture.hpp"

namespace gpuwhy::testing {
namespace {

namespace fs = std::filesystem;

struct ShellRun {
  int rc = -1;
  std::string out;
};

ShellRun sh(const std::string& cmd) {
  ShellRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string sdk_dir() {
  const char* d = std::getenv("GPUWHY_TOOLS_DIR");
  return std::string(d ? d : "/var/cache/gpuwhy-test") + "/mcp";
}

TEST(McpSdk, OfficialTypeScriptClientUsesTheServer) {
  if (sh("command -v node >/dev/null").rc != 0)
    GTEST_SKIP() << "node not installed (scripts/install-export-tools)";
  if (!fs::exists(sdk_dir() + "/node_modules/@modelcontextprotocol/sdk"))
    GTEST_SKIP() << "@modelcontextprotocol/sdk not installed in " << sdk_dir()
                 << " (scripts/install-export-tools)";
  const std::string gpuwhy = std::string(GW_BINARY_DIR) + "/gpuwhy";
  const std::string& db = fixture_trace("hidden_sync");
  TempDir dir;
  const std::string not_trace = dir.file("notes.db");
  {
    std::ofstream f(not_trace);
    f << "not a trace\n";
  }
  // Every golden explain report, for the output schema to be checked on all of them.
  std::string reports;
  size_t report_count = 0;
  for (const auto& e : fs::directory_iterator(fs::path(GW_SOURCE_DIR) / "tests/golden"))
    if (fs::exists(e.path() / "explain.json")) {
      reports += " " + quote((e.path() / "explain.json").string());
      ++report_count;
    }
  ASSERT_GE(report_count, 5u);
  const ShellRun r =
      sh("GW_MCP_DIR=" + quote(sdk_dir()) + " timeout 120 node " +
         quote(std::string(GW_SOURCE_DIR) + "/tests/mcp/sdk_client.mjs") + " " + quote(gpuwhy) +
         " " + quote(db) + " " + quote(not_trace) + reports + " 2>&1");
  ASSERT_EQ(r.rc, 0) << r.out;
  const json out = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << r.out;

  EXPECT_EQ(out["server"]["name"], "gpuwhy");
  EXPECT_TRUE(out["capabilities"].contains("tools"));
  std::vector<std::string> names;
  for (const json& t : out["tools"]) names.push_back(t["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"explain", "chain_evidence", "query", "processes",
                                             "threads", "top_operations", "audit"}));
  for (const json& t : out["tools"]) {
    const std::string name = t["name"];
    EXPECT_EQ(t["output_schema"], name == "explain" || name == "audit" || name == "query") << name;
  }

  // explain: the same JSON as the command line prints.
  const ShellRun cli = sh(gpuwhy + " explain --json --db " + quote(db));
  ASSERT_EQ(cli.rc, 0) << cli.out;
  EXPECT_EQ(out["explain"]["isError"], false);
  EXPECT_EQ(out["explain"]["report"], json::parse(cli.out));
  EXPECT_EQ(out["explain"]["report"]["chains"][0]["kind"], "hidden_sync");
  EXPECT_EQ(out["chain"]["chain"], out["explain"]["report"]["chains"][0]);
  EXPECT_EQ(out["chain"]["structured"], false);  // chain_evidence declares no output schema
  // Structured and compact: the SDK validated structuredContent (callTool throws otherwise), it
  // is the text block's JSON, and the text has no indentation: the compact form of the report.
  for (const char* tool : {"explain", "audit", "query"}) {
    const json& t = out[tool];
    EXPECT_EQ(t["isError"], false) << tool << ": " << t.dump();
    EXPECT_EQ(t["structured"], true) << tool;
    EXPECT_EQ(t["same_as_text"], true) << tool;
    EXPECT_EQ(t["compact"], true) << tool;
  }
  EXPECT_EQ(out["explain"]["text_bytes"], json::parse(cli.out).dump().size());
  EXPECT_EQ(out["audit"]["report"]["schema"], "gpuwhy.audit/1");
  ASSERT_EQ(out["reports"].size(), report_count);
  for (const json& rep : out["reports"])
    EXPECT_EQ(rep["valid"], true) << rep["file"] << ": " << rep["error"];
  for (const auto& [what, valid] : out["refused"].items())
    EXPECT_EQ(valid, false) << what << " passed the output schema";

  EXPECT_EQ(out["query"]["isError"], false);
  EXPECT_EQ(out["query"]["result"]["columns"], json::array({"n"}));
  EXPECT_EQ(out["query"]["result"]["rows"], json::array({json::array({6000})}));
  // Columns of one name each keep their value (rows are arrays in column order).
  const json& dup = out["duplicate_columns"];
  EXPECT_EQ(dup["isError"], false);
  EXPECT_EQ(dup["result"]["columns"], json::array({"a", "a", "pid", "pid"}));
  ASSERT_EQ(dup["result"]["rows"].size(), 1u) << dup.dump();
  const json& row = dup["result"]["rows"][0];
  ASSERT_EQ(row.size(), 4u) << row.dump();
  EXPECT_EQ(row[0], 1);
  EXPECT_EQ(row[1], 2);
  EXPECT_TRUE(row[2].is_number_integer()) << row.dump();
  EXPECT_EQ(row[3], row[2]);
  EXPECT_EQ(out["bad_sql"]["isError"], true);
  EXPECT_EQ(out["bad_sql"]["text"], "SQL error: near \"SELEC\": syntax error");
  // The SDK asks for 2025-11-25: a wrong argument is a tool error there (SEP-1303).
  EXPECT_EQ(out["bad_argument"]["isError"], true);
  EXPECT_EQ(out["bad_argument"]["text"], "query: argument 'sql' must be a string, not number");
  EXPECT_EQ(out["unknown_tool"]["thrown"], true);
  EXPECT_EQ(out["unknown_tool"]["code"], -32602);

  EXPECT_EQ(out["resources"], json::array({"gpuwhy://schema", "gpuwhy://views"}));
  EXPECT_EQ(out["schema"]["mimeType"], "text/markdown");
  EXPECT_EQ(out["schema"]["text"], file_text(fs::path(GW_SOURCE_DIR) / "docs/schema.md"));
  EXPECT_EQ(out["stderr"], "");

  // A file that is no trace: one line on stderr, and each tool call an error result the SDK
  // user reads (not "Connection closed"), the server still answering.
  const std::string line =
      not_trace +
      " is not a gpuwhy trace (not a SQLite database, or corrupt): file is not a "
      "database";
  for (const char* tool : {"explain", "query"}) {
    const json& t = out["not_a_trace"][tool];
    EXPECT_EQ(t.value("thrown", false), false) << tool << ": " << t.dump();
    EXPECT_EQ(t["isError"], true) << tool;
    EXPECT_EQ(t["text"], line) << tool;
    EXPECT_EQ(t["structured"], false) << tool;
  }
  EXPECT_EQ(out["not_a_trace"]["stderr"],
            "gpuwhy: " + line + " (serving anyway: each tool call answers this as its error)\n");
}

}  // namespace
}  // namespace gpuwhy::testing
