// SPDX-License-Identifier: Apache-2.0
// The plain SQLite export: the trace as ordinary tables and views (sqlite_export.hpp).
#include "export/sqlite_export.hpp"

#include <algorithm>

#include "export/output_db.hpp"
#include "store/chunked_tables.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::exporter {
namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

// api_calls' label columns, which gpuwhy derives from apis in memory, as generated columns: a
// CASE over the file's apis, computed when read, stored nowhere (SELECT * shows them).
Result<std::string> label_columns(const store::TraceFile& file, const TableInfo& t) {
  const store::ChunkedTable* c = store::find_chunked_table(t.name);
  std::string out;
  for (const store::ChunkedLabel& l : c->labels) {
    auto rows = store::run_query(file, std::string(l.lookup));
    if (!rows) return rows.error();
    std::string expr = "CASE \"" + std::string(c->columns[l.source]) + "\"";
    for (const auto& r : rows->rows) expr += " WHEN " + r[0] + " THEN " + quote(r[1]);
    expr += rows->rows.empty() ? " WHEN NULL THEN NULL END" : " END";
    out += ", \"" + std::string(l.name) + "\" TEXT GENERATED ALWAYS AS (" + expr + ") VIRTUAL";
  }
  return out;
}

std::string column_list(const TableInfo& t, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += (i ? ", \"" : "\"") + t.columns[i] + "\"";
  return s;
}

std::string params(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += i ? ",?" : "?";
  return s;
}

// For the documented questions: a thread's rows in time (the per-call views' joins), the
// slowest calls of an API, the calls of a stack.
constexpr const char* kIndexes[][2] = {
    {"api_calls", "CREATE INDEX api_calls_tid_ts ON api_calls(tid, ts)"},
    {"api_calls", "CREATE INDEX api_calls_name_dur ON api_calls(name, dur)"},
    {"api_calls", "CREATE INDEX api_calls_stack ON api_calls(stack_id) WHERE stack_id NOT NULL"},
    {"offcpu", "CREATE INDEX offcpu_tid_ts ON offcpu(tid, ts)"},
    {"syscalls", "CREATE INDEX syscalls_tid_ts ON syscalls(tid, ts)"},
    {"block_io", "CREATE INDEX block_io_tid_ts ON block_io(tid, ts)"},
    {"reclaim", "CREATE INDEX reclaim_tid_ts ON reclaim(tid, ts)"},
    {"cpu_samples", "CREATE INDEX cpu_samples_tid_ts ON cpu_samples(tid, ts)"},
};

Status write_export_info(OutputDb& out, const store::TraceFile& file, const Scope& scope) {
  if (auto st = out.exec("CREATE TABLE gpuwhy_export (name TEXT PRIMARY KEY, value TEXT)",
                         "writing gpuwhy_export");
      !st)
    return st;
  std::string pids;
  for (uint32_t p : scope.pids) pids += (pids.empty() ? "" : ",") + std::to_string(p);
  std::string rows =
      "('source', " + quote(file.path()) + "), ('agent_version', " + quote(GPUWHY_VERSION) +
      "), ('window_start_ns', " + (scope.whole ? "NULL" : std::to_string(scope.window.start_ns)) +
      "), ('window_end_ns', " + (scope.whole ? "NULL" : std::to_string(scope.window.end_ns)) +
      "), ('pids', " + (pids.empty() ? "NULL" : quote(pids)) + ")";
  for (const store::ViewInfo& v : store::shipped_views())
    rows += ", (" + quote("view:" + v.name) + ", " + quote(v.description) + ")";
  return out.exec("INSERT INTO gpuwhy_export VALUES " + rows, "writing gpuwhy_export");
}

}  // namespace

Result<ExportStats> export_plain_sqlite(const store::TraceFile& file, const Scope& scope,
                                        const std::string& out_path) {
  auto tables = list_tables(file);
  if (!tables) return tables.error();
  auto out = OutputDb::create(out_path);
  if (!out) return out.error();
  ExportStats stats;
  std::vector<std::string> present;
  // Rollups last: they are computed from the event rows already written.
  for (const TableInfo& t : tables.value()) {
    present.push_back(t.name);
    const size_t stored = t.columns.size() - t.labels;
    std::string create = t.create_sql;
    if (create.empty()) {
      create = "CREATE TABLE " + t.name + " (";
      for (size_t i = 0; i < stored; ++i)
        create += (i ? ", \"" : "\"") + t.columns[i] + (t.chunked ? "\" INTEGER" : "\"");
      if (t.labels) {
        auto labels = label_columns(file, t);
        if (!labels) return labels.error();
        create += labels.value();
      }
      create += ")";
    }
    if (auto st = out->exec(create, "creating " + t.name); !st) return st.error();
    ++stats.tables;
    if (t.kind == TableKind::Rollup) {
      auto body = view_body(t.name);
      if (!body) return body.error();
      if (auto st = out->exec(
              "INSERT INTO " + t.name + " (" + column_list(t, stored) + ") " + body.value(),
              "computing " + t.name);
          !st)
        return st.error();
      stats.rows += sqlite3_changes64(out->db());
      continue;
    }
    auto select = select_sql(t, scope, /*with_labels=*/false);
    if (!select) return select.error();
    const std::string insert =
        t.chunked ? "INSERT INTO " + t.name + " (rowid, " + column_list(t, stored) + ") VALUES (" +
                        params(stored + 1) + ")"
                  : "INSERT INTO " + t.name + " VALUES (" + params(stored) + ")";
    auto rows = out->copy_rows(file.db(), select.value(), insert, t.name);
    if (!rows) return rows.error();
    stats.rows += rows.value();
  }
  for (const auto& [table, sql] : kIndexes)
    if (std::find(present.begin(), present.end(), table) != present.end())
      if (auto st = out->exec(sql, "indexing " + std::string(table)); !st) return st.error();
  // The views read the tables by the names gpuwhy presents: stored here, they answer in any
  // SQLite reader. Tables an old file lacks (cpu_samples) make their views fail as they do
  // in gpuwhy query, naming the table.
  if (auto st = store::install_views(out->db(), /*temp=*/false); !st) return st.error();
  if (auto st = write_export_info(out.value(), file, scope); !st) return st.error();
  if (auto st = out->exec("ANALYZE", "analysing " + out_path); !st) return st.error();
  if (auto st = out->commit(); !st) return st.error();
  return stats;
}

}  // namespace gpuwhy::exporter
