// SPDX-License-Identifier: Apache-2.0
// The MCP server driven in-process, as a client would, line by line: for the tests of its
// framing, its errors and each tool. Traces: the golden fixtures (tests/golden), built once per
// test binary.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "analysis_test_util.hpp"
#include "mcp/server.hpp"

namespace gpuwhy::testing {

using json = nlohmann::json;

inline std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The trace of tests/golden/<fixture>/fixture.sql, built once per test process in a directory of
// its own (ctest may run several test processes at once), removed when the process ends.
inline const std::string& fixture_trace(const std::string& fixture) {
  struct Dir {
    std::filesystem::path path =
        std::filesystem::path(GW_BINARY_DIR) / "mcp_test" / std::to_string(getpid());
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir dir;
  static std::map<std::string, std::string> made;
  if (auto it = made.find(fixture); it != made.end()) return it->second;
  std::filesystem::create_directories(dir.path);
  const std::string path = (dir.path / (fixture + ".db")).string();
  const std::string err = analysis::testing::make_trace_db(
      path,
      file_text(std::filesystem::path(GW_SOURCE_DIR) / "tests/golden" / fixture / "fixture.sql"));
  EXPECT_EQ(err, "") << fixture;
  return made[fixture] = path;
}

class McpClient {
 public:
  explicit McpClient(mcp::ServerOptions options, const char* version = "2025-06-18")
      : server_(std::move(options)) {
    const json r = request("initialize", {{"protocolVersion", version},
                                          {"capabilities", json::object()},
                                          {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
    EXPECT_TRUE(r.contains("result")) << r.dump();
    EXPECT_EQ(server_.handle_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"),
              std::nullopt);
  }

  // The raw answer to one line (nullopt: none).
  std::optional<json> line(const std::string& text) {
    auto out = server_.handle_line(text);
    if (!out) return std::nullopt;
    EXPECT_EQ(out->find('\n'), std::string::npos) << "an answer is one line";
    return json::parse(*out);
  }

  json request(const std::string& method, const json& params = json::object()) {
    const int id = ++next_id_;
    auto r =
        line(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump());
    EXPECT_TRUE(r.has_value()) << method << " got no answer";
    if (!r) return json::object();
    EXPECT_EQ((*r)["id"], id);
    EXPECT_EQ((*r)["jsonrpc"], "2.0");
    return *r;
  }

  // tools/call; the result object ({content, isError}), or the error object of a JSON-RPC error.
  json call(const std::string& tool, const json& args = json::object()) {
    const json r = request("tools/call", {{"name", tool}, {"arguments", args}});
    return r.contains("result") ? r["result"] : r["error"];
  }

  // A successful call's JSON; fails the test (and returns null) for an error.
  json ok(const std::string& tool, const json& args = json::object()) {
    const json r = call(tool, args);
    EXPECT_EQ(r.value("isError", true), false) << tool << " " << args.dump() << ": " << r.dump();
    if (r.value("isError", true)) return nullptr;
    EXPECT_EQ(r["content"].size(), 1u);
    return json::parse(r["content"][0]["text"].get<std::string>());
  }

  // A failed call's one line (isError); fails the test for a success.
  std::string failure(const std::string& tool, const json& args = json::object()) {
    const json r = call(tool, args);
    EXPECT_EQ(r.value("isError", false), true) << tool << " " << args.dump() << ": " << r.dump();
    if (!r.contains("content")) return "";
    const std::string text = r["content"][0]["text"];
    EXPECT_EQ(text.find('\n'), std::string::npos) << "one line: " << text;
    return text;
  }

  mcp::Server& server() { return server_; }

 private:
  mcp::Server server_;
  int next_id_ = 0;
};

inline mcp::ServerOptions options_for(const std::string& db) {
  mcp::ServerOptions o;
  o.db = db;
  return o;
}

}  // namespace gpuwhy::testing
