// SPDX-License-Identifier: Apache-2.0
#include "mcp/args.hpp"

#include <cmath>
#include <cstdio>

#include "mcp/tool.hpp"

namespace gpuwhy::mcp {
namespace {

const char* type_name(const nlohmann::json& v) { return v.is_null() ? "null" : v.type_name(); }

}  // namespace

void check_known(const nlohmann::json& args, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : args.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (ok) continue;
    std::string list;
    for (const char* k : known) list += std::string(list.empty() ? "" : ", ") + k;
    throw InvalidArguments("unknown argument '" + key + "'" +
                           (list.empty() ? "; this tool takes none" : "; it takes " + list));
  }
}

std::optional<std::string> string_arg(const nlohmann::json& args, const char* name) {
  auto it = args.find(name);
  if (it == args.end() || it->is_null()) return std::nullopt;
  if (!it->is_string())
    throw InvalidArguments(std::string("argument '") + name + "' must be a string, not " +
                           type_name(*it));
  return it->get<std::string>();
}

std::optional<int64_t> int_arg(const nlohmann::json& args, const char* name, int64_t min,
                               int64_t max) {
  auto it = args.find(name);
  if (it == args.end() || it->is_null()) return std::nullopt;
  int64_t v = 0;
  bool ok = false;
  if (it->is_number_unsigned()) {
    const uint64_t u = it->get<uint64_t>();  // above INT64_MAX: out of any range asked for
    v = u > uint64_t(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(u);
    ok = true;
  } else if (it->is_number_integer()) {
    v = it->get<int64_t>();
    ok = true;
  } else if (it->is_number_float()) {
    const double d = it->get<double>();
    ok = std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15;
    v = ok ? static_cast<int64_t>(d) : 0;
  }
  if (!ok)
    throw InvalidArguments(std::string("argument '") + name + "' must be an integer, not " +
                           (it->is_number() ? it->dump() : type_name(*it)));
  if (v < min || v > max)
    throw InvalidArguments(std::string("argument '") + name + "' must be between " +
                           std::to_string(min) + " and " + std::to_string(max) + ", not " +
                           it->dump());
  return v;
}

std::vector<uint32_t> pids_arg(const nlohmann::json& args, const char* name) {
  auto it = args.find(name);
  if (it == args.end() || it->is_null()) return {};
  const nlohmann::json list = it->is_array() ? *it : nlohmann::json::array({*it});
  std::vector<uint32_t> out;
  for (const auto& v : list) {
    const nlohmann::json one = {{name, v}};
    out.push_back(static_cast<uint32_t>(*int_arg(one, name, 1, UINT32_MAX)));
  }
  return out;
}

std::string time_arg(const nlohmann::json& args, const char* name) {
  auto it = args.find(name);
  if (it == args.end() || it->is_null()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) {
    // A bare number is seconds, as on the command line; printed so the CLI's parser reads it.
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", it->get<double>());
    return buf;
  }
  throw InvalidArguments(std::string("argument '") + name +
                         "' must be a string like \"5m\" or \"2.5\", or a number of seconds, not " +
                         type_name(*it));
}

nlohmann::json window_properties() {
  const char* forms =
      "seconds from the trace start (2.5), a duration from the start (\"300ms\"), or wall-clock "
      "ns";
  return {
      {"since",
       {{"type", "string"},
        {"description",
         "Only the last DURATION of the trace, counted back from the trace's end (not from now): "
         "\"30s\", \"5m\", \"2h\". Excludes from/to."}}},
      {"from",
       {{"type", {"string", "number"}}, {"description", std::string("Window start: ") + forms}}},
      {"to",
       {{"type", {"string", "number"}}, {"description", std::string("Window end: ") + forms}}},
      {"pid",
       {{"type", "array"},
        {"items", {{"type", "integer"}, {"minimum", 1}}},
        {"description", "Only these processes (default: every process that made GPU calls)"}}},
  };
}

}  // namespace gpuwhy::mcp
