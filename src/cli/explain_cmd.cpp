// SPDX-License-Identifier: Apache-2.0
// `gpuwhy explain`: why did GPU work slow down, and what to change. Opens the trace read-only
// (works on a copied file, without root), loads one window, analyses it, prints the report.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/phase_timer.hpp"
#include "analysis/analysis.hpp"
#include "cli/commands.hpp"
#include "export/explain_render.hpp"
#include "store/store.hpp"

namespace gpuwhy::cli {
namespace {

struct ExplainFlags {
  std::string db = kDefaultDb;
  std::string since, from, to;
  std::vector<uint32_t> pids;
  bool json = false;
  bool per_process = false;
};

int run_explain(const ExplainFlags& f) {
  auto window = analysis::parse_window_request(f.since, f.from, f.to);
  if (!window) return fail(window.error().line(), window.error().exit_code);
  auto file = store::TraceFile::open(f.db);
  if (!file) return fail(file.error().line(), file.error().exit_code);
  PhaseTimer timer("explain");
  auto rows = analysis::load_trace(*file.value(), {window.value(), f.pids});
  if (!rows) return fail(rows.error().line(), rows.error().exit_code);
  timer.lap("load");
  const analysis::Report report = analysis::analyze(std::move(rows.value()));
  timer.lap("analyze");
  const std::string out = f.json ? render::explain_json(report).dump(2) + "\n"
                                 : render::explain_text(report, {.per_process = f.per_process});
  timer.lap("render");
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

void add_explain_command(CLI::App& root, Runner& run) {
  auto flags = std::make_shared<ExplainFlags>();
  CLI::App* cmd = root.add_subcommand(
      "explain",
      "Why did GPU work slow down? Ranked root causes with evidence and a fix (reads a trace "
      "file offline; no root needed)");
  cmd->add_option("--db", flags->db, "Trace file to read")->capture_default_str();
  auto* since = cmd->add_option("--since", flags->since,
                                "Only the last DURATION of the trace (counted back from the "
                                "trace's end, not from now): 30s, 5m, 2h");
  auto* from = cmd->add_option("--from", flags->from,
                               "Window start: seconds from the trace start (2.5), a duration "
                               "(300ms), or wall-clock ns");
  auto* to = cmd->add_option("--to", flags->to, "Window end, same forms as --from");
  since->excludes(from)->excludes(to);
  cmd->add_option("--pid", flags->pids, "Only these processes (repeatable)");
  cmd->add_flag("--json", flags->json, "Print the full report as JSON");
  cmd->add_flag("--per-process", flags->per_process,
                "Add the per-process / per-thread breakdown with percentiles");
  cmd->callback([&run, flags] { run = [flags] { return run_explain(*flags); }; });
}

}  // namespace gpuwhy::cli
