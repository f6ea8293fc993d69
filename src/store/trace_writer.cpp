// SPDX-License-Identifier: Apache-2.0
// TraceWriter: creates the trace file and appends batches to it. Ingest speed comes from one
// transaction per batch, the chunked event tables (one SQLite row per 4096 events of a thread,
// see chunk_codec.hpp), and WAL with synchronous=NORMAL: a commit appends to the WAL without
// fsync. A SIGKILLed agent leaves every committed chunk readable; what it loses is the rows still
// buffered in open chunks, at most kChunkFlushAgeNs of them (and a power loss the last commits).
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>

#include "core/clock.hpp"
#include "core/untrusted.hpp"
#include "gpuwhy/abi/events.h"
#include "store/checkpointer.hpp"
#include "store/embedded_sql.hpp"
#include "store/event_tables.hpp"
#include "store/lookup_tables.hpp"
#include "store/owned_files.hpp"
#include "store/retention.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"
#include "store/writer_lock.hpp"

namespace gpuwhy::store {
namespace {

// The trace file is made here (O_EXCL, never through a symlink, 0600, owned by the invoking
// user) rather than by SQLite (which follows links and uses 0644). SQLite gives the -wal, -shm
// and -journal it creates later the database file's mode and, as root, its owner.
Status create_trace_file(const std::string& path) {
  auto fd = create_private_file(path, "the trace file");
  if (!fd) return fd.error();
  close(*fd);
  return {};
}

std::string_view schema_sql() {
  for (const EmbeddedSql& f : embedded_sql())
    if (f.name == "schema.sql") return f.text;
  return {};
}

}  // namespace

struct TraceWriter::Impl {
  ~Impl() {
    checkpointer.reset();
    retention.reset();
    // Statements first: SQLite closes a connection only once they are finalized.
    tables.reset();
    strings.reset();
    for (Stmt* st : {&begin, &commit, &rollback, &session_commit, &lib_insert, &lib_id, &lib_probe,
                     &lib_counts, &proc_upsert, &cpu_limit_upsert, &thread_update, &thread_insert,
                     &thread_cpus, &loss_clear, &loss_insert, &count_clear, &count_insert})
      *st = Stmt();
    sqlite3_close_v2(db);
  }

  std::optional<WriterLock> lock;  // destroyed last: the file stays ours until it is closed
  sqlite3* db = nullptr;
  std::unique_ptr<Checkpointer> checkpointer;  // declared after db: stopped before db closes
  std::unique_ptr<Retention> retention;        // trace --keep / --max-size; null otherwise
  std::optional<EventTables> tables;
  std::optional<Interner> strings;
  Stmt begin, commit, rollback, session_commit;
  // Metadata statements, prepared on first use.
  Stmt lib_insert, lib_id, lib_probe, lib_counts, proc_upsert, cpu_limit_upsert, thread_update,
      thread_insert, thread_cpus;
  Stmt loss_clear, loss_insert, count_clear, count_insert;
  std::atomic<uint64_t> failed_events = 0;  // rows and events lost to failed transactions
  bool finished = false;
  int last_failure = SQLITE_OK;  // extended code of the last failed transaction
  dev_t dev = 0;                 // the file being written, to notice it removed or replaced
  ino_t ino = 0;
};

namespace {

// The reserve kept for stop_early: 4 MiB, else the most of 1 MiB or 256 KiB the disk has room for
// (a 'stopped' mark and its loss row take a few pages of the -wal).
Status keep_disk_reserve(WriterLock& lock, const std::string& path) {
  constexpr long kFull = 4l << 20;
  for (long bytes : {kFull, 1l << 20, 256l << 10}) {
    const int err = lock.reserve(bytes);
    if (err == 0) {
      if (bytes < kFull)
        spdlog::warn(
            "the disk holding {} has less than 4 MiB free: kept {} KiB in reserve (to mark the "
            "trace 'stopped' when the disk fills up); it will fill up soon",
            untrusted::shown(path), bytes >> 10);
      return {};
    }
    if (err != ENOSPC && err != EDQUOT) {
      spdlog::warn(
          "cannot keep space in reserve next to {} ({}): a full disk may leave the trace "
          "reading as killed",
          untrusted::shown(path), std::strerror(err));
      return {};
    }
  }
  return Error{"the disk holding " + untrusted::shown(path) +
                   " has less than 256 KiB free: too little to record a trace",
               "free some space, or write the trace elsewhere (--out)"};
}

}  // namespace

TraceWriter::TraceWriter(std::string path, std::unique_ptr<Impl> impl)
    : path_(std::move(path)), impl_(std::move(impl)) {}
TraceWriter::~TraceWriter() = default;

Result<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path,
                                                         const SessionInfo& s,
                                                         const RetentionOptions& retention) {
  if (auto st = check_trace_path(path); !st) return st.error();
  auto impl = std::make_unique<Impl>();
  auto lock = WriterLock::acquire(path);
  if (!lock) return lock.error();
  impl->lock.emplace(std::move(lock.value()));
  auto backup = keep_numbered_backup(path);
  if (!backup) return backup.error();
  if (!backup->empty()) spdlog::info("kept the previous trace as {}", *backup);
  if (auto st = create_trace_file(path); !st) return st.error();
  {
    struct stat st {};
    if (stat(path.c_str(), &st) == 0) impl->dev = st.st_dev, impl->ino = st.st_ino;
  }
  // Room to mark the file 'stopped' should the disk fill up (stop_early). Without it, a full
  // disk left the file reading as killed, its loss unrecorded: a disk with less than the full
  // reserve free gets a smaller one, said so; one without room for the smallest is refused.
  if (auto st = keep_disk_reserve(*impl->lock, path); !st) return st.error();

  if (sqlite3_open_v2(path.c_str(), &impl->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK)
    return Error{"cannot create the trace file " + path + ": " + sqlite3_errmsg(impl->db),
                 "check that the directory exists and is writable"};
  sqlite3* db = impl->db;
  sqlite3_extended_result_codes(db, 1);

  // page_size must precede the first write. WAL must be confirmed: on a filesystem without
  // shared memory support SQLite silently keeps the rollback journal.
  if (auto st =
          exec(db, "PRAGMA page_size=4096; PRAGMA synchronous=NORMAL;", "configuring " + path);
      !st)
    return st.error();
  {
    sqlite3_stmt* q = nullptr;
    std::string mode;
    if (sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &q, nullptr) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
      mode = reinterpret_cast<const char*>(sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    if (mode != "wal")
      return Error{"cannot use write-ahead logging for " + path + " (journal mode '" + mode + "')",
                   "write the trace to a local filesystem"};
  }

  // Schema, lookup tables, session row and user_version in ONE transaction: a file cut short here
  // has user_version 0 and is never taken for a trace.
  const std::string_view schema = schema_sql();
  if (schema.empty()) return Error{"internal: schema.sql is not embedded in this build"};
  if (auto st = exec(db, "BEGIN IMMEDIATE", "creating " + path); !st) return st.error();
  if (auto st = exec(db, schema, "creating the schema of " + path); !st) return st.error();
  if (auto st = fill_lookup_tables(db); !st) return st.error();
  if (retention.on())
    if (auto st = Retention::create_schema(db, retention, 4096); !st) return st.error();
  {
    auto ins = Stmt::prepare(
        db,
        "INSERT INTO session(id, status, host, kernel, agent_version, abi_version, command_line, "
        "pid_filter, start_ns, boot_id, mono_to_wall_ns, online_cpus) "
        "VALUES (1,'recording',?,?,?,?,?,?,?,?,?,?)",
        "preparing the session row");
    if (!ins) return ins.error();
    ins->text(1, s.host);
    ins->text(2, s.kernel);
    ins->text(3, s.agent_version);
    ins->i64(4, GW_ABI_VERSION);
    ins->text(5, s.command_line);
    ins->text_or_null(6, s.pid_filter);
    ins->i64(7, s.start_ns);
    ins->text_or_null(8, s.boot_id);
    ins->i64(9, s.mono_to_wall_ns);
    ins->opt(10, s.online_cpus > 0, s.online_cpus);
    if (ins->run() != SQLITE_DONE) return sqlite_error(db, "writing session");
  }
  if (auto st = exec(db, "PRAGMA user_version=" + std::to_string(kSchemaVersion) + "; COMMIT",
                     "creating " + path);
      !st)
    return st.error();
  // The session row in the file itself, not only in the log: readers compare the two to refuse
  // a -wal taken from another trace (wal_owner.hpp). TRUNCATE: the log then starts empty, with
  // no frames of an older generation left past its end.
  (void)exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", "checkpointing " + path);

  // Checkpoints move to a thread of their own once the file exists; if that thread cannot start,
  // SQLite's automatic checkpoints stay on.
  // The writer still checkpoints when the log passes 64 MiB: only a checkpoint that finds every
  // frame copied lets the next commit restart the log, so this bounds its size, and by then the
  // background thread has copied (and synced) nearly all of it.
  impl->checkpointer = Checkpointer::start(path);
  if (impl->checkpointer) (void)exec(db, "PRAGMA wal_autocheckpoint=16384", "configuring " + path);
  // A flight recorder's budget sets its own checkpoint cadence and log size (after the above).
  if (retention.on()) {
    auto r = Retention::start(db, path, retention);
    if (!r) return r.error();
    impl->retention = std::move(r.value());
  }

  auto tables = EventTables::prepare(db);
  if (!tables) return tables.error();
  impl->tables.emplace(std::move(tables.value()));
  impl->strings.emplace();
  if (auto st = impl->strings->prepare(db); !st) return st.error();
  const std::pair<Stmt*, const char*> stmts[] = {
      {&impl->begin, "BEGIN IMMEDIATE"},
      {&impl->commit, "COMMIT"},
      {&impl->rollback, "ROLLBACK"},
      {&impl->session_commit,
       "UPDATE session SET last_commit_ns = ?1, batches = batches + 1, "
       "last_event_ns = max(coalesce(last_event_ns, ?2), ?2) WHERE id = 1"},
  };
  for (const auto& [stmt, sql] : stmts) {
    auto p = Stmt::prepare(db, sql, "preparing the batch statements");
    if (!p) return p.error();
    *stmt = std::move(p.value());
  }
  return std::unique_ptr<TraceWriter>(new TraceWriter(path, std::move(impl)));
}

Status TraceWriter::write_batch(std::span<const Event> events) {
  Impl& m = *impl_;
  if (m.finished) return Error{"internal: write_batch after finish on " + path_};
  if (events.empty()) return {};
  int64_t last = 0;
  for (const Event& ev : events) {
    std::visit(
        [&](const auto& e) {
          int64_t end = e.ts;
          // Saturating: a garbled duration must not overflow (found by tests/fuzz/fuzz_export).
          if constexpr (requires { e.dur; })
            if (__builtin_add_overflow(e.ts, e.dur, &end)) end = e.dur < 0 ? INT64_MIN : INT64_MAX;
          last = std::max(last, end);
        },
        ev);
  }
  const int64_t now = wall_ns();
  if (m.retention) {
    // A reader holding the log past its share of the budget: this batch cannot be written
    // without passing it. Dropped and counted (losses store/over_budget), never written over.
    // An age-out that fails is rolled back whole; the batch is still written (the page cap
    // guards the budget: at worst it fails and is counted as store/write_error).
    if (Status st = m.retention->make_room(now); !st)
      spdlog::debug("ageing out {}: {}", path_, st.error().line());
    if (!m.retention->wal_has_room()) {
      m.retention->drop(events.size());
      return {};
    }
    m.retention->before_transaction();
  }
  Status st = transaction(
      [&]() -> Status {
        if (Status st = m.tables->write(events, *m.strings, now); !st) return st;
        if (Status st = m.tables->flush(now - kChunkFlushAgeNs); !st) return st;
        m.session_commit.i64(1, now);
        m.session_commit.i64(2, last);
        if (m.session_commit.run() != SQLITE_DONE) return sqlite_error(m.db, "writing session");
        return {};
      },
      events);
  if (st && m.retention) m.retention->after_commit();
  return st;
}

Status TraceWriter::flush_due() {
  Impl& m = *impl_;
  if (m.finished) return {};
  const int64_t now = wall_ns();
  if (m.retention) {
    // An idle trace ages out by time here.
    if (Status st = m.retention->make_room(now); !st)
      spdlog::debug("ageing out {}: {}", path_, st.error().line());
    if (!m.retention->wal_has_room()) return {};  // the open chunks wait in memory
  }
  return transaction([&] { return m.tables->flush(now - kChunkFlushAgeNs); }, {});
}

std::optional<RetentionTotals> TraceWriter::retention_totals() const {
  if (!impl_->retention) return std::nullopt;
  return impl_->retention->totals();
}

// Runs `body` in one transaction. When it fails, the events of `events` that went to row tables
// and every row of the chunks written in it are lost: they are counted, and the error returned.
template <class Fn>
Status TraceWriter::transaction(Fn body, std::span<const Event> events) {
  Impl& m = *impl_;
  if (m.begin.run() != SQLITE_DONE) {
    m.failed_events += events.size();
    return sqlite_error(m.db, "writing " + path_ + ": cannot begin a transaction");
  }
  Status st = body();
  if (st && m.commit.run() != SQLITE_DONE) st = sqlite_error(m.db, "committing a batch");
  if (st) {
    m.strings->commit();
    m.tables->mark_committed();
    return {};
  }
  const Error err{"writing " + path_ + ": " + st.error().what, st.error().hint};
  m.last_failure = sqlite3_extended_errcode(m.db);
  m.rollback.run();
  m.strings->rollback();
  m.strings->clear_failure();
  m.failed_events += m.tables->rolled_back_rows();
  for (const Event& ev : events)
    if (std::holds_alternative<TcpRetrans>(ev) || std::holds_alternative<ProcEvent>(ev) ||
        std::holds_alternative<TaskRename>(ev))
      ++m.failed_events;
  return err;
}

namespace {

// The cached statement in `slot`, prepared on first use; nullptr after an error (in `err`).
Stmt* cached(sqlite3* db, Stmt& slot, const char* sql, Error& err) {
  if (!slot) {
    auto p = Stmt::prepare(db, sql, "preparing a statement");
    if (!p) {
      err = p.error();
      return nullptr;
    }
    slot = std::move(p.value());
  }
  return &slot;
}

}  // namespace

Result<uint16_t> TraceWriter::add_library(const discover::LibraryFile& lib, int64_t first_seen_ns,
                                          uint32_t seen_in_pid) {
  Impl& m = *impl_;
  Error err;
  Stmt* ins = cached(m.db, m.lib_insert,
                     "INSERT OR IGNORE INTO libraries(family, path, soname, version, build_id, "
                     "dev, inode, first_seen_ns, seen_in_pid) VALUES (?,?,?,?,?,?,?,?,?)",
                     err);
  Stmt* sel = cached(m.db, m.lib_id, "SELECT id FROM libraries WHERE dev = ? AND inode = ?", err);
  if (!ins || !sel) return err;
  // The same file (dev, inode) seen through another path or process keeps its first row.
  ins->text(1, family_name(lib.family));
  ins->text(2, lib.path);
  ins->text_or_null(3, lib.soname);
  ins->text_or_null(4, lib.version);
  ins->text_or_null(5, lib.build_id);
  ins->u64(6, lib.dev);
  ins->u64(7, lib.inode);
  ins->i64(8, first_seen_ns);
  ins->opt(9, seen_in_pid != 0, seen_in_pid);
  if (ins->run() != SQLITE_DONE) return sqlite_error(m.db, "writing libraries");
  sel->u64(1, lib.dev);
  sel->u64(2, lib.inode);
  int64_t id = -1;
  if (sqlite3_step(sel->get()) == SQLITE_ROW) id = sqlite3_column_int64(sel->get(), 0);
  sqlite3_reset(sel->get());
  if (id < 0) return sqlite_error(m.db, "reading libraries");
  if (id > UINT16_MAX) return Error{"too many libraries in " + path_ + " (more than 65535)"};
  return static_cast<uint16_t>(id);
}

Status TraceWriter::add_lib_probe(uint16_t lib_id, uint16_t api_id, uint64_t offset,
                                  uint32_t skipped_bytes, const std::string& error) {
  Impl& m = *impl_;
  Error err;
  Stmt* s =
      cached(m.db, m.lib_probe,
             "INSERT OR REPLACE INTO lib_probes(lib_id, api_id, offset, skipped_bytes, error) "
             "VALUES (?,?,?,?,?)",
             err);
  if (!s) return err;
  s->i64(1, lib_id);
  s->i64(2, api_id);
  s->u64(3, offset);
  s->i64(4, skipped_bytes);
  s->text_or_null(5, error);
  return s->run() == SQLITE_DONE ? Status{} : sqlite_error(m.db, "writing lib_probes");
}

Status TraceWriter::add_startup_gap(uint32_t pid, std::string_view cause, std::string_view library,
                                    int64_t at_ns) {
  Impl& m = *impl_;
  auto s = Stmt::prepare(m.db, "INSERT INTO startup_gaps(pid, cause, library, at) VALUES (?,?,?,?)",
                         "startup_gaps");
  if (!s) return s.error();
  s->i64(1, pid);
  s->text(2, cause);
  s->text_or_null(3, library);
  s->i64(4, at_ns);
  return s->run() == SQLITE_DONE ? Status{} : sqlite_error(m.db, "writing startup_gaps");
}

Status TraceWriter::set_library_probe_counts(uint16_t lib_id, uint32_t attached, uint32_t failed) {
  Impl& m = *impl_;
  Error err;
  Stmt* s = cached(m.db, m.lib_counts,
                   "UPDATE libraries SET probes_attached = ?, probes_failed = ? WHERE id = ?", err);
  if (!s) return err;
  s->i64(1, attached);
  s->i64(2, failed);
  s->i64(3, lib_id);
  return s->run() == SQLITE_DONE ? Status{} : sqlite_error(m.db, "writing libraries");
}

Status TraceWriter::set_probe_family(std::string_view family, std::string_view state,
                                     std::string_view detail) {
  Impl& m = *impl_;
  auto s = Stmt::prepare(
      m.db, "INSERT OR REPLACE INTO probe_families(family, state, detail) VALUES (?,?,?)",
      "writing probe_families");
  if (!s) return s.error();
  s->text(1, family);
  s->text(2, state);
  s->text_or_null(3, detail);
  return s->run() == SQLITE_DONE ? Status{} : sqlite_error(m.db, "writing probe_families");
}

Status TraceWriter::write_gpu_activity(std::span<const GpuKernelName> names,
                                       std::span<const GpuActivityRow> rows) {
  Impl& m = *impl_;
  if (names.empty() && rows.empty()) return {};
  auto n = Stmt::prepare(m.db,
                         "INSERT OR REPLACE INTO gpu_kernel_names(id, pid, name, mangled) "
                         "VALUES (?,?,?,?)",
                         "writing gpu_kernel_names");
  if (!n) return n.error();
  auto s = Stmt::prepare(m.db,
                         "INSERT INTO gpu_activity(kind, pid, ts, dur, device, context, stream, "
                         "correlation, name_id, grid_x, grid_y, grid_z, block_x, block_y, block_z, "
                         "bytes, copy_kind, src_kind, dst_kind, detail) "
                         "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         "writing gpu_activity");
  if (!s) return s.error();
  return transaction(
      [&]() -> Status {
        for (const GpuKernelName& k : names) {
          n->i64(1, k.id);
          n->i64(2, k.pid);
          n->text(3, k.name);
          n->text(4, k.mangled);
          if (n->run() != SQLITE_DONE) return sqlite_error(m.db, "writing gpu_kernel_names");
        }
        for (const GpuActivityRow& r : rows) {
          s->text(1, r.kind);
          s->i64(2, r.pid);
          s->i64(3, r.ts);
          s->i64(4, r.dur);
          s->opt(5, r.device >= 0, r.device);
          s->opt(6, r.context >= 0, r.context);
          s->opt(7, r.stream >= 0, r.stream);
          s->opt(8, r.correlation >= 0, r.correlation);
          s->opt(9, r.name_id >= 0, r.name_id);
          for (int i = 0; i < 3; ++i) {
            s->opt(10 + i, r.has_dims, r.grid[i]);
            s->opt(13 + i, r.has_dims, r.block[i]);
          }
          s->opt(16, r.bytes >= 0, r.bytes);
          s->text_or_null(17, r.copy_kind);
          s->text_or_null(18, r.src_kind);
          s->text_or_null(19, r.dst_kind);
          s->text_or_null(20, r.detail);
          if (s->run() != SQLITE_DONE) return sqlite_error(m.db, "writing gpu_activity");
        }
        return Status{};
      },
      {});
}

Status TraceWriter::write_stack_frames(std::span<const StackFrameRow> frames) {
  Impl& m = *impl_;
  if (frames.empty()) return {};
  auto s =
      Stmt::prepare(m.db,
                    "INSERT OR REPLACE INTO stack_frames(stack_id, depth, addr, module, offset, "
                    "symbol, call_site) VALUES (?,?,?,?,?,?,?)",
                    "writing stack_frames");
  if (!s) return s.error();
  return transaction(
      [&]() -> Status {
        for (const StackFrameRow& f : frames) {
          s->i64(1, f.stack_id);
          s->i64(2, f.depth);
          s->i64(3, static_cast<int64_t>(f.addr));
          s->text_or_null(4, f.module);
          s->opt(5, f.offset.has_value(), f.offset.value_or(0));
          s->text_or_null(6, f.symbol);
          s->i64(7, f.call_site ? 1 : 0);
          if (s->run() != SQLITE_DONE) return sqlite_error(m.db, "writing stack_frames");
        }
        return {};
      },
      {});
}

Status TraceWriter::write_python_frames(std::span<const PythonFrameRow> frames) {
  Impl& m = *impl_;
  if (frames.empty()) return {};
  auto s = Stmt::prepare(m.db,
                         "INSERT OR REPLACE INTO python_frames(py_stack_id, depth, pid, file, "
                         "function, line, source, code_addr, instr) VALUES (?,?,?,?,?,?,?,?,?)",
                         "writing python_frames");
  if (!s) return s.error();
  return transaction(
      [&]() -> Status {
        for (const PythonFrameRow& f : frames) {
          s->i64(1, f.py_stack_id);
          s->i64(2, f.depth);
          s->i64(3, f.pid);
          s->text_or_null(4, f.file);
          s->text_or_null(5, f.function);
          s->opt(6, f.line >= 0, f.line);
          s->text_or_null(7, f.source);
          s->i64(8, static_cast<int64_t>(f.code_addr));
          s->i64(9, f.instr);
          if (s->run() != SQLITE_DONE) return sqlite_error(m.db, "writing python_frames");
        }
        return {};
      },
      {});
}

Status TraceWriter::add_python_process(const PythonProcessRow& p) {
  Impl& m = *impl_;
  auto s = Stmt::prepare(m.db,
                         "INSERT OR REPLACE INTO python_processes(pid, interpreter, version, "
                         "supported, detail, layout_ns, runtime_addr, runtime_size) "
                         "VALUES (?,?,?,?,?,?,?,?)",
                         "writing python_processes");
  if (!s) return s.error();
  s->i64(1, p.pid);
  s->text(2, p.interpreter);
  s->text_or_null(3, p.version);
  s->i64(4, p.supported ? 1 : 0);
  s->text_or_null(5, p.detail);
  if (p.layout_ns > 0) s->i64(6, p.layout_ns);
  if (p.runtime_size > 0) {
    s->i64(7, static_cast<int64_t>(p.runtime_addr));
    s->i64(8, static_cast<int64_t>(p.runtime_size));
  }
  return s->run() == SQLITE_DONE ? Status{} : sqlite_error(m.db, "writing python_processes");
}

Status TraceWriter::upsert_process(const discover::ProcessInfo& p, int64_t first_seen_ns) {
  Impl& m = *impl_;
  Error err;
  // (pid, start_ns) is the identity; what /proc says later (after an exec) refreshes the rest.
  Stmt* s = cached(
      m.db, m.proc_upsert,
      "INSERT INTO processes(pid, start_ns, ppid, comm, exe, cmdline, cgroup, first_seen_ns) "
      "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(pid, start_ns) DO UPDATE SET "
      "ppid = coalesce(excluded.ppid, ppid), comm = coalesce(excluded.comm, comm), "
      "exe = coalesce(excluded.exe, exe), cmdline = coalesce(excluded.cmdline, cmdline), "
      "cgroup = coalesce(excluded.cgroup, cgroup), "
      "first_seen_ns = min(first_seen_ns, excluded.first_seen_ns)",
      err);
  if (!s) return err;
  s->i64(1, p.pid);
  s->i64(2, p.start_ns);
  s->opt(3, p.ppid != 0 || p.pid == 1, p.ppid);
  s->text_or_null(4, p.comm);
  s->text_or_null(5, p.exe);
  s->text_or_null(6, p.cmdline);
  s->text_or_null(7, p.cgroup);
  s->i64(8, first_seen_ns);
  if (s->run() != SQLITE_DONE) return sqlite_error(m.db, "writing processes");
  if (!p.cpu_limit) return Status{};
  Stmt* l = cached(m.db, m.cpu_limit_upsert,
                   "INSERT OR REPLACE INTO cpu_limits(pid, cgroup, quota_us, period_us, version) "
                   "VALUES (?,?,?,?,?)",
                   err);
  if (!l) return err;
  l->i64(1, p.pid);
  l->text(2, p.cpu_limit->cgroup);
  l->i64(3, p.cpu_limit->quota_us);
  l->i64(4, p.cpu_limit->period_us);
  l->i64(5, p.cpu_limit->version);
  return l->run() == SQLITE_DONE ? Status{} : sqlite_error(m.db, "writing cpu_limits");
}

Status TraceWriter::upsert_thread(uint32_t pid, uint32_t tid, const std::string& comm,
                                  int64_t first_seen_ns) {
  Impl& m = *impl_;
  Error err;
  // A thread that is still alive keeps its row (and first_seen_ns); a tid reused after an exit
  // gets a new one.
  Stmt* upd = cached(m.db, m.thread_update,
                     "UPDATE threads SET comm = coalesce(?3, comm) WHERE rowid = (SELECT rowid "
                     "FROM threads WHERE tid = ?2 AND pid = ?1 AND exit_ns IS NULL "
                     "ORDER BY first_seen_ns DESC LIMIT 1)",
                     err);
  Stmt* ins = cached(m.db, m.thread_insert,
                     "INSERT OR IGNORE INTO threads(pid, tid, comm, first_seen_ns) "
                     "VALUES (?,?,?,?)",
                     err);
  if (!upd || !ins) return err;
  upd->i64(1, pid);
  upd->i64(2, tid);
  upd->text_or_null(3, comm);
  if (upd->run() != SQLITE_DONE) return sqlite_error(m.db, "writing threads");
  if (sqlite3_changes(m.db) > 0) return {};
  ins->i64(1, pid);
  ins->i64(2, tid);
  ins->text_or_null(3, comm);
  ins->i64(4, first_seen_ns);
  return ins->run() == SQLITE_DONE ? Status{} : sqlite_error(m.db, "writing threads");
}

Status TraceWriter::set_thread_cpus(uint32_t pid, uint32_t tid, uint32_t count,
                                    const std::string& list) {
  if (count == 0) return {};
  Impl& m = *impl_;
  Error err;
  Stmt* upd = cached(m.db, m.thread_cpus,
                     "UPDATE threads SET cpus_allowed = ?3, cpus_allowed_list = ?4 "
                     "WHERE rowid = (SELECT rowid FROM threads "
                     "WHERE tid = ?2 AND pid = ?1 AND exit_ns IS NULL "
                     "ORDER BY first_seen_ns DESC LIMIT 1)",
                     err);
  if (!upd) return err;
  upd->i64(1, pid);
  upd->i64(2, tid);
  upd->i64(3, count);
  upd->text_or_null(4, list);
  return upd->run() == SQLITE_DONE ? Status{} : sqlite_error(m.db, "writing threads");
}

Status TraceWriter::set_counts(std::span<const LossCount> losses,
                               std::span<const std::pair<std::string, uint64_t>> event_counts) {
  Impl& m = *impl_;
  Error err;
  Stmt* lclear = cached(m.db, m.loss_clear, "DELETE FROM losses", err);
  Stmt* lins = cached(m.db, m.loss_insert,
                      "INSERT INTO losses(source, cause, count) VALUES (?,?,?) "
                      "ON CONFLICT(source, cause) DO UPDATE SET count = count + excluded.count",
                      err);
  Stmt* cclear = cached(m.db, m.count_clear, "DELETE FROM event_counts", err);
  Stmt* cins = cached(m.db, m.count_insert,
                      "INSERT OR REPLACE INTO event_counts(source, count) VALUES (?,?)", err);
  if (!lclear || !lins || !cclear || !cins) return err;
  if (m.begin.run() != SQLITE_DONE) return sqlite_error(m.db, "writing losses");
  auto put_loss = [&](std::string_view source, std::string_view cause, uint64_t n) {
    lins->text(1, source);
    lins->text(2, cause);
    lins->u64(3, n);
    return lins->run() == SQLITE_DONE;
  };
  bool ok = lclear->run() == SQLITE_DONE && cclear->run() == SQLITE_DONE;
  // Events of batches that never committed. The caller may count them too (the same events):
  // keep the larger figure rather than adding them twice.
  bool store_counted = false;
  for (const LossCount& l : losses) {
    uint64_t n = l.count;
    if (l.source == "store" && l.cause == "write_error") {
      n = std::max(n, m.failed_events.load());
      store_counted = true;
    }
    ok = ok && put_loss(l.source, l.cause, n);
  }
  if (!store_counted && m.failed_events > 0)
    ok = ok && put_loss("store", "write_error", m.failed_events.load());
  if (m.retention && m.retention->totals().dropped > 0)
    ok = ok && put_loss("store", "over_budget", m.retention->totals().dropped);
  for (const auto& [source, n] : event_counts) {
    if (!ok) break;
    cins->text(1, source);
    cins->u64(2, n);
    ok = cins->run() == SQLITE_DONE;
  }
  if (ok && m.commit.run() == SQLITE_DONE) return {};
  Error e = sqlite_error(m.db, "writing losses and event_counts");
  m.rollback.run();
  return e;
}

std::string TraceWriter::storage_failure() const {
  const Impl& m = *impl_;
  struct stat st {};
  if (stat(path_.c_str(), &st) != 0 || st.st_dev != m.dev || st.st_ino != m.ino)
    return "file_replaced";
  switch (m.last_failure & 0xff) {
    case SQLITE_FULL:
      // At the flight recorder's page cap, not out of disk: the next batch makes room first.
      if (m.retention && m.retention->at_cap()) return {};
      return "disk_full";
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:  // SQLITE_READONLY_DBMOVED: the file was moved under SQLite
    case SQLITE_CORRUPT:
      return "io_error";
    default:
      return {};
  }
}

Status TraceWriter::stop_early(int64_t end_ns, std::string_view cause, uint64_t lost) {
  Impl& m = *impl_;
  if (m.finished) return {};
  m.checkpointer.reset();
  m.lock->release_reserve();
  sqlite3* db = m.db;
  auto mark = [&]() -> Status {
    auto upd = Stmt::prepare(db, "UPDATE session SET status = 'stopped', end_ns = ? WHERE id = 1; ",
                             "stopping " + path_);
    if (!upd) return upd.error();
    upd->i64(1, end_ns);
    if (upd->run() != SQLITE_DONE) return sqlite_error(db, "writing session");
    auto loss = Stmt::prepare(db,
                              "INSERT INTO losses(source, cause, count) VALUES ('store', ?, ?) "
                              "ON CONFLICT(source, cause) DO UPDATE SET count = excluded.count",
                              "stopping " + path_);
    if (!loss) return loss.error();
    loss->text(1, cause);
    loss->u64(2, lost);
    if (loss->run() != SQLITE_DONE) return sqlite_error(db, "writing losses");
    return {};
  };
  // The open chunks and the mark together if they fit; else the mark alone (their rows are
  // counted as lost by the failed transaction).
  Status st = transaction(
      [&]() -> Status {
        if (Status f = m.tables->flush(INT64_MAX); !f) return f;
        return mark();
      },
      {});
  if (!st) st = transaction(mark, {});
  m.finished = true;
  return st;
}

uint64_t TraceWriter::lost_rows() const { return impl_->failed_events.load(); }

uint64_t TraceWriter::bytes_on_disk() const {
  uint64_t total = 0;
  for (const char* sfx : {"", "-wal"}) {
    struct stat st {};
    if (stat((path_ + sfx).c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_size);
  }
  return total;
}

Status TraceWriter::finish(int64_t end_ns) {
  Impl& m = *impl_;
  if (m.finished) return {};
  m.checkpointer.reset();  // the final checkpoint below runs alone
  sqlite3* db = m.db;
  // A flight recorder makes room for the last open chunks first.
  if (m.retention) (void)m.retention->make_room(wall_ns(), /*force=*/true);
  auto mark_complete = [&]() -> Status {
    auto upd = Stmt::prepare(db, "UPDATE session SET status = 'complete', end_ns = ? WHERE id = 1",
                             "finishing " + path_);
    if (!upd) return upd.error();
    upd->i64(1, end_ns);
    if (upd->run() != SQLITE_DONE) return sqlite_error(db, "writing session");
    return {};
  };
  // The last open chunks and the status commit together: a trace marked complete has every row.
  if (Status st = transaction(
          [&]() -> Status {
            if (Status f = m.tables->flush(INT64_MAX); !f) return f;
            return mark_complete();
          },
          {});
      !st) {
    // At a flight recorder's cap the last rows may not fit: they are counted (store/write_error)
    // and the file is still marked complete.
    if (!m.retention || !m.retention->at_cap() || !transaction(mark_complete, {})) return st;
  }
  m.finished = true;

  // Fold the WAL into the database and leave rollback-journal mode: the finished trace is one
  // self-contained file that can be copied. A reader that has the file open at this moment keeps
  // it in WAL mode (harmless once the checkpoint is done: the database file has everything), or
  // even holds back the checkpoint (then the -wal must travel with the file).
  sqlite3_busy_timeout(db, 2000);
  int busy = 1;
  sqlite3_stmt* q = nullptr;
  if (sqlite3_prepare_v2(db, "PRAGMA wal_checkpoint(TRUNCATE)", -1, &q, nullptr) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    busy = sqlite3_column_int(q, 0);
  sqlite3_finalize(q);
  if (busy) {
    spdlog::warn("{} is complete, but a reader kept part of it in {}-wal: copy both files", path_,
                 path_);
  } else if (auto mode = exec(db, "PRAGMA journal_mode=DELETE", "leaving WAL mode"); !mode) {
    spdlog::debug("{} stays in WAL mode while another process reads it: {}", path_,
                  mode.error().what);
  }
  return {};
}

}  // namespace gpuwhy::store
