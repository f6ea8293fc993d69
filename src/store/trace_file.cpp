// SPDX-License-Identifier: Apache-2.0
// TraceFile: opens a trace read-only, for explain/query, often as a non-root user on a copy.
// SQLite is opened read-only, then locked down (defensive mode, no extensions, query_only, an
// allow-list authorizer) so that SQL typed by a user, or views stored in a file someone sent,
// cannot change the file or reach outside it.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include "core/clock.hpp"
#include "store/chunked_vtab.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"
#include "store/wal_check.hpp"
#include "store/wal_owner.hpp"
#include "store/writer_lock.hpp"

namespace gpuwhy::store {
namespace {

namespace fs = std::filesystem;

bool path_exists(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0;
}

bool iequals(const char* a, const char* b) { return a && b && sqlite3_stricmp(a, b) == 0; }

bool in(const char* name, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (iequals(name, n)) return true;
  return false;
}

// Pragmas that only report, even when given an argument (a table or index name, a limit).
bool pragma_reads_with_arg(const char* name) {
  return in(name,
            {"table_info", "table_xinfo", "table_list", "index_info", "index_list", "index_xinfo",
             "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check"});
}

// Pragmas that only report when given no value (with one, most of them write or reconfigure).
bool pragma_reads_without_arg(const char* name) {
  return in(name,
            {"user_version", "schema_version", "application_id", "page_size", "page_count",
             "freelist_count", "journal_mode", "encoding", "data_version", "auto_vacuum",
             "max_page_count", "query_only", "foreign_keys", "database_list", "collation_list",
             "function_list", "module_list", "pragma_list", "compile_options"});
}

// An allow-list: what a query needs is permitted, everything else (INSERT/UPDATE/DELETE,
// CREATE/DROP/ALTER, ATTACH/DETACH, ANALYZE, REINDEX, virtual tables, actions added by future
// SQLite versions) is refused at prepare time with "not authorized".
int authorize(void*, int action, const char* a1, const char* a2, const char*, const char*) {
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_FUNCTION:
      // a2 is the function name. readfile/writefile/edit are sqlite3-shell functions, refused
      // in case a build ever registers them; fts3_tokenizer can be abused to call pointers.
      return in(a2, {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
                 ? SQLITE_DENY
                 : SQLITE_OK;
    case SQLITE_PRAGMA:
      if (pragma_reads_with_arg(a1)) return SQLITE_OK;
      return a2 == nullptr && pragma_reads_without_arg(a1) ? SQLITE_OK : SQLITE_DENY;
    case SQLITE_UPDATE:
      // SQLite reports an UPDATE of sqlite_schema's columns while it sets up a pragma
      // table-valued function (pragma_table_info(...)) for the first time. IGNORE leaves those
      // columns untouched; a user's UPDATE of sqlite_schema still fails (not read-only, and the
      // connection is read-only and defensive). Every other UPDATE is refused.
      return in(a1, {"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"})
                 ? SQLITE_IGNORE
                 : SQLITE_DENY;
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
      // A read transaction gives a consistent snapshot of a live trace across several queries.
      // The authorizer cannot tell BEGIN from BEGIN IMMEDIATE (both arrive as "BEGIN"); a write
      // transaction fails on the read-only, query_only connection and run_query() refuses any
      // statement that is not read-only.
      return SQLITE_OK;
    default:
      return SQLITE_DENY;
  }
}

// Opens and reads what open() needs to classify the file. Returns SQLite's result code.
struct Probe {
  int rc = SQLITE_OK;
  std::string message;
  int user_version = 0;
  int tables = 0;
  bool has_session = false;
};

Probe open_and_probe(const std::string& uri, sqlite3** db) {
  Probe p;
  p.rc = sqlite3_open_v2(uri.c_str(), db,
                         SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  if (p.rc != SQLITE_OK) {
    p.message = *db ? sqlite3_errmsg(*db) : "out of memory";
    return p;
  }
  sqlite3_extended_result_codes(*db, 1);
  // A live writer may hold the WAL briefly (checkpoint); wait rather than fail.
  sqlite3_busy_timeout(*db, 2000);
  sqlite3_stmt* s = nullptr;
  p.rc = sqlite3_prepare_v2(*db,
                            "SELECT (SELECT user_version FROM pragma_user_version), "
                            "(SELECT count(*) FROM sqlite_schema WHERE type = 'table'), "
                            "(SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND "
                            "name = 'session')",
                            -1, &s, nullptr);
  if (p.rc == SQLITE_OK) {
    p.rc = sqlite3_step(s);
    if (p.rc == SQLITE_ROW) {
      p.user_version = sqlite3_column_int(s, 0);
      p.tables = sqlite3_column_int(s, 1);
      p.has_session = sqlite3_column_int(s, 2) > 0;
      p.rc = SQLITE_OK;
    }
  }
  if (p.rc != SQLITE_OK) p.message = sqlite3_errmsg(*db);
  sqlite3_finalize(s);
  return p;
}

// Private copies live until the reader ends, on every path out: the destructor, or a signal that
// ends the process (Ctrl-C while a large copy is read, SIGPIPE from `| head`): core/cleanup.hpp.
std::vector<cleanup::Guard> guard_copy(const std::string& dir, const std::string& file) {
  std::vector<cleanup::Guard> g;
  for (const char* sfx : {"", "-wal", "-shm"}) g.emplace_back(file + sfx);
  g.emplace_back(dir, true);
  return g;
}

// SQLite must create "-shm" next to a WAL-mode file whose -wal holds data; in a directory this
// user cannot write (a copy in a read-only share) it cannot. Read a private copy instead.
Result<std::string> private_copy(const std::string& path, std::vector<cleanup::Guard>& guards) {
  std::string tmpl = (fs::temp_directory_path() / "gpuwhy-trace-XXXXXX").string();
  const std::string name = fs::path(path).filename().string();
  {
    // Registered before the copy starts (a large copy is where Ctrl-C lands), and a signal
    // between mkdtemp and the registration held until both are done.
    const cleanup::HoldSignals hold;
    if (!mkdtemp(tmpl.data())) return errno_error("cannot create a temporary directory", errno);
    guards = guard_copy(tmpl, tmpl + "/" + name);
  }
  const std::string dst = tmpl + "/" + name;
  std::error_code ec;
  for (const char* sfx : {"", "-wal"}) {
    fs::copy_file(path + sfx, dst + sfx, ec);
    if (ec) {
      fs::remove_all(tmpl, ec);
      return Error{"cannot copy " + path + sfx + " to a temporary directory: " + ec.message(),
                   "copy the trace and its -wal file to a writable directory"};
    }
  }
  return tmpl;
}

}  // namespace

TraceFile::~TraceFile() {
  sqlite3_close_v2(db_);
  if (!temp_dir_.empty()) {
    std::error_code ec;
    fs::remove_all(temp_dir_, ec);
  }
}

namespace {

int progress(void* arg) {
  const int64_t deadline = *static_cast<const int64_t*>(arg);
  return deadline != 0 && std::chrono::steady_clock::now().time_since_epoch().count() > deadline;
}

}  // namespace

void TraceFile::set_limits(double timeout_s, int64_t heap_bytes) {
  deadline_ns_ = 0;
  if (timeout_s > 0)
    deadline_ns_ = std::chrono::steady_clock::now().time_since_epoch().count() +
                   static_cast<int64_t>(timeout_s * 1e9);
  // Every 10k virtual machine steps: ~a few hundred microseconds of work.
  sqlite3_progress_handler(db_, deadline_ns_ ? 10000 : 0, deadline_ns_ ? progress : nullptr,
                           &deadline_ns_);
  if (heap_bytes > 0) sqlite3_hard_heap_limit64(heap_bytes);
}

Result<std::unique_ptr<TraceFile>> TraceFile::open(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return Error{"no trace file at " + path, "record one with 'sudo gpuwhy trace' or pass --db"};
    return errno_error("cannot read " + path, errno, "check its permissions");
  }
  if (S_ISDIR(st.st_mode))
    return Error{path + " is a directory, not a trace file", "pass the trace file with --db"};
  // A FIFO or device would block or stream forever under SQLite: only regular files are traces.
  if (!S_ISREG(st.st_mode))
    return Error{path + " is not a regular file (a FIFO, socket or device), not a trace file",
                 "pass the trace file with --db"};
  if (struct stat w{}; stat((path + "-wal").c_str(), &w) == 0 && !S_ISREG(w.st_mode))
    return Error{path + "-wal is not a regular file (a FIFO, socket or device)",
                 "remove it, or copy the trace without it"};
  if (access(path.c_str(), R_OK) != 0)
    return errno_error("cannot read " + path, errno, "check its permissions");

  std::unique_ptr<TraceFile> f(new TraceFile());
  f->path_ = path;
  f->writer_pid_ = WriterLock::holder(path);
  f->live_ = f->writer_pid_ != 0;
  // No -wal and no writer: everything is in the database file. immutable=1 then reads it with
  // no locking and without creating -wal/-shm next to it (a copy in a read-only directory works,
  // and reading never leaves files behind). With a -wal, SQLite must merge it in: mode=ro.
  const bool has_wal = path_exists(path + "-wal");
  const bool immutable = !has_wal && !f->live_;
  if (has_wal && !f->live_) {
    const WalCheck wal = check_wal(path + "-wal");
    if (wal.header_damaged)
      f->wal_warning_ = path +
                        "-wal is damaged (its header fails its checksum): SQLite ignores "
                        "all of it, so every batch not yet copied into " +
                        path + " is missing";
    else if (wal.ignored_frames)
      f->wal_warning_ = path + "-wal is damaged after frame " + std::to_string(wal.valid_frames) +
                        ": SQLite ignores the " + std::to_string(wal.ignored_frames) +
                        " frames after it, so the batches committed there are missing unless "
                        "they were already copied into " +
                        path;
  }
  // A -wal from another trace would be read as this one's (wal_owner.hpp).
  std::optional<TraceIdentity> alone;
  if (has_wal && !f->live_) {
    if (Status st = check_wal_page_size(path); !st) return st.error();
    alone = identity_without_wal(path);
  }
  Probe p = open_and_probe(file_uri(path, immutable ? "mode=ro&immutable=1" : "mode=ro"), &f->db_);
  const int primary = p.rc & 0xff;
  if (has_wal && (primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY)) {
    sqlite3_close_v2(f->db_);
    f->db_ = nullptr;
    auto dir = private_copy(path, f->copy_guards_);
    if (!dir) return dir.error();
    f->temp_dir_ = dir.value();
    const std::string copy = f->temp_dir_ + "/" + fs::path(path).filename().string();
    p = open_and_probe(file_uri(copy, "mode=ro"), &f->db_);
  }

  const std::string not_trace = path + " is not a gpuwhy trace (not a SQLite database, or corrupt)";
  switch (p.rc & 0xff) {
    case SQLITE_OK:
      break;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
      // A writer killed while copying its log into the file leaves pages that only the log
      // completes: with the log damaged, the damage is the cause to name.
      if (!f->wal_warning_.empty())
        return Error{f->wal_warning_ + "; without those frames the file reads as corrupt (" +
                     p.message + ")"};
      return Error{not_trace + ": " + p.message};
    case SQLITE_CANTOPEN:
      return Error{"cannot open " + path + ": " + p.message, "check the file and its directory"};
    default:
      return Error{"cannot read " + path + ": " + p.message};
  }
  if (st.st_size == 0 && p.tables == 0)
    return Error{
        not_trace + ": the file is empty",
        has_wal ? "" : "if it was copied from a running or killed trace, copy its -wal too"};
  if (p.user_version > kSchemaVersion)
    return Error{path + " was written by a newer gpuwhy (schema " + std::to_string(p.user_version) +
                     ", this build reads up to " + std::to_string(kSchemaVersion) + ")",
                 "upgrade gpuwhy"};
  if (p.user_version == 0 || !p.has_session) {
    // A damaged log can hide the schema itself: say that rather than "not a trace".
    if (!f->wal_warning_.empty()) return Error{f->wal_warning_ + ", the schema included"};
    return Error{path + " is a SQLite file but not a gpuwhy trace",
                 p.tables == 0 && !has_wal
                     ? "if it was copied from a running or killed trace, copy its -wal file too"
                     : ""};
  }
  // Schema 1 kept events in plain tables; this build reads only the chunked ones.
  if (p.user_version < kSchemaVersion)
    return Error{path + " was written by an older gpuwhy (schema " +
                     std::to_string(p.user_version) + "); this build reads schema " +
                     std::to_string(kSchemaVersion),
                 "re-record it, or analyse it with the gpuwhy version that recorded it"};
  f->schema_version_ = p.user_version;

  sqlite3* db = f->db_;
  {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT status, host, kernel, agent_version, command_line, "
                                "start_ns, end_ns, last_commit_ns, last_event_ns, batches "
                                "FROM session WHERE id = 1",
                                -1, &s, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
      const std::string msg = rc == SQLITE_DONE ? "no session row" : sqlite3_errmsg(db);
      sqlite3_finalize(s);
      return Error{path + " is a SQLite file but not a gpuwhy trace (" + msg + ")"};
    }
    auto text = [&](int i) {
      const auto* t = sqlite3_column_text(s, i);
      return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
    };
    f->status_ = text(0);
    SessionState& ss = f->session_;
    ss.host = text(1);
    ss.kernel = text(2);
    ss.agent_version = text(3);
    ss.command_line = text(4);
    ss.start_ns = sqlite3_column_int64(s, 5);
    ss.end_ns = sqlite3_column_int64(s, 6);
    ss.last_commit_ns = sqlite3_column_int64(s, 7);
    ss.last_event_ns = sqlite3_column_int64(s, 8);
    ss.batches = sqlite3_column_int64(s, 9);
    sqlite3_finalize(s);
  }
  if (Status st = check_wal_owner(path, alone, trace_identity(db)); !st) return st.error();
  if (f->status_ == "stopped") {  // why: the cause the writer stored in losses
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db,
                           "SELECT cause FROM losses WHERE source = 'store' AND cause IN "
                           "('disk_full', 'io_error', 'file_replaced', 'interrupted') LIMIT 1",
                           -1, &s, nullptr) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
      f->stop_cause_ = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
  }

  // Lock down before any user SQL: no extension loading, no writable_schema tricks, no file
  // changes even through a path the authorizer might miss.
  int ignored = 0;
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, &ignored);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, &ignored);
  // An ad-hoc GROUP BY or ORDER BY over millions of calls is mostly SQLite's sorter, which can
  // merge with worker threads (2.2 -> 1.7 s for a GROUP BY over 8 M calls on 2 cores).
  const unsigned cpus = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  if (auto st = exec(db, "PRAGMA threads=" + std::to_string(cpus), "opening " + path); !st)
    return st.error();
  // The event tables (api_calls, offcpu, ...) exist only as TEMP virtual tables over their
  // chunks; the views read them. Their chunk index is built with the schema, so an unfinished
  // trace needs no indexed copy of anything.
  if (auto st = attach_chunked_tables(db); !st) return st.error();
  if (auto st = install_views(db, /*temp=*/true); !st) return st.error();
  if (auto st = exec(db, "PRAGMA query_only=1", "opening " + path); !st) return st.error();
  sqlite3_set_authorizer(db, authorize, nullptr);
  return f;
}

std::string TraceFile::incomplete_warning() const {
  if (status_ == "complete") return {};
  const SessionState& s = session_;
  const int64_t upto = s.last_event_ns ? s.last_event_ns : s.last_commit_ns;
  std::string committed =
      s.batches == 0
          ? std::string("no event batch was committed")
          : std::to_string(s.batches) + (s.batches == 1 ? " batch" : " batches") + " up to " +
                format_utc(upto) + (s.batches == 1 ? " was committed" : " were committed");
  if (live_) {
    std::string who = writer_pid_ > 0 ? " (pid " + std::to_string(writer_pid_) + ")" : "";
    return path_ + " is still being recorded by gpuwhy trace" + who + "; so far " + committed;
  }
  if (status_ == "stopped") return path_ + " is incomplete: " + stop_reason() + "; " + committed;
  return path_ +
         " is incomplete: the agent was killed (the rows it still held, up to about a "
         "second per thread, are missing); " +
         committed;
}

std::string TraceFile::stop_reason() const {
  if (status_ != "stopped") return {};
  if (stop_cause_ == "disk_full") return "recording stopped early because the disk was full";
  if (stop_cause_ == "io_error") return "recording stopped early on a write error";
  if (stop_cause_ == "file_replaced")
    return "recording stopped early because the file was removed or replaced";
  if (stop_cause_ == "interrupted")
    return "recording was interrupted twice; events in flight were dropped";
  return "recording stopped early";
}

}  // namespace gpuwhy::store
