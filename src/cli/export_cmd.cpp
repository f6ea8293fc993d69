// SPDX-License-Identifier: Apache-2.0
// `gpuwhy export`: the trace in the formats other tools read (docs/export.md): a plain SQLite file
// (stock sqlite3, Python, DuckDB), an Nsight-shaped SQLite file (Nsight SQL recipes), CSV or JSON
// Lines per table (DuckDB, pandas), a Perfetto trace (the Perfetto UI, trace_processor). Reads the
// trace read-only, without root, like explain; --since/--from/--to/--pid narrow every format.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "analysis/window.hpp"
#include "cli/commands.hpp"
#include "cli/empty_trace.hpp"
#include "cli/window_flags.hpp"
#include "core/untrusted.hpp"
#include "export/clickhouse_export.hpp"
#include "export/export_scope.hpp"
#include "export/perfetto_export.hpp"
#include "export/sqlite_export.hpp"
#include "export/text_export.hpp"
#include "store/store.hpp"

namespace gpuwhy::cli {
namespace {

struct ExportFlags {
  std::string db = kDefaultDb;
  std::string format;
  std::string out;
  std::string table;
  WindowFlags window;
  std::string job = "job";  // clickhouse: the job's name, the same on every host
  uint64_t max_slices = exporter::PerfettoOptions{}.max_slices;
  bool force = false;
};

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

int run_export(const ExportFlags& f) {
  if (f.out.empty())
    return fail(
        "no output given; pass -o FILE (a directory for csv/jsonl/parquet without --table, '-' "
        "for standard output with --table)",
        2);
  const bool per_table = f.format == "csv" || f.format == "jsonl" || f.format == "parquet";
  if (!f.table.empty() && !per_table)
    return fail("--table goes with --format csv, jsonl or parquet", 2);
  if (same_file(f.out, f.db)) return fail(f.out + " is the trace itself; pick another -o", 2);
  if (f.format == "clickhouse" && f.window.any())
    return fail(
        "--format clickhouse exports the whole trace (each rank's collectives are numbered from "
        "its NCCL set-up); drop --since/--from/--to/--pid",
        2);
  struct stat st {};
  const bool to_dir = (per_table && f.table.empty()) || f.format == "clickhouse";
  if (f.out != "-" && !f.force && stat(f.out.c_str(), &st) == 0 && !(to_dir && S_ISDIR(st.st_mode)))
    return fail(f.out + " exists; pass --force to replace it", 2);
  if (f.out == "-" && f.table.empty())
    return fail("-o - (standard output) needs --table: the other exports are files", 2);

  auto window = analysis::parse_window_request(f.window.since, f.window.from, f.window.to);
  if (!window) return fail(window.error().line(), window.error().exit_code);
  auto file = store::TraceFile::open(f.db);
  if (!file) return fail(file.error().line(), file.error().exit_code);
  if (auto empty = no_events_error(*file.value())) return fail(empty->line(), empty->exit_code);
  if (const std::string w = file.value()->incomplete_warning(); !w.empty())
    fail("warning: " + w, 0);
  // A damaged -wal: SQLite reads the file without the batches after the damage, and the export
  // holds only what it read. It is written (the rest is worth having) but the run fails, as
  // explain, query and audit warn: a script must not take it for the whole trace.
  const std::string& damaged = file.value()->wal_warning();
  if (!damaged.empty()) fail("warning: " + damaged, 0);
  auto scope = exporter::resolve_scope(*file.value(), window.value(), f.window.pids);
  if (!scope) return fail(scope.error().line(), scope.error().exit_code);

  Result<exporter::ExportStats> r = Error{"unknown format"};
  const store::TraceFile& tf = *file.value();
  if (f.format == "sqlite") {
    r = exporter::export_plain_sqlite(tf, *scope, f.out);
  } else if (f.format == "nsight") {
    r = exporter::export_nsight_sqlite(tf, *scope, f.out);
  } else if (f.format == "clickhouse") {
    r = exporter::export_clickhouse(tf, f.out, {.job = f.job});
  } else if (f.format == "perfetto") {
    r = exporter::export_perfetto(tf, *scope, f.out, {.max_slices = f.max_slices});
  } else {
    const auto tf_format = f.format == "csv"     ? exporter::TextFormat::Csv
                           : f.format == "jsonl" ? exporter::TextFormat::Jsonl
                                                 : exporter::TextFormat::Parquet;
    r = f.table.empty() ? exporter::export_text_dir(tf, *scope, tf_format, f.out)
                        : exporter::export_text_table(tf, *scope, tf_format, f.table, f.out);
  }
  if (!r) return fail(r.error().line(), r.error().exit_code);
  if (f.out != "-")
    std::fprintf(stderr, "gpuwhy: wrote %s (%s, %llu %s)\n", untrusted::shown(f.out).c_str(),
                 f.format.c_str(), static_cast<unsigned long long>(r->rows),
                 f.format == "perfetto" ? "slices" : "rows");
  if (!damaged.empty())
    return fail(
        "the export is incomplete: it lacks what the damaged -wal held (see the warning "
        "above); exit 1 so that it is not taken for the whole trace",
        1);
  return 0;
}

}  // namespace

void add_export_command(CLI::App& root, Runner& run) {
  auto flags = std::make_shared<ExportFlags>();
  CLI::App* cmd =
      root.add_subcommand("export",
                          "Write the trace for other tools: plain SQLite, Nsight-shaped SQLite, "
                          "CSV/JSONL/Parquet, Perfetto "
                          "(reads a trace file offline; no root needed; docs/export.md)");
  cmd->add_option("--db", flags->db, "Trace file to read")->capture_default_str();
  cmd->add_option(
         "--format", flags->format,
         "sqlite: every table and view, plain; nsight: Nsight Systems' tables; csv, "
         "jsonl, parquet: a file per table; perfetto: a Perfetto trace; clickhouse: NCCL ranks and "
         "collectives for a fleet's ClickHouse (docs/fleet.md)")
      ->required()
      ->check(
          CLI::IsMember({"sqlite", "nsight", "csv", "jsonl", "parquet", "perfetto", "clickhouse"}));
  cmd->add_option("-o,--out", flags->out,
                  "Output file (a directory for csv/jsonl/parquet without --table; '-': stdout)");
  cmd->add_option("--table", flags->table, "csv/jsonl/parquet: only this table, into the -o file");
  add_window_flags(cmd, flags->window);
  cmd->add_option("--job", flags->job,
                  "clickhouse: the job's name, the same on every host (a scheduler's job id)")
      ->capture_default_str();
  cmd->add_option("--max-slices", flags->max_slices,
                  "perfetto: refuse a window with more calls + off-CPU intervals than this")
      ->capture_default_str();
  cmd->add_flag("--force", flags->force, "Replace an existing output file");
  cmd->callback([&run, flags] { run = [flags] { return run_export(*flags); }; });
}

}  // namespace gpuwhy::cli
