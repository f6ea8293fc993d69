// SPDX-License-Identifier: Apache-2.0
// gpuwhy's MCP server: the methods of the Model Context Protocol a client needs to use gpuwhy's
// tools and resources (initialize, ping, tools/list, tools/call, resources/list, resources/read)
// over JSON-RPC 2.0, one message per line. It reads the trace only, through the read-only
// TraceFile, and talks only through the two streams it is given: no socket, no file written.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "mcp/jsonrpc.hpp"
#include "mcp/tool.hpp"

namespace gpuwhy::mcp {

// The protocol revision this server was written against, and the ones it also speaks (same
// messages for what it offers). A client asking for another gets kProtocolVersion.
inline constexpr const char* kProtocolVersion = "2025-06-18";
inline constexpr const char* kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                    "2024-11-05"};
// A request line longer than this is answered "invalid request" without being held.
inline constexpr size_t kMaxMessageBytes = 16u << 20;

class Server {
 public:
  explicit Server(ServerOptions options) : options_(std::move(options)) {}

  // One message line in; the line to answer with, or nothing (a notification, or a response to
  // a request this server never sends).
  std::optional<std::string> handle_line(const std::string& line);

  // Answers every line of `in` on `out` until `in` ends. Returns 0 then, 1 when `out` cannot be
  // written (the client went away).
  int serve(std::FILE* in, std::FILE* out);

  const std::string& protocol_version() const { return protocol_version_; }

 private:
  std::optional<json> handle(const json& message);
  json dispatch(const std::string& method, const json& params);
  json initialize(const json& params);
  json call_tool(const json& params);
  json tool_result(const Tool& tool, const ToolResult& r) const;
  json read_resource_method(const json& params);

  ServerOptions options_;
  std::string protocol_version_;  // empty until initialize
};

}  // namespace gpuwhy::mcp
