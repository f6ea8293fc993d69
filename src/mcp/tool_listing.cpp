// SPDX-License-Identifier: Apache-2.0
// The `processes`, `threads` and `top_operations` tools: the trace's who and what, with call
// counts and API time, read from the per-second rollups (docs/schema.md) so they answer at once on
// a trace of any size. The SQL goes through the same read-only path as the query tool; the only
// values put into it are integers the argument readers checked.
#include <string>

#include "mcp/args.hpp"
#include "mcp/capped_rows.hpp"
#include "mcp/tool.hpp"

namespace gpuwhy::mcp {
namespace {

using ojson = nlohmann::ordered_json;

// "" or " AND <column> IN (1,2)" for the pid argument.
std::string pid_filter(const std::vector<uint32_t>& pids, const char* column) {
  if (pids.empty()) return "";
  std::string in;
  for (uint32_t p : pids) in += (in.empty() ? "" : ",") + std::to_string(p);
  return std::string(" AND ") + column + " IN (" + in + ")";
}

ToolResult listing(const ServerOptions& options, const std::string& sql, int64_t limit,
                   const char* key) {
  auto file = open_trace(options);
  if (!file) return tool_error(file.error().line());
  RowLimits limits{.max_rows = limit, .max_bytes = options.max_result_bytes, .as_objects = true};
  auto rows = capped_rows(**file, sql, limits);
  if (!rows) return tool_error(rows.error().line());
  ojson out = ojson::object();
  const bool truncated = !rows->truncated_by.empty();
  out[key] = std::move(rows->rows);
  out["truncated"] = truncated;
  if (truncated)
    out["note"] = "only the first rows (by the order above); raise limit or filter by pid";
  note_damage(out, **file);
  return tool_ok(std::move(out));
}

json limit_schema(int64_t dflt) {
  return {{"type", "integer"},
          {"minimum", 1},
          {"description", "At most this many rows (default " + std::to_string(dflt) + ")"}};
}

json pid_schema() {
  return {{"type", "array"},
          {"items", {{"type", "integer"}, {"minimum", 1}}},
          {"description", "Only these processes"}};
}

ToolResult run_processes(const ServerOptions& options, const json& args) {
  check_known(args, {"pid", "limit"});
  const auto pids = pids_arg(args, "pid");
  const int64_t limit = int_arg(args, "limit", 1, options.max_rows).value_or(100);
  // A pid reused within the trace has one row per process; calls are counted per pid.
  const std::string sql =
      "WITH s AS (SELECT start_ns AS t0 FROM session), "
      "c AS (SELECT pid, sum(calls) AS calls, sum(dur_ns) AS api_ns FROM api_calls_per_second "
      "GROUP BY pid), "
      "t AS (SELECT pid, count(*) AS threads FROM threads GROUP BY pid) "
      "SELECT p.pid, p.ppid, p.comm, p.exe, p.cmdline, coalesce(t.threads, 0) AS threads, "
      "coalesce(c.calls, 0) AS calls, coalesce(c.api_ns, 0) AS api_ns, "
      "p.first_seen_ns - s.t0 AS first_seen_rel_ns, p.exit_ns - s.t0 AS exit_rel_ns, p.exit_code "
      "FROM processes AS p CROSS JOIN s LEFT JOIN c ON c.pid = p.pid LEFT JOIN t ON t.pid = p.pid "
      "WHERE 1" +
      pid_filter(pids, "p.pid") + " ORDER BY calls DESC, p.pid, p.start_ns";
  return listing(options, sql, limit, "processes");
}

ToolResult run_threads(const ServerOptions& options, const json& args) {
  check_known(args, {"pid", "limit"});
  const auto pids = pids_arg(args, "pid");
  const int64_t limit = int_arg(args, "limit", 1, options.max_rows).value_or(200);
  const std::string sql =
      "WITH s AS (SELECT start_ns AS t0 FROM session), "
      "c AS (SELECT pid, tid, sum(calls) AS calls, sum(dur_ns) AS api_ns FROM "
      "api_calls_per_second GROUP BY pid, tid) "
      "SELECT th.pid, th.tid, th.comm, p.comm AS process_comm, coalesce(c.calls, 0) AS calls, "
      "coalesce(c.api_ns, 0) AS api_ns, th.first_seen_ns - s.t0 AS first_seen_rel_ns, "
      "th.exit_ns - s.t0 AS exit_rel_ns, th.cpus_allowed_list "
      "FROM threads AS th CROSS JOIN s LEFT JOIN c ON c.pid = th.pid AND c.tid = th.tid "
      "LEFT JOIN (SELECT pid, comm FROM processes GROUP BY pid) AS p ON p.pid = th.pid "
      "WHERE 1" +
      pid_filter(pids, "th.pid") + " ORDER BY calls DESC, th.pid, th.tid, th.first_seen_ns";
  return listing(options, sql, limit, "threads");
}

ToolResult run_top_operations(const ServerOptions& options, const json& args) {
  check_known(args, {"pid", "limit", "order_by"});
  const auto pids = pids_arg(args, "pid");
  const int64_t limit = int_arg(args, "limit", 1, options.max_rows).value_or(10);
  const std::string order = string_arg(args, "order_by").value_or("total_ns");
  if (order != "total_ns" && order != "calls")
    throw InvalidArguments("argument 'order_by' must be \"total_ns\" or \"calls\", not \"" + order +
                           "\"");
  const std::string sql =
      "WITH all_ns AS (SELECT sum(dur_ns) AS ns FROM api_calls_per_second WHERE 1" +
      pid_filter(pids, "pid") +
      ") SELECT a.name, a.family, a.category, sum(r.calls) AS calls, sum(r.dur_ns) AS total_ns, "
      "round(1.0 * sum(r.dur_ns) / nullif((SELECT ns FROM all_ns), 0), 4) AS share, "
      "sum(r.dur_ns) / sum(r.calls) AS avg_ns, max(r.max_dur_ns) AS max_ns, "
      "sum(r.bytes) AS bytes, count(DISTINCT r.pid) AS processes, count(DISTINCT r.tid) AS "
      "threads FROM api_calls_per_second AS r LEFT JOIN apis AS a ON a.id = r.api WHERE 1" +
      pid_filter(pids, "r.pid") + " GROUP BY r.api ORDER BY " + order + " DESC, calls DESC, a.name";
  return listing(options, sql, limit, "operations");
}

json listing_schema(int64_t dflt, const json& extra = json::object()) {
  json props = {{"pid", pid_schema()}, {"limit", limit_schema(dflt)}};
  props.update(extra);
  return {{"type", "object"}, {"properties", props}, {"additionalProperties", false}};
}

}  // namespace

Tool processes_tool() {
  return {"processes", "Traced processes",
          "The traced processes, most GPU API calls first: pid, parent, name, executable, "
          "command line (secrets masked at recording), thread count, GPU API calls and the time "
          "spent in them (api_ns), when each was first seen and exited (ns from the trace "
          "start).",
          listing_schema(100), run_processes};
}

Tool threads_tool() {
  return {"threads", "Traced threads",
          "The threads of the traced processes, most GPU API calls first: pid, tid, thread "
          "name, process name, GPU API calls and time in them (api_ns), first seen and exit (ns "
          "from the trace start), the CPUs it may run on.",
          listing_schema(200), run_threads};
}

Tool top_operations_tool() {
  return {"top_operations", "Top GPU operations",
          "The GPU API functions that took the most time (or calls) over the whole trace: "
          "name, family, category, calls, total_ns, share of all API time, avg_ns, max_ns, "
          "bytes moved, processes and threads calling it. Percentiles per window are in the "
          "explain report's stats.ops.",
          listing_schema(10, {{"order_by",
                               {{"type", "string"},
                                {"enum", {"total_ns", "calls"}},
                                {"description", "Rank by total time (default) or by calls"}}}}),
          run_top_operations};
}

}  // namespace gpuwhy::mcp
