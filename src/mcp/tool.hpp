// SPDX-License-Identifier: Apache-2.0
// What an MCP tool of gpuwhy is: a name, a description a model reads to choose it, a JSON Schema
// of its arguments, and a handler. A handler opens the trace itself (read-only, per call: a trace
// still being recorded shows its newest rows, and a file removed meanwhile is said so) and returns
// either its JSON or one line saying what went wrong (a tool result with isError: the model reads
// it and can retry). Arguments that do not fit the schema throw InvalidArguments, which the
// server answers as the JSON-RPC error "invalid params".
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>
#include <string>

#include "core/result.hpp"
#include "store/store.hpp"

namespace gpuwhy::mcp {

using json = nlohmann::json;

// Set by `gpuwhy mcp`'s flags; the same for every call.
struct ServerOptions {
  std::string db;
  double query_timeout_s = 60;         // per statement; 0: none (query's --timeout)
  int64_t query_max_memory_mb = 4096;  // SQLite's heap during a query; 0: none (--max-memory)
  int64_t default_rows = 200;          // rows a query returns when the call names no max_rows
  int64_t max_rows = 5000;             // the most a call may ask for
  size_t max_result_bytes = 4u << 20;  // a result's JSON text is cut (and says so) beyond this
};

struct ToolResult {
  bool is_error = false;
  std::string text;              // the JSON result (compact), or the one line of a failure
  nlohmann::ordered_json value;  // the result itself (null for a failure): the structured
                                 // content of a tool that declares an output schema
};

// Compact JSON: indentation was about 45% of an explain report's tokens, and a model reads the
// compact text as well.
ToolResult tool_ok(nlohmann::ordered_json value);
ToolResult tool_error(std::string line);

class InvalidArguments : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using ToolHandler = ToolResult (*)(const ServerOptions& options, const json& arguments);

struct Tool {
  const char* name;
  const char* title;
  const char* description;
  json input_schema;
  ToolHandler handler;
  // The JSON Schema of a successful result (MCP 2025-06-18 outputSchema), or null for a tool that
  // declares none. A tool that declares one returns its result as structuredContent too, which
  // clients validate against it (output_schemas.hpp).
  json output_schema = nullptr;
};

// Every tool, in the order tools/list gives them.
std::span<const Tool> tools();
const Tool* find_tool(const std::string& name);

// The tools, by file (each returns its Tool).
Tool explain_tool();
Tool audit_tool();
Tool chain_evidence_tool();
Tool query_tool();
Tool processes_tool();
Tool threads_tool();
Tool top_operations_tool();

// Opens options.db read-only for one call.
Result<std::unique_ptr<store::TraceFile>> open_trace(const ServerOptions& options);

// Adds "damaged": the file's -wal warning to a result read from `file` when its -wal is damaged
// (the rows after the damage are missing, as explain's damaged_wal caveat and query's warning
// say): a model must not take the answer for the whole trace. Nothing otherwise.
void note_damage(nlohmann::ordered_json& result, const store::TraceFile& file);

}  // namespace gpuwhy::mcp
