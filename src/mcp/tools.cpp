// SPDX-License-Identifier: Apache-2.0
// The tool registry: every tool gpuwhy's MCP server offers, and what they share.
#include <vector>

#include "mcp/tool.hpp"

namespace gpuwhy::mcp {

ToolResult tool_ok(nlohmann::ordered_json value) {
  // Bytes that are not UTF-8 (task names, paths) are replaced rather than failing the call.
  std::string text = value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return {false, std::move(text), std::move(value)};
}

ToolResult tool_error(std::string line) { return {true, std::move(line), nullptr}; }

std::span<const Tool> tools() {
  static const std::vector<Tool> all = {
      explain_tool(), chain_evidence_tool(), query_tool(), processes_tool(),
      threads_tool(), top_operations_tool(), audit_tool()};
  return all;
}

const Tool* find_tool(const std::string& name) {
  for (const Tool& t : tools())
    if (name == t.name) return &t;
  return nullptr;
}

Result<std::unique_ptr<store::TraceFile>> open_trace(const ServerOptions& options) {
  return store::TraceFile::open(options.db);
}

void note_damage(nlohmann::ordered_json& result, const store::TraceFile& file) {
  if (!file.wal_warning().empty() && result.is_object()) result["damaged"] = file.wal_warning();
}

}  // namespace gpuwhy::mcp
