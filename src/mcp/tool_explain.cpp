// SPDX-License-Identifier: Apache-2.0
// The `explain` and `chain_evidence` tools: the code path of `gpuwhy explain --json` (load one
// window, analyse, render as JSON), so a model reads exactly the report a person would.
#include <string>

#include "analysis/analysis.hpp"
#include "export/explain_render.hpp"
#include "mcp/args.hpp"
#include "mcp/output_schemas.hpp"
#include "mcp/tool.hpp"

namespace gpuwhy::mcp {
namespace {

using ojson = nlohmann::ordered_json;

// The analysis words its errors for the command line (--since, --pid); a tool's caller typed
// arguments of the same names without the dashes.
std::string as_arguments(std::string line) {
  for (const char* flag : {"--since", "--from", "--to", "--pid"})
    for (size_t at = line.find(flag); at != std::string::npos; at = line.find(flag, at))
      line.erase(at, 2);
  return line;
}

// The report of one window, or one line saying why there is none.
Result<ojson> explain_report(const ServerOptions& options, const json& args) {
  const std::string since = time_arg(args, "since");
  const std::string from = time_arg(args, "from");
  const std::string to = time_arg(args, "to");
  const std::vector<uint32_t> pids = pids_arg(args, "pid");
  auto window = analysis::parse_window_request(since, from, to);
  if (!window) return Error{as_arguments(window.error().line())};
  auto file = open_trace(options);
  if (!file) return file.error();
  auto report = analysis::explain_steady_state(*file.value(), {window.value(), pids});
  if (!report) return Error{as_arguments(report.error().line())};
  return render::explain_json(report.value());
}

ToolResult run_explain(const ServerOptions& options, const json& args) {
  check_known(args, {"since", "from", "to", "pid"});
  auto report = explain_report(options, args);
  if (!report) return tool_error(report.error().line());
  return tool_ok(std::move(report.value()));
}

std::string chain_list(const ojson& chains) {
  std::string out;
  for (const ojson& c : chains)
    out += (out.empty() ? "" : ", ") + std::to_string(c.value("rank", 0)) + " " +
           c.value("kind", std::string()) + " (" + c.value("severity", std::string()) + ")";
  return out;
}

ToolResult run_chain_evidence(const ServerOptions& options, const json& args) {
  check_known(args, {"rank", "kind", "since", "from", "to", "pid"});
  const std::optional<int64_t> rank = int_arg(args, "rank", 1, 1000000);
  const std::optional<std::string> kind = string_arg(args, "kind");
  if (rank.has_value() == kind.has_value())
    throw InvalidArguments(
        "name the chain by 'rank' (1 is the first of the report) or by 'kind' "
        "(e.g. \"hidden_sync\"), one of the two");
  auto report = explain_report(options, args);
  if (!report) return tool_error(report.error().line());
  const ojson& chains = report.value()["chains"];
  for (const ojson& c : chains)
    if ((rank && c.value("rank", 0) == *rank) || (kind && c.value("kind", std::string()) == *kind))
      return tool_ok(c);
  const std::string wanted =
      rank ? "no chain ranked " + std::to_string(*rank) : "no chain of kind '" + *kind + "'";
  if (chains.empty())
    return tool_error(wanted + ": the report found no chain in this window (verdict: " +
                      report.value().value("verdict", std::string()) + ")");
  return tool_error(wanted + " in this window; the report's chains are " + chain_list(chains));
}

json object_schema(json properties) {
  return {
      {"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
}

}  // namespace

Tool explain_tool() {
  return {"explain",
          "Explain the trace",
          "Why did GPU work slow down? Runs gpuwhy's analysis on the trace (or a window of it, or "
          "some processes) and returns the full report as JSON, the same as `gpuwhy explain "
          "--json` (schema gpuwhy.explain/1): verdict, caveats, ranked causal chains with "
          "evidence and a fix, per-thread time budgets, per-operation statistics. Times are ns; "
          "*_rel_ns count from the trace start. Start here.",
          object_schema(window_properties()),
          run_explain,
          explain_output_schema()};
}

Tool chain_evidence_tool() {
  json props = window_properties();
  props["rank"] = {{"type", "integer"},
                   {"minimum", 1},
                   {"description", "The chain's rank in the report (1: the most time lost)"}};
  props["kind"] = {{"type", "string"},
                   {"description",
                    "The chain's kind instead of its rank, e.g. hidden_sync, lock_wait, "
                    "cpu_contention, io_stall, transfer_bound, nccl_straggler (the first of "
                    "that kind)"}};
  return {"chain_evidence", "Evidence of one causal chain",
          "One causal chain of the explain report, whole: its title, severity, time lost and "
          "share, the process, thread and culprit, every line of evidence, the fix and its "
          "metrics. Name it by rank or by kind; the window arguments must be those of the "
          "explain call it comes from.",
          object_schema(std::move(props)), run_chain_evidence};
}

}  // namespace gpuwhy::mcp
