// SPDX-License-Identifier: Apache-2.0
// `gpuwhy explain`: why did GPU work slow down, and what to change. Opens the trace read-only
// (works on a copied file, without root), loads one window, analyses it, prints the report.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "analysis/analysis.hpp"
#include "analysis/audit.hpp"
#include "analysis/audit_file.hpp"
#include "cli/commands.hpp"
#include "cli/empty_trace.hpp"
#include "cli/explain_hosts.hpp"
#include "cli/window_flags.hpp"
#include "core/cleanup.hpp"
#include "core/phase_timer.hpp"
#include "export/audit_render.hpp"
#include "export/explain_render.hpp"
#include "export/html_report.hpp"
#include "store/store.hpp"

namespace gpuwhy::cli {
namespace {

struct ExplainFlags {
  std::vector<std::string> dbs = {kDefaultDb};  // several: one job across hosts (explain_hosts)
  WindowFlags window;
  bool json = false;
  bool per_process = false;
  std::string html;    // write the report as one HTML page to this file
  bool force = false;  // replace an existing --html file
  uint64_t batch_rows = analysis::kDefaultBatchRows;
};

// The page is drawn from the JSON --json prints, plus the chains' timelines and the whole
// window's timeline (of the analysed processes, `pids`) read from the file, and the audit of the
// same rows (audit runs the same analysis, so it is done once).
int write_html(const store::TraceFile& file, const analysis::AuditReport& audit,
               const std::vector<uint32_t>& pids, const std::string& path) {
  const nlohmann::ordered_json j = render::explain_json(audit.explain);
  auto timelines = render::chain_timelines(file, j);
  if (!timelines) return fail(timelines.error().line(), timelines.error().exit_code);
  auto whole = render::whole_timeline(file, j, pids);
  if (!whole) return fail(whole.error().line(), whole.error().exit_code);
  const std::string page =
      render::explain_html(j, timelines.value(), render::audit_json(audit), whole.value());
  const std::string tmp = path + ".tmp";
  const cleanup::Guard partial(tmp);  // removed if a signal ends explain while it writes
  FILE* out = std::fopen(tmp.c_str(), "wb");
  if (!out) return fail(errno_error("cannot create " + path, errno, "check the directory").line());
  const bool ok = std::fwrite(page.data(), 1, page.size(), out) == page.size();
  if (std::fclose(out) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return fail(errno_error("cannot write " + path, errno).line());
  }
  std::fprintf(stderr, "gpuwhy: wrote %s\n", path.c_str());
  return 0;
}

int run_explain(const ExplainFlags& f) {
  if (f.dbs.size() > 1) {
    // One job across hosts: the whole of each file, text or JSON.
    if (f.window.any() || f.per_process || !f.html.empty())
      return fail(
          "with several --db files explain joins one job's NCCL ranks over the whole traces; "
          "--since/--from/--to/--pid/--per-process/--html read one file: pass one --db for them",
          2);
    return run_explain_hosts(f.dbs, f.json);
  }
  // As export -o: an existing file is only replaced when asked (a report from last week, or the
  // trace itself given by mistake), and that is known before the analysis, not after it.
  if (struct stat st{}; !f.html.empty() && stat(f.html.c_str(), &st) == 0) {
    if (struct stat db{};
        stat(f.dbs.front().c_str(), &db) == 0 && db.st_dev == st.st_dev && db.st_ino == st.st_ino)
      return fail(f.html + " is the trace itself; pick another --html file", 2);
    if (!f.force) return fail(f.html + " exists; pass --force to replace it", 2);
  }
  auto window = analysis::parse_window_request(f.window.since, f.window.from, f.window.to);
  if (!window) return fail(window.error().line(), window.error().exit_code);
  auto file = store::TraceFile::open(f.dbs.front());
  if (!file) return fail(file.error().line(), file.error().exit_code);
  if (auto empty = no_events_error(*file.value())) return fail(empty->line(), empty->exit_code);
  PhaseTimer timer("explain");
  if (!f.html.empty()) {  // the page holds the audit too, which reads the rows: one batch
    auto audited = analysis::audit_file(*file.value(), {window.value(), f.window.pids});
    if (!audited) return fail(audited.error().line(), audited.error().exit_code);
    return write_html(*file.value(), std::move(audited.value()), f.window.pids, f.html);
  }
  auto analysed =
      analysis::explain_steady_state(*file.value(), {window.value(), f.window.pids}, f.batch_rows);
  if (!analysed) return fail(analysed.error().line(), analysed.error().exit_code);
  const analysis::Report& report = analysed.value();
  timer.lap("load and analyze");
  const std::string out = f.json ? render::explain_json(report).dump(
                                       2, ' ', false, nlohmann::json::error_handler_t::replace) +
                                       "\n"
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
  cmd->add_option("--db", flags->dbs,
                  "Trace file to read; repeat it with each host's trace of one NCCL job to "
                  "explain the job across hosts")
      ->allow_extra_args(false)
      ->capture_default_str();
  add_window_flags(cmd, flags->window);
  cmd->add_flag("--json", flags->json, "Print the full report as JSON");
  cmd->add_option("--html", flags->html,
                  "Write the report as one self-contained HTML page (verdict, chains with "
                  "timelines, per-thread split, percentiles) to this file");
  cmd->add_flag("--force", flags->force, "Replace an existing --html file");
  cmd->add_flag("--per-process", flags->per_process,
                "Add the per-process / per-thread breakdown with percentiles");
  cmd->add_option("--batch-rows", flags->batch_rows,
                  "Analyse a window of more stored events than this a batch of whole processes "
                  "at a time, so memory follows the batch (about 45 bytes per event) and not the "
                  "trace; whole-window percentiles of an operation in several batches are then "
                  "within 0.8%; a process bigger than this is analysed in time windows")
      ->check(CLI::Range(uint64_t{1000}, uint64_t{1} << 40))
      ->capture_default_str();
  cmd->callback([&run, flags] { run = [flags] { return run_explain(*flags); }; });
}

}  // namespace gpuwhy::cli
