// SPDX-License-Identifier: Apache-2.0
// Reading a tool's arguments (a JSON object) against what its schema promised. Each reader throws
// InvalidArguments with a line naming the argument and what it must be.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gpuwhy::mcp {

// Throws unless every key of `args` is one of `known` (a misspelt argument would otherwise be
// silently ignored, and the answer taken for one it is not).
void check_known(const nlohmann::json& args, std::initializer_list<const char*> known);

std::optional<std::string> string_arg(const nlohmann::json& args, const char* name);
// An integer in [min, max]; a JSON number with a fraction is refused.
std::optional<int64_t> int_arg(const nlohmann::json& args, const char* name, int64_t min,
                               int64_t max);
// An array of process ids (or one id).
std::vector<uint32_t> pids_arg(const nlohmann::json& args, const char* name);

// A time argument: a string as the CLI takes it ("5m", "2.5", "300ms") or a number (seconds).
std::string time_arg(const nlohmann::json& args, const char* name);

// The JSON Schema pieces the tools share.
nlohmann::json window_properties();  // since, from, to, pid

}  // namespace gpuwhy::mcp
