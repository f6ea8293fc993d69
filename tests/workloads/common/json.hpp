// SPDX-License-Identifier: Apache-2.0
// A minimal JSON object writer for the workloads' one-line outputs. Integers are written as
// plain JSON numbers, pointers included, so a test compares them with the tracer's integers
// directly (user-space addresses stay far below 2^53).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gw {

class Json {
 public:
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
  Json& num(std::string_view key, T v) {
    return raw(key, std::to_string(v));
  }
  Json& real(std::string_view key, double v);
  Json& ptr(std::string_view key, const void* p) {
    return num(key, reinterpret_cast<uintptr_t>(p));
  }
  Json& str(std::string_view key, std::string_view v);
  Json& boolean(std::string_view key, bool v) { return raw(key, v ? "true" : "false"); }
  Json& obj(std::string_view key, const Json& v) { return raw(key, v.dump()); }
  Json& nums(std::string_view key, const std::vector<uint64_t>& v);
  // `json` must already be a valid JSON value.
  Json& raw(std::string_view key, std::string_view json);

  std::string dump() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};

std::string json_quote(std::string_view s);

// Writes `j` as one line on stdout and flushes, so a test reading a pipe sees it at once.
void print_line(const Json& j);

}  // namespace gw
