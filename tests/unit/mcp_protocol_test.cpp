// SPDX-License-Identifier: Apache-2.0
// gpuwhy's MCP server as a protocol: the handshake, JSON-RPC framing (one message per line) and
// its errors. Whatever a client sends, the server answers with one well-formed line or, for a
// notification, nothing; it never throws and never stops serving.
#include <gtest/gtest.h>

#include <cstdio>

#include "mcp/jsonrpc.hpp"
#include "mcp_client.hpp"
#include "shell_run.hpp"
#include "store_fixture.hpp"

namespace gpuwhy::testing {
namespace {

class McpProtocol : public ::testing::Test {
 protected:
  McpClient client_{options_for(fixture_trace("hidden_sync"))};
};

TEST_F(McpProtocol, InitializeNegotiatesTheVersionAndStatesCapabilities) {
  mcp::Server server(options_for(fixture_trace("hidden_sync")));
  auto answer = [&](const char* version) {
    return json::parse(*server.handle_line(
        json{{"jsonrpc", "2.0"},
             {"id", "init"},
             {"method", "initialize"},
             {"params", {{"protocolVersion", version}, {"capabilities", json::object()}}}}
            .dump()));
  };
  const json r = answer("2025-06-18");
  EXPECT_EQ(r["id"], "init");
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(r["result"]["serverInfo"]["name"], "gpuwhy");
  EXPECT_EQ(r["result"]["capabilities"]["tools"]["listChanged"], false);
  EXPECT_TRUE(r["result"]["capabilities"].contains("resources"));
  EXPECT_FALSE(r["result"]["capabilities"].contains("prompts"));
  EXPECT_NE(r["result"]["instructions"].get<std::string>().find("explain"), std::string::npos);
  // A revision it also speaks is echoed; one it does not know gets its own.
  EXPECT_EQ(answer("2025-11-25")["result"]["protocolVersion"], "2025-11-25");
  EXPECT_EQ(answer("2024-11-05")["result"]["protocolVersion"], "2024-11-05");
  EXPECT_EQ(answer("1999-01-01")["result"]["protocolVersion"], "2025-06-18");
}

TEST_F(McpProtocol, PingAnswersAnEmptyResult) {
  const json r = client_.request("ping");
  EXPECT_EQ(r["result"], json::object());
}

TEST_F(McpProtocol, ParseErrorHasNullId) {
  const json r = *client_.line("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ");
  EXPECT_EQ(r["error"]["code"], mcp::kParseError);
  EXPECT_TRUE(r["id"].is_null());
  // A number out of double's range is the parser's too.
  const json huge =
      *client_.line(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1e400}})");
  EXPECT_EQ(huge["error"]["code"], mcp::kParseError);
  // Bytes that are not UTF-8 (echoed in the parser's message) still give a well-formed answer.
  const json bytes = *client_.line("\xff\xfe garbage");
  EXPECT_EQ(bytes["error"]["code"], mcp::kParseError);
}

TEST_F(McpProtocol, MalformedRequestsAreInvalidRequests) {
  for (const char* bad :
       {R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", R"(42)", R"("ping")",
        R"({"id":1,"method":"ping"})", R"({"jsonrpc":"1.0","id":1,"method":"ping"})",
        R"({"jsonrpc":"2.0","id":1,"method":7})", R"({"jsonrpc":"2.0","id":1})",
        R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})"}) {
    auto r = client_.line(bad);
    ASSERT_TRUE(r.has_value()) << bad;
    EXPECT_EQ((*r)["error"]["code"], mcp::kInvalidRequest) << bad;
    EXPECT_FALSE((*r)["error"]["message"].get<std::string>().empty());
  }
}

TEST_F(McpProtocol, UnknownMethodIsMethodNotFoundWithTheRequestsId) {
  const json r = *client_.line(R"({"jsonrpc":"2.0","id":"abc","method":"prompts/list"})");
  EXPECT_EQ(r["id"], "abc");
  EXPECT_EQ(r["error"]["code"], mcp::kMethodNotFound);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("prompts/list"), std::string::npos);
}

TEST_F(McpProtocol, NotificationsAndResponsesGetNoAnswer) {
  EXPECT_EQ(client_.line(
                R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}})"),
            std::nullopt);
  EXPECT_EQ(client_.line(R"({"jsonrpc":"2.0","method":"no/such/notification"})"), std::nullopt);
  EXPECT_EQ(client_.line(R"({"jsonrpc":"2.0","id":5,"result":{}})"), std::nullopt);
  // A notification of a tool call is not run as a request either.
  EXPECT_EQ(client_.line(R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"explain"}})"),
            std::nullopt);
}

TEST_F(McpProtocol, BadParamsAreInvalidParams) {
  auto code = [&](const std::string& method, const json& params) {
    const json r = client_.request(method, params);
    EXPECT_TRUE(r.contains("error")) << method << " " << params.dump() << " -> " << r.dump();
    return r.contains("error") ? r["error"]["code"].get<int>() : 0;
  };
  EXPECT_EQ(code("tools/call", {{"name", "no_such_tool"}}), mcp::kInvalidParams);
  EXPECT_EQ(code("tools/call", json::array()), mcp::kInvalidParams);
  EXPECT_EQ(code("tools/call", {{"arguments", json::object()}}), mcp::kInvalidParams);
  EXPECT_EQ(code("tools/call", {{"name", "query"}, {"arguments", "SELECT 1"}}),
            mcp::kInvalidParams);
  EXPECT_EQ(code("resources/read", {{"uri", 5}}), mcp::kInvalidParams);
  EXPECT_EQ(code("resources/read", {{"uri", "gpuwhy://nothing"}}), mcp::kResourceNotFound);
}

TEST_F(McpProtocol, ArgumentsThatDoNotFitTheSchemaAreInvalidParamsUntil2025_11_25) {
  const json r = client_.call("query", {{"sql", 42}});
  EXPECT_EQ(r["code"], mcp::kInvalidParams) << r.dump();
  EXPECT_NE(r["message"].get<std::string>().find("'sql' must be a string"), std::string::npos);
  EXPECT_EQ(client_.call("query", {{"sql", "SELECT 1"}, {"rows", 3}})["code"], mcp::kInvalidParams);
  EXPECT_EQ(client_.call("query", json::object())["code"], mcp::kInvalidParams);
  // From 2025-11-25 (SEP-1303) the same is a tool execution error the model can read.
  McpClient newer(options_for(fixture_trace("hidden_sync")), "2025-11-25");
  const std::string line = newer.failure("query", {{"sql", 42}});
  EXPECT_EQ(line, "query: argument 'sql' must be a string, not number");
}

TEST_F(McpProtocol, DeeplyNestedMessagesAreRefusedWithoutParsing) {
  // A million levels would overflow the stack when the value is copied or printed.
  const size_t deep = 1'000'000;
  const std::string args = std::string(deep, '[') + std::string(deep, ']');
  const json r = *client_.line(
      R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"query","arguments":{"sql":)" +
      args + "}}}");
  EXPECT_EQ(r["error"]["code"], mcp::kInvalidRequest);
  EXPECT_EQ(r["error"]["message"], "message nested deeper than 64 levels");
  EXPECT_EQ(client_.request("ping")["result"], json::object());
  EXPECT_EQ(mcp::nesting_depth(R"({"a":[1,{"b":"[[[{{{\"]]"}]})"), 3u);
  EXPECT_EQ(mcp::nesting_depth(R"("[[[" [ ] {)"), 1u);
}

TEST(McpFraming, LineReaderSplitsLinesDropsCrAndSkipsLongLines) {
  std::FILE* in = std::tmpfile();
  const std::string text = "one\r\n\ntoo-long-line\nthree";
  std::fwrite(text.data(), 1, text.size(), in);
  std::rewind(in);
  mcp::LineReader reader(in, 8);
  std::string line;
  using S = mcp::LineReader::Status;
  EXPECT_EQ(reader.next(line), S::Line);
  EXPECT_EQ(line, "one");
  EXPECT_EQ(reader.next(line), S::Line);
  EXPECT_EQ(line, "");
  EXPECT_EQ(reader.next(line), S::TooLong);
  EXPECT_EQ(reader.next(line), S::Line);
  EXPECT_EQ(line, "three");
  EXPECT_EQ(reader.next(line), S::End);
  std::fclose(in);
}

TEST(McpFraming, ServeAnswersEachRequestLineInOrderUntilTheInputEnds) {
  std::FILE* in = std::tmpfile();
  std::FILE* out = std::tmpfile();
  const std::string text =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n\n   \n"
      "not json\n"
      R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})"
      "\r\n"
      R"({"jsonrpc":"2.0","id":3,"method":"ping"})";  // the last line has no newline
  std::fwrite(text.data(), 1, text.size(), in);
  std::rewind(in);
  mcp::Server server(options_for(fixture_trace("hidden_sync")));
  EXPECT_EQ(server.serve(in, out), 0);
  std::rewind(out);
  std::vector<json> answers;
  char buf[1 << 16];
  std::string all;
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, out)) > 0) all.append(buf, n);
  for (size_t i = 0, nl; (nl = all.find('\n', i)) != std::string::npos; i = nl + 1)
    answers.push_back(json::parse(all.substr(i, nl - i)));
  ASSERT_EQ(answers.size(), 4u) << all;
  EXPECT_EQ(answers[0]["id"], 1);
  EXPECT_EQ(answers[1]["error"]["code"], mcp::kParseError);
  EXPECT_EQ(answers[2]["id"], 2);
  EXPECT_EQ(answers[2]["result"]["tools"].size(), 7u);
  EXPECT_EQ(answers[3]["id"], 3);
  EXPECT_TRUE(all.ends_with("\n"));
  std::fclose(in);
  std::fclose(out);
}

TEST(McpFraming, ServeStopsWhenItsOutputCannotBeWritten) {
  std::FILE* in = std::tmpfile();
  const std::string text = R"({"jsonrpc":"2.0","id":1,"method":"ping"})"
                           "\n";
  std::fwrite(text.data(), 1, text.size(), in);
  std::rewind(in);
  std::FILE* out = std::fopen("/dev/full", "w");
  ASSERT_NE(out, nullptr);
  mcp::Server server(options_for(fixture_trace("hidden_sync")));
  EXPECT_EQ(server.serve(in, out), 1);
  std::fclose(in);
  std::fclose(out);
}

// A client shows a server that exits at start only as "Connection closed": `gpuwhy mcp` on a file
// it cannot open says why on stderr once, then serves, and each tool call's error result says it
// to the user (resources and ping still answer).
TEST(McpCommand, ATraceThatCannotBeOpenedIsEachToolCallsErrorAndTheServerServes) {
  TempDir dir;
  const std::string not_trace = dir.file("notes.db");
  {
    std::ofstream f(not_trace);
    f << "not a trace\n";
  }
  const std::string gpuwhy = std::string(GW_BINARY_DIR) + "/gpuwhy";
  const std::string requests =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
      R"("capabilities":{}}})"
      "\n"
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"explain"}})"
      "\n"
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"query",)"
      R"("arguments":{"sql":"SELECT 1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"gpuwhy://views"}})"
      "\n";
  {
    std::ofstream f(dir.file("in.jsonl"));
    f << requests;
  }
  struct Case {
    std::string db, line;
  };
  const Case cases[] = {
      {"/nonexistent/gw-mcp-test.db",
       "no trace file at /nonexistent/gw-mcp-test.db; record one with 'sudo gpuwhy trace' or "
       "pass --db"},
      {not_trace, not_trace +
                      " is not a gpuwhy trace (not a SQLite database, or corrupt): file is not a "
                      "database"},
  };
  for (const Case& c : cases) {
    const ShellResult r =
        shell(shell_quote(gpuwhy) + " mcp --db " + shell_quote(c.db) + " < " +
              shell_quote(dir.file("in.jsonl")) + " 2> " + shell_quote(dir.file("err.txt")));
    EXPECT_EQ(r.exit_code, 0) << c.db;
    EXPECT_EQ(
        slurp(dir.file("err.txt")),
        "gpuwhy: " + c.line + " (serving anyway: each tool call answers this as its error)\n");
    std::vector<json> answers;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) answers.push_back(json::parse(line));
    ASSERT_EQ(answers.size(), 4u) << r.out;
    EXPECT_TRUE(answers[0].contains("result")) << answers[0].dump();
    for (int i : {1, 2}) {
      const json& result = answers[i]["result"];
      EXPECT_EQ(result["isError"], true) << result.dump();
      EXPECT_EQ(result["content"][0]["text"], c.line);
      EXPECT_FALSE(result.contains("structuredContent"));
    }
    EXPECT_NE(answers[3]["result"]["contents"][0]["text"].get<std::string>().find("## v_calls"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace gpuwhy::testing
