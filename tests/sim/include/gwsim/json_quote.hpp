// SPDX-License-Identifier: Apache-2.0
// A JSON string literal for any text: shared by the simulator's ground-truth file and the
// workloads' call lines, which tests parse with a real JSON parser.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace gwsim {

inline std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace gwsim
