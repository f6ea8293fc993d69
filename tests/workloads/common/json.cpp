// SPDX-License-Identifier: Apache-2.0
#include "common/json.hpp"

#include "gwsim/json_quote.hpp"

namespace gw {

std::string json_quote(std::string_view s) { return gwsim::json_quote(s); }

Json& Json::raw(std::string_view key, std::string_view json) {
  if (!body_.empty()) body_ += ",";
  body_ += json_quote(key);
  body_ += ":";
  body_ += json;
  return *this;
}

Json& Json::real(std::string_view key, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return raw(key, buf);
}

Json& Json::str(std::string_view key, std::string_view v) { return raw(key, json_quote(v)); }

Json& Json::nums(std::string_view key, const std::vector<uint64_t>& v) {
  std::string a = "[";
  for (size_t i = 0; i < v.size(); ++i) a += (i ? "," : "") + std::to_string(v[i]);
  return raw(key, a + "]");
}

void print_line(const Json& j) {
  std::fputs(j.dump().c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

}  // namespace gw
