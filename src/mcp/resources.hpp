// SPDX-License-Identifier: Apache-2.0
// The MCP resources: documents a model reads before writing SQL. Both come from this build, not
// from the trace or the network: the schema document (docs/schema.md, embedded at build time) and
// the shipped views with the question each answers (sql/views, as `gpuwhy query --list-views`).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace gpuwhy::mcp {

// resources/list's "resources" array.
nlohmann::json resource_list();
// resources/read's "contents" array for `uri`; nullopt: no such resource.
std::optional<nlohmann::json> read_resource(const std::string& uri);

}  // namespace gpuwhy::mcp
