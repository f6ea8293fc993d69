// SPDX-License-Identifier: Apache-2.0
// The `query` tool: one read-only SQL statement on the trace, through `gpuwhy query`'s guarded
// path (read-only connection with an authorizer, one statement, read-only statements only) and
// under its limits (statement timeout, SQLite heap cap), with a row cap.
#include <sqlite3.h>

#include "mcp/args.hpp"
#include "mcp/capped_rows.hpp"
#include "mcp/output_schemas.hpp"
#include "mcp/tool.hpp"

namespace gpuwhy::mcp {
namespace {

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

ToolResult run_query(const ServerOptions& options, const json& args) {
  check_known(args, {"sql", "max_rows"});
  const std::optional<std::string> sql = string_arg(args, "sql");
  if (!sql || sql->empty())
    throw InvalidArguments(
        "argument 'sql' is required: one SELECT statement, e.g. "
        "\"SELECT * FROM v_losses\"");
  RowLimits limits;
  limits.max_rows = int_arg(args, "max_rows", 1, options.max_rows).value_or(options.default_rows);
  limits.max_bytes = options.max_result_bytes;

  auto file = open_trace(options);
  if (!file) return tool_error(file.error().line());
  // The heap cap is process-wide in SQLite: put back what was there once this statement is done,
  // so the explain tool is not held to a query's limit.
  const sqlite3_int64 heap_before = sqlite3_hard_heap_limit64(-1);
  (**file).set_limits(options.query_timeout_s, options.query_max_memory_mb << 20);
  auto rows = capped_rows(**file, *sql, limits);
  sqlite3_hard_heap_limit64(heap_before);
  if (!rows) {
    const std::string& what = rows.error().what;
    if (what.find("interrupted") != std::string::npos)
      return tool_error("the query ran longer than the server's limit of " +
                        format_seconds(options.query_timeout_s) +
                        " s (gpuwhy mcp --timeout) and was stopped; narrow it (WHERE ts BETWEEN "
                        "..., LIMIT) or read a rollup or view (resource gpuwhy://views)");
    if (what.find("out of memory") != std::string::npos)
      return tool_error("the query needed more than the server's limit of " +
                        std::to_string(options.query_max_memory_mb) +
                        " MiB (gpuwhy mcp --max-memory) and was stopped; narrow it or aggregate");
    return tool_error(rows.error().line());
  }
  nlohmann::ordered_json out = rows_json(std::move(rows.value()), limits);
  note_damage(out, **file);
  return tool_ok(std::move(out));
}

}  // namespace

Tool query_tool() {
  return {"query",
          "Read-only SQL on the trace",
          "Runs ONE read-only SQLite statement (SELECT, WITH, read-only PRAGMA) on the trace and "
          "returns {columns, rows, row_count, truncated}. Tables and columns: resource "
          "gpuwhy://schema; shipped views answering common questions (v_calls, v_op_totals, "
          "v_call_offcpu, v_thread_offcpu, v_losses, ...): resource gpuwhy://views. Times are wall "
          "ns (session.start_ns is the trace start). Event tables are large: filter or aggregate, "
          "and prefer the per-second rollups (api_calls_per_second, offcpu_per_second) for "
          "whole-trace totals. Writes, ATTACH and extension loading are refused.",
          {{"type", "object"},
           {"properties",
            {{"sql", {{"type", "string"}, {"description", "One SQL statement"}}},
             {"max_rows",
              {{"type", "integer"},
               {"minimum", 1},
               {"description",
                "Return at most this many rows (default 200; the server caps it, 5000 unless "
                "started otherwise); 'truncated' says when the statement had more"}}}}},
           {"required", {"sql"}},
           {"additionalProperties", false}},
          run_query,
          query_output_schema()};
}

}  // namespace gpuwhy::mcp
