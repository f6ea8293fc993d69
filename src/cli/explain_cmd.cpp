// SPDX-License-Identifier: Apache-2.0
// `gpuwhy explain`: why did GPU work slow down, and what to change. Opens the trace read-only
// (works on a copied file, without root), loads one window, analyses it, prints the report.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "analysis/analysis.hpp"
#include "cli/commands.hpp"
#include "core/phase_timer.hpp"
#include "export/explain_render.hpp"
#include "export/html_report.hpp"
#include "store/store.hpp"

namespace gpuwhy::cli {
namespace {

struct ExplainFlags {
  std::string db = kDefaultDb;
  std::string since, from, to;
  std::vector<uint32_t> pids;
  bool json = false;
  bool per_process = false;
  std::string html;  // write the report as one HTML page to this file
};

// The page is drawn from the JSON --json prints, plus the chains' timelines read from the file.
int write_html(const store::TraceFile& file, const analysis::Report& report,
               const std::string& path) {
  const nlohmann::ordered_json j = render::explain_json(report);
  auto timelines = render::chain_timelines(file, j);
  if (!timelines) return fail(timelines.error().line(), timelines.error().exit_code);
  const std::string page = render::explain_html(j, timelines.value());
  const std::string tmp = path + ".tmp";
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
  if (!f.html.empty()) return write_html(*file.value(), report, f.html);
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
  cmd->add_option("--html", flags->html,
                  "Write the report as one self-contained HTML page (verdict, chains with "
                  "timelines, per-thread split, percentiles) to this file");
  cmd->add_flag("--per-process", flags->per_process,
                "Add the per-process / per-thread breakdown with percentiles");
  cmd->callback([&run, flags] { run = [flags] { return run_explain(*flags); }; });
}

}  // namespace gpuwhy::cli
