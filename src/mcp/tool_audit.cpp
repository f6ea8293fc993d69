// SPDX-License-Identifier: Apache-2.0
// The `audit` tool: the code path of `gpuwhy audit --json` (regime, GPU-busy estimate, memory by
// allocation site, costs with a price), so a model reads the report a person would.
#include <cmath>
#include <string>

#include "analysis/analysis.hpp"
#include "analysis/audit.hpp"
#include "analysis/audit_file.hpp"
#include "export/audit_render.hpp"
#include "mcp/args.hpp"
#include "mcp/output_schemas.hpp"
#include "mcp/tool.hpp"

namespace gpuwhy::mcp {
namespace {

ToolResult run_audit(const ServerOptions& options, const json& args) {
  check_known(args, {"since", "from", "to", "pid", "price_per_gpu_hour"});
  double price = 0;
  if (auto it = args.find("price_per_gpu_hour"); it != args.end() && !it->is_null()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0)
      throw InvalidArguments("'price_per_gpu_hour' must be a number of 0 or more (e.g. 2.5)");
    price = it->get<double>();
  }
  auto window = analysis::parse_window_request(time_arg(args, "since"), time_arg(args, "from"),
                                               time_arg(args, "to"));
  if (!window) return tool_error(window.error().line());
  auto file = open_trace(options);
  if (!file) return tool_error(file.error().line());
  auto audited = analysis::audit_file(*file.value(), {window.value(), pids_arg(args, "pid")},
                                      {.price_per_gpu_hour = price});
  if (!audited) return tool_error(audited.error().line());
  return tool_ok(render::audit_json(audited.value()));
}

}  // namespace

Tool audit_tool() {
  json props = window_properties();
  props["price_per_gpu_hour"] = {
      {"type", "number"},
      {"minimum", 0},
      {"description",
       "Price of one GPU for one hour: adds the cost of the window and of each "
       "cause's lost time"}};
  return {"audit",
          "Audit GPU efficiency and memory",
          "Per GPU process and per GPU of it (device ordinal, from cudaSetDevice/hipSetDevice): "
          "what bounds it (host_bound, transfer_bound, sync_bound, peer_bound, "
          "gpu_bound) with the time shares behind it, the GPU's busy time as a host-side "
          "estimate with its error bound, explain's fixes ranked by the time they return (the "
          "transfer fix with what pinning host memory returns and the rate it assumed), device "
          "memory over time and by allocation site (held, per_step, growing; a caching "
          "allocator's reserve apart; kept buffers no copy "
          "touched), and with a price the cost. Same as `gpuwhy audit --json` (schema "
          "gpuwhy.audit/1).",
          {{"type", "object"}, {"properties", std::move(props)}, {"additionalProperties", false}},
          run_audit,
          audit_output_schema()};
}

}  // namespace gpuwhy::mcp
