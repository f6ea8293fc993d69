// SPDX-License-Identifier: Apache-2.0
// `gpuwhy audit`: per GPU process, its regime (what bounds it), the GPU's busy time bounded from
// the host side, explain's fixes ranked by the time they return, device memory by allocation
// site, and with a price, what it all cost. Reads a trace file offline, like explain.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "analysis/analysis.hpp"
#include "analysis/audit_file.hpp"
#include "cli/commands.hpp"
#include "cli/empty_trace.hpp"
#include "cli/window_flags.hpp"
#include "export/audit_render.hpp"
#include "store/store.hpp"

namespace gpuwhy::cli {
namespace {

struct AuditFlags {
  std::string db = kDefaultDb;
  WindowFlags window;
  double price = 0;
  bool json = false;
};

int run_audit(const AuditFlags& f) {
  if (!std::isfinite(f.price) || f.price < 0)
    return fail("--price-per-gpu-hour must be a number of 0 or more (e.g. 2.50)", 2);
  auto window = analysis::parse_window_request(f.window.since, f.window.from, f.window.to);
  if (!window) return fail(window.error().line(), window.error().exit_code);
  auto file = store::TraceFile::open(f.db);
  if (!file) return fail(file.error().line(), file.error().exit_code);
  if (auto empty = no_events_error(*file.value())) return fail(empty->line(), empty->exit_code);
  auto audited = analysis::audit_file(*file.value(), {window.value(), f.window.pids},
                                      {.price_per_gpu_hour = f.price});
  if (!audited) return fail(audited.error().line(), audited.error().exit_code);
  const analysis::AuditReport& report = audited.value();
  const std::string out = f.json ? render::audit_json(report).dump(
                                       2, ' ', false, nlohmann::json::error_handler_t::replace) +
                                       "\n"
                                 : render::audit_text(report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

void add_audit_command(CLI::App& root, Runner& run) {
  auto flags = std::make_shared<AuditFlags>();
  CLI::App* cmd = root.add_subcommand(
      "audit",
      "What bounds each GPU process (host, transfers, syncs, peers or the GPU), its device "
      "memory by allocation site, and with a price what the lost time cost (offline, no root)");
  cmd->add_option("--db", flags->db, "Trace file to read")->capture_default_str();
  add_window_flags(cmd, flags->window);
  cmd->add_option("--price-per-gpu-hour", flags->price,
                  "Price of one GPU for one hour (any currency): adds the cost of the window and "
                  "of each cause's lost time");
  cmd->add_flag("--json", flags->json, "Print the audit as JSON (schema gpuwhy.audit/1)");
  cmd->callback([&run, flags] { run = [flags] { return run_audit(*flags); }; });
}

}  // namespace gpuwhy::cli
