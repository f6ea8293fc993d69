// SPDX-License-Identifier: Apache-2.0
// What an export copies out of a trace: the rows of a time window and of some processes, table by
// table. Every format (plain SQLite, Nsight-shaped SQLite, CSV/JSONL, Perfetto) reads the trace
// through this one description, so --since/--from/--to/--pid mean the same thing in all of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/window.hpp"
#include "core/result.hpp"

namespace gpuwhy::store {
class TraceFile;
}

namespace gpuwhy::exporter {

struct Scope {
  analysis::TimeWindow window;  // the trace's span, and the window asked for
  bool whole = true;            // no --since/--from/--to: every row, whatever its time
  std::vector<uint32_t> pids;   // empty: every process
  int64_t start_ns() const { return window.trace_start_ns; }

  // " WHERE ..." (or "") keeping the rows of a table with these columns in scope: events by
  // their start (ts in [start, end)) and by pid.
  std::string where(bool has_ts, bool has_pid) const;
};

// Resolves the flags against the trace's span as explain does (analysis/window.hpp); a --pid that
// made no GPU call and has no process row is refused, naming the processes there are.
Result<Scope> resolve_scope(const store::TraceFile& file, const analysis::WindowRequest& req,
                            const std::vector<uint32_t>& pids);

// How a table of the trace is copied.
enum class TableKind : uint8_t {
  Whole,   // lookups and bookkeeping (apis, strings, session, losses, stack_frames, ...)
  ByPid,   // processes, threads: the processes in scope, whatever the window
  Events,  // rows with ts and pid: the window and the processes
  Rollup,  // api_calls_per_second, offcpu_per_second: recomputed from the rows exported
};

struct TableInfo {
  std::string name;
  TableKind kind = TableKind::Whole;
  bool chunked = false;              // an event table stored as chunks (rowid kept as row id)
  std::vector<std::string> columns;  // as a SELECT lists them (label columns included)
  size_t labels = 0;                 // the last `labels` columns are derived (api_calls' name...)
  std::string create_sql;            // the file's own CREATE TABLE; empty for chunked tables
};

// The logical tables of the file in a stable order (schema order, chunked tables presented as
// their logical tables, the rollups last): what the plain export writes.
Result<std::vector<TableInfo>> list_tables(const store::TraceFile& file);

// The SELECT giving a table's rows in scope (a chunked table's rowid first, as row_id). For a
// rollup: its definition (sql/views/<name>.sql) over the event rows in scope.
Result<std::string> select_sql(const TableInfo& t, const Scope& scope, bool with_labels = true);

// The SELECT of sql/views/<name>.sql (what follows "CREATE VIEW name AS").
Result<std::string> view_body(const std::string& name);

}  // namespace gpuwhy::exporter
