// SPDX-License-Identifier: Apache-2.0
// JSON-RPC 2.0 as MCP's stdio transport frames it: one message per line, UTF-8, no embedded
// newline (a JSON encoder escapes those inside strings). Only framing and message shapes live
// here; what each method does is server.cpp's.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace gpuwhy::mcp {

using json = nlohmann::json;

// The JSON-RPC 2.0 error codes, plus MCP's "resource not found".
enum ErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kResourceNotFound = -32002,
};

json make_response(const json& id, json result);
json make_error(const json& id, int code, const std::string& message);

// How deeply arrays and objects nest in a JSON text (brackets inside strings do not count),
// scanned without parsing: nlohmann::json copies and prints nested values recursively, so a
// message nested a million deep would overflow the stack once parsed. MCP messages nest a few
// levels.
size_t nesting_depth(std::string_view text);
inline constexpr size_t kMaxNesting = 64;

// One message as its line: compact, bytes that are not UTF-8 replaced (task names and paths
// come from the traced host and may hold any byte).
std::string encode(const json& message);

// Reads newline-terminated lines of at most `max_bytes` (a client cannot make the server hold an
// unbounded line). A final line without a newline counts; a trailing '\r' is dropped.
class LineReader {
 public:
  enum class Status { Line, TooLong, End };
  LineReader(std::FILE* in, size_t max_bytes) : in_(in), max_(max_bytes) {}
  // Line: `line` holds it. TooLong: the line was skipped to its end. End: no more input.
  Status next(std::string& line);

 private:
  std::FILE* in_;
  size_t max_;
};

}  // namespace gpuwhy::mcp
