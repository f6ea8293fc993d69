// SPDX-License-Identifier: Apache-2.0
// The trace file. TraceWriter is used by one thread (the batcher) during `trace`; TraceFile opens a
// finished or live trace read-only for explain/query/tests. Schema: sql/schema.sql, docs/schema.md.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/cleanup.hpp"
#include "core/result.hpp"
#include "discover/discover.hpp"
#include "model/events.hpp"
#include "store/retention_policy.hpp"

namespace gpuwhy::store {

// 2: chunked event tables (chunk_codec.hpp). The per-second rollup tables (rollups.hpp) came
// later within 2: readers present them over the events when a file has none (install_views).
inline constexpr int kSchemaVersion = 2;

// The probe_families row of an API category recorded at entry only (trace --entry-only):
// "returns:<category>", state "off": its calls have no return data.
inline constexpr std::string_view kEntryOnlyFamilyPrefix = "returns:";
inline std::string entry_only_family(std::string_view category) {
  return std::string(kEntryOnlyFamilyPrefix) + std::string(category);
}

struct SessionInfo {
  std::string host, kernel, agent_version, command_line;
  std::string pid_filter;  // empty: every process
  std::string boot_id;
  int64_t start_ns = 0;
  int64_t mono_to_wall_ns = 0;
  uint32_t online_cpus = 0;  // 0: unknown (NULL)
};

// One frame of a captured user stack (stack_frames).
struct StackFrameRow {
  int32_t stack_id = -1;
  uint32_t depth = 0;
  uint64_t addr = 0;
  std::string module;              // empty: NULL
  std::optional<uint64_t> offset;
  std::string symbol;              // empty: NULL
  bool call_site = false;          // the stack's first frame outside the runtimes
};

// One frame of a Python stack (python_frames); empty strings and line < 0 are NULL.
struct PythonFrameRow {
  int32_t py_stack_id = -1;
  uint32_t depth = 0;
  uint32_t pid = 0;
  std::string file, function;
  int32_t line = -1;
  std::string source;
  uint64_t code_addr = 0;
  int32_t instr = -1;
};

// A Python process found by discovery (python_processes).
struct PythonProcessRow {
  uint32_t pid = 0;
  std::string interpreter, version;
  bool supported = false;
  std::string detail;
  int64_t layout_ns = 0;  // when the probes got its layout (events' wall clock); 0: never (NULL)
  uint64_t runtime_addr = 0, runtime_size = 0;  // _PyRuntime in the process; 0: not found
};

// One row of gpu_activity (trace --gpu-activity): a kernel, copy, memset, synchronisation or
// CUPTI overhead as the device reported it. kind and the *_kind texts point at static strings;
// negative numbers and empty texts are NULL.
struct GpuActivityRow {
  std::string_view kind;  // kernel | memcpy | memset | sync | overhead
  uint32_t pid = 0;
  int64_t ts = 0, dur = 0;  // wall ns
  int64_t device = -1, context = -1, stream = -1, correlation = -1;
  int64_t name_id = -1;  // gpu_kernel_names.id
  bool has_dims = false;
  int32_t grid[3] = {}, block[3] = {};
  int64_t bytes = -1;
  std::string_view copy_kind, src_kind, dst_kind, detail;
};

// A kernel's name (gpu_kernel_names).
struct GpuKernelName {
  int64_t id = 0;
  uint32_t pid = 0;
  std::string name, mangled;
};

struct LossCount {
  std::string source;  // bpf | reader | store
  std::string cause;
  uint64_t count = 0;
};

class TraceWriter {
 public:
  // Creates a new trace file at `path`. An existing finished file is renamed to `path.old`; a file
  // another live `gpuwhy trace` is writing is refused (Error says which pid). With `retention`
  // on, it is a flight recorder's file: the oldest data goes by age and size (retention.hpp).
  static Result<std::unique_ptr<TraceWriter>> create(const std::string& path, const SessionInfo& s,
                                                     const RetentionOptions& retention = {});
  ~TraceWriter();

  // One transaction per call; prepared statements; interned task names. Rows of the chunked
  // tables join their thread's open chunk; full chunks, and partial ones older than
  // kChunkFlushAgeNs, are written in the same transaction.
  Status write_batch(std::span<const Event> events);
  // Writes the partial chunks older than kChunkFlushAgeNs when no batch comes to do it (an idle
  // trace): call it about once a second.
  Status flush_due();
  // Rows and events accepted but lost to transactions that failed (counted as store/write_error).
  uint64_t lost_rows() const;

  // Library attached (returns libraries.id) and per-API placement / failures.
  Result<uint16_t> add_library(const discover::LibraryFile& lib, int64_t first_seen_ns,
                               uint32_t seen_in_pid);
  Status add_lib_probe(uint16_t lib_id, uint16_t api_id, uint64_t offset, uint32_t skipped_bytes,
                       const std::string& error);
  Status set_library_probe_counts(uint16_t lib_id, uint32_t attached, uint32_t failed);
  // One probe_families row (family, state, detail); detail empty: NULL. An API category recorded
  // at entry only is the family entry_only_family(category), state "off".
  Status set_probe_family(std::string_view family, std::string_view state, std::string_view detail);
  Status upsert_process(const discover::ProcessInfo& p, int64_t first_seen_ns);
  Status upsert_thread(uint32_t pid, uint32_t tid, const std::string& comm, int64_t first_seen_ns);
  // The CPUs the thread's live row may run on (threads.cpus_allowed, cpus_allowed_list): count
  // 0 leaves them as they are; an empty list (not known for this count) is stored as NULL.
  Status set_thread_cpus(uint32_t pid, uint32_t tid, uint32_t count, const std::string& list);
  // A process whose GPU runtime `library` was probed only after the process had mapped it
  // (startup_gaps; cause: hold_timeout, not_held, found_late).
  Status add_startup_gap(uint32_t pid, std::string_view cause, std::string_view library,
                         int64_t at_ns);
  // The frames of resolved stacks, in one transaction (a stack written again is replaced).
  Status write_stack_frames(std::span<const StackFrameRow> frames);
  // The frames of named Python stacks, in one transaction.
  Status write_python_frames(std::span<const PythonFrameRow> frames);
  Status add_python_process(const PythonProcessRow& p);
  // GPU activity rows and the kernel names they use, in one transaction.
  Status write_gpu_activity(std::span<const GpuKernelName> names,
                            std::span<const GpuActivityRow> rows);

  // Replaces the stored loss and per-source counts (called periodically and at the end). The
  // store knows the events of batches that failed to commit: ("store", "write_error") is at least
  // that many, whether or not the caller passes it.
  Status set_counts(std::span<const LossCount> losses,
                    std::span<const std::pair<std::string, uint64_t>> event_counts);

  // Writes the open chunks, marks the session complete, checkpoints the WAL.
  Status finish(int64_t end_ns);

  // Why writing can no longer work, after a failed batch or a check: "" (it can), "disk_full"
  // (SQLITE_FULL), "io_error" (SQLITE_IOERR and the like), or "file_replaced" (the path no longer
  // names the file being written: removed, renamed or replaced). Recording should stop.
  std::string storage_failure() const;
  // Ends a trace that cannot go on (storage_failure() or a hurried stop): gives back the space
  // kept in reserve, writes what of the open chunks still fits and marks the session 'stopped'
  // with `cause` stored in losses as ("store", cause). Never checkpoints: a -wal stays beside it.
  Status stop_early(int64_t end_ns, std::string_view cause, uint64_t lost);

  const std::string& path() const { return path_; }
  uint64_t bytes_on_disk() const;
  // What the flight recorder aged out so far; nullopt for a trace without --keep/--max-size.
  std::optional<RetentionTotals> retention_totals() const;

 private:
  struct Impl;
  TraceWriter(std::string path, std::unique_ptr<Impl> impl);
  template <class Fn>
  Status transaction(Fn body, std::span<const Event> events);
  std::string path_;
  std::unique_ptr<Impl> impl_;
};

// The session row as open() read it.
struct SessionState {
  std::string host, kernel, agent_version, command_line;
  int64_t start_ns = 0;
  int64_t end_ns = 0;          // 0 while recording or when the agent was killed
  int64_t last_commit_ns = 0;  // 0 before the first batch
  int64_t last_event_ns = 0;
  int64_t batches = 0;
};

// Read-only access. open() gives one clear Error for: missing file, not SQLite / corrupt, not a
// gpuwhy trace, a schema newer than this build or older than 2 (one row per event). The chunked
// event tables are attached (chunked_vtab.hpp) and the shipped views (sql/views/*.sql) installed
// as TEMP views, then an authorizer refuses every write, ATTACH, PRAGMA write and extension load.
// Works on a copied file without root; a WAL-mode copy in a directory this user cannot write is
// read through a private temporary copy (see docs/schema.md "Reading a copied file").
class TraceFile {
 public:
  static Result<std::unique_ptr<TraceFile>> open(const std::string& path);
  ~TraceFile();

  sqlite3* db() const { return db_; }
  const std::string& path() const { return path_; }
  int schema_version() const { return schema_version_; }
  // 'complete', 'stopped' (recording ended early: disk full, file replaced, interrupted twice),
  // or 'recording' (still being written, or the agent was killed: see is_live()).
  const std::string& status() const { return status_; }
  bool is_live() const { return live_; }          // another process holds the writer lock now
  int writer_pid() const { return writer_pid_; }  // when live; -1 if it has not said
  const SessionState& session() const { return session_; }

  // Limits for the statements run on this file from now on: a statement running longer than
  // `timeout_s` (0: none) fails with "interrupted" (SQLITE_INTERRUPT), and SQLite's own memory
  // is capped at `heap_bytes` (0: none; process-wide), beyond which it fails with SQLITE_NOMEM.
  void set_limits(double timeout_s, int64_t heap_bytes);

  // One line for a trace that is not complete ("... is incomplete: the agent was killed; 12
  // batches up to 2025-01-02 03:04:05 UTC were committed"), empty for a complete one.
  std::string incomplete_warning() const;
  // One line when the file's -wal is damaged (wal_check.hpp): SQLite ignores the log from the
  // damaged frame on, committed batches included. Empty otherwise, or while a writer lives.
  const std::string& wal_warning() const { return wal_warning_; }
  // For status 'stopped': why recording ended early, as a phrase; empty otherwise.
  std::string stop_reason() const;

 private:
  TraceFile() = default;
  sqlite3* db_ = nullptr;
  int schema_version_ = 0;
  std::string status_;
  bool live_ = false;
  int writer_pid_ = 0;
  std::string path_;
  std::vector<cleanup::Guard> copy_guards_;  // the copy's files, removed on a fatal signal
  std::string temp_dir_;  // private copy of a WAL-mode file we could not read in place
  SessionState session_;
  std::string stop_cause_;
  std::string wal_warning_;  // status 'stopped': losses' store cause (disk_full, ...)
  int64_t deadline_ns_ = 0;  // steady clock; 0: no timeout
};

// ---- queries ---------------------------------------------------------------------------------

enum class ValueType : uint8_t { Null, Integer, Real, Text, Blob };

// A whole result in memory: NULL is an empty string with is_null set. REAL values are SQLite's
// text form (15 significant digits); BLOBs are written X'hex'.
struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::vector<bool>> is_null;
  std::vector<std::vector<ValueType>> types;
};

// Runs ONE read-only statement. Errors carry exit_code 2 and SQLite's message verbatim:
// "SQL error: no such table: foo".
Result<QueryResult> run_query(const TraceFile& file, const std::string& sql);

// The same, streaming: on_header once with the column names, then on_row for each row (values and
// types share the row's index). For results too large to hold.
using HeaderFn = std::function<void(const std::vector<std::string>& columns)>;
using RowFn = std::function<void(const std::vector<std::string>& values,
                                 const std::vector<ValueType>& types)>;
Status for_each_row(const TraceFile& file, const std::string& sql, const HeaderFn& on_header,
                    const RowFn& on_row);

// ---- shipped views ---------------------------------------------------------------------------

struct ViewInfo {
  std::string name;         // "v_calls"
  std::string description;  // the file's header comment, comment markers removed
  std::string_view sql;     // the file's text: "CREATE VIEW name AS ..."
};

// Every sql/views/*.sql embedded in this build (files named v_*.sql), sorted by name.
std::vector<ViewInfo> shipped_views();

// Creates every shipped view, as TEMP views (readers: this build's views shadow any stored in an
// older file) or in the database itself. The writer stores none: the views read the chunked
// event tables, which exist only on connections gpuwhy opened (attach_chunked_tables). With
// `temp`, the rollup tables a file predates are presented as TEMP views over the events first.
Status install_views(sqlite3* db, bool temp);

}  // namespace gpuwhy::store
