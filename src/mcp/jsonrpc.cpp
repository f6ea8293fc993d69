// SPDX-License-Identifier: Apache-2.0
#include "mcp/jsonrpc.hpp"

#include <algorithm>

namespace gpuwhy::mcp {

json make_response(const json& id, json result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json make_error(const json& id, int code, const std::string& message) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

std::string encode(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

size_t nesting_depth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

LineReader::Status LineReader::next(std::string& line) {
  line.clear();
  bool too_long = false;
  int c;
  while ((c = std::getc(in_)) != EOF) {
    if (c == '\n') break;
    if (line.size() < max_)
      line += static_cast<char>(c);
    else
      too_long = true;  // keep reading to the line's end, holding nothing more
  }
  if (c == EOF && line.empty() && !too_long) return Status::End;
  if (too_long) {
    line.clear();
    return Status::TooLong;
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return Status::Line;
}

}  // namespace gpuwhy::mcp
