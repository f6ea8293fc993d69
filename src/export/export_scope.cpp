// SPDX-License-Identifier: Apache-2.0
#include "export/export_scope.hpp"

#include <algorithm>

#include "analysis/loader.hpp"
#include "store/chunked_tables.hpp"
#include "store/embedded_sql.hpp"
#include "store/rollups.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::exporter {
namespace {

bool has(const std::vector<std::string>& cols, std::string_view c) {
  return std::find(cols.begin(), cols.end(), c) != cols.end();
}

bool is_rollup(std::string_view name) {
  for (std::string_view r : store::rollup_tables())
    if (r == name) return true;
  return false;
}

Result<std::vector<std::string>> plain_columns(sqlite3* db, const std::string& table) {
  auto s = store::Stmt::prepare(db, "SELECT name FROM pragma_table_info(?)", "reading " + table);
  if (!s) return s.error();
  s->text(1, table);
  std::vector<std::string> cols;
  while (sqlite3_step(s->get()) == SQLITE_ROW)
    cols.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s->get(), 0)));
  return cols;
}

std::string pid_list(const std::vector<uint32_t>& pids) {
  std::string out;
  for (uint32_t p : pids) out += (out.empty() ? "" : ",") + std::to_string(p);
  return out;
}

}  // namespace

std::string Scope::where(bool has_ts, bool has_pid) const {
  std::string w;
  auto add = [&](const std::string& c) { w += (w.empty() ? " WHERE " : " AND ") + c; };
  if (has_ts && !whole)
    add("ts >= " + std::to_string(window.start_ns) + " AND ts < " + std::to_string(window.end_ns));
  if (has_pid && !pids.empty()) add("pid IN (" + pid_list(pids) + ")");
  return w;
}

Result<Scope> resolve_scope(const store::TraceFile& file, const analysis::WindowRequest& req,
                            const std::vector<uint32_t>& pids) {
  auto bounds = analysis::trace_bounds(file.db());
  if (!bounds) return bounds.error();
  auto window = analysis::resolve_window(req, bounds->trace_start_ns, bounds->trace_end_ns,
                                         bounds->end_is_last_event);
  if (!window) return window.error();
  Scope s;
  s.window = window.value();
  s.whole = !req.since_ns && !req.from && !req.to;
  s.pids = pids;
  for (uint32_t pid : pids) {
    auto q = store::run_query(
        file, "SELECT (SELECT count(*) FROM processes WHERE pid = " + std::to_string(pid) +
                  ") + (SELECT count(*) FROM " +
                  "api_calls_chunks WHERE pid = " + std::to_string(pid) + ")");
    if (!q) return q.error();
    if (q->rows.empty() || q->rows[0][0] == "0") {
      auto list = store::run_query(file,
                                   "SELECT group_concat(pid, ', ') FROM (SELECT DISTINCT "
                                   "pid FROM api_calls_chunks ORDER BY pid)");
      const std::string l = list && !list->rows.empty() ? list->rows[0][0] : "";
      return Error{"pid " + std::to_string(pid) + " is not in this trace",
                   l.empty() ? "the trace has no GPU API calls" : "GPU processes: " + l, 2};
    }
  }
  return s;
}

Result<std::vector<TableInfo>> list_tables(const store::TraceFile& file) {
  sqlite3* db = file.db();
  std::vector<TableInfo> out;
  auto s = store::Stmt::prepare(db,
                                "SELECT name, sql FROM main.sqlite_schema WHERE type = 'table' "
                                "AND name NOT LIKE 'sqlite_%' ORDER BY rowid",
                                "listing the trace's tables");
  if (!s) return s.error();
  std::vector<TableInfo> rollups;
  while (sqlite3_step(s->get()) == SQLITE_ROW) {
    TableInfo t;
    t.name = reinterpret_cast<const char*>(sqlite3_column_text(s->get(), 0));
    const auto* sql = sqlite3_column_text(s->get(), 1);
    t.create_sql = sql ? reinterpret_cast<const char*>(sql) : "";
    if (t.name.ends_with("_chunks")) {
      const store::ChunkedTable* c =
          store::find_chunked_table(std::string_view(t.name).substr(0, t.name.size() - 7));
      if (!c) continue;  // chunks of a table this build does not know: nothing to present
      TableInfo e;
      e.name = std::string(c->name);
      e.kind = TableKind::Events;
      e.chunked = true;
      for (std::string_view col : c->columns) e.columns.emplace_back(col);
      for (const store::ChunkedLabel& l : c->labels) e.columns.emplace_back(l.name);
      e.labels = c->labels.size();
      out.push_back(std::move(e));
      continue;
    }
    // A plain table that a chunked one of the same name shadows (reclaim, from schema 1).
    if (store::find_chunked_table(t.name)) continue;
    auto cols = plain_columns(db, t.name);
    if (!cols) return cols.error();
    t.columns = std::move(cols.value());
    if (is_rollup(t.name)) {
      t.kind = TableKind::Rollup;
      rollups.push_back(std::move(t));
      continue;
    }
    if (has(t.columns, "ts") && has(t.columns, "pid"))
      t.kind = TableKind::Events;
    else if (has(t.columns, "pid") && t.name != "libraries")
      t.kind = TableKind::ByPid;
    out.push_back(std::move(t));
  }
  // A file that predates the rollups has none stored: they are exported all the same.
  for (std::string_view r : store::rollup_tables()) {
    if (std::any_of(rollups.begin(), rollups.end(),
                    [&](const TableInfo& t) { return t.name == r; }))
      continue;
    auto q = store::run_query(file, "SELECT * FROM " + std::string(r) + " LIMIT 0");
    if (!q) return q.error();
    rollups.push_back({std::string(r), TableKind::Rollup, false, q->columns, 0, ""});
  }
  for (TableInfo& r : rollups) out.push_back(std::move(r));
  return out;
}

Result<std::string> view_body(const std::string& name) {
  const std::string file = name + ".sql";
  for (const EmbeddedSql& e : embedded_sql()) {
    if (e.name != file) continue;
    const std::string head = "CREATE VIEW " + name + " AS";
    const size_t at = e.text.find(head);
    if (at == std::string_view::npos) break;
    return std::string(e.text.substr(at + head.size()));
  }
  return Error{"internal: sql/views/" + file + " has no CREATE VIEW " + name};
}

Result<std::string> select_sql(const TableInfo& t, const Scope& scope, bool with_labels) {
  if (t.kind == TableKind::Rollup) {
    auto body = view_body(t.name);
    if (!body) return body.error();
    // The definition reads one event table ("FROM api_calls"): give it the rows in scope.
    std::string sql = body.value();
    const std::string source = t.name.substr(0, t.name.find("_per_second"));
    const std::string from = "FROM " + source + "\n";
    const size_t at = sql.find(from);
    if (at == std::string::npos)
      return Error{"internal: sql/views/" + t.name + ".sql does not read " + from};
    sql.replace(at, from.size(), "FROM (SELECT * FROM " + source + scope.where(true, true) + ")\n");
    while (!sql.empty() && (sql.back() == '\n' || sql.back() == ';' || sql.back() == ' '))
      sql.pop_back();
    return sql;
  }
  std::string cols = t.chunked ? "rowid AS row_id" : "";
  const size_t n = t.columns.size() - (with_labels ? 0 : t.labels);
  for (size_t i = 0; i < n; ++i) cols += (cols.empty() ? "" : ", ") + ("\"" + t.columns[i] + "\"");
  const bool ts = t.kind == TableKind::Events;
  const bool pid = t.kind == TableKind::Events || t.kind == TableKind::ByPid;
  return "SELECT " + cols + " FROM " + t.name + scope.where(ts, pid);
}

}  // namespace gpuwhy::exporter
