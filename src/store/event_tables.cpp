// SPDX-License-Identifier: Apache-2.0
#include "store/event_tables.hpp"

#include <array>

namespace gpuwhy::store {
namespace {

// ---- which api_calls columns an API fills ------------------------------------------------------
// ApiCallFields uses 0 / -1 for "not captured", but 0 is a real stream (the legacy default
// stream) and a real byte count. The catalogue knows which fields each API captures, so a column
// is NULL exactly when the API does not have it.
enum Has : uint16_t {
  kStream = 1 << 0,
  kBytes = 1 << 1,
  kOp = 1 << 2,
  kAddr = 1 << 3,
  kAddr2 = 1 << 4,
  kGrid = 1 << 5,  // blocks
  kPeer = 1 << 6,
  kNRanks = 1 << 7,
  kTpb = 1 << 8,   // threads per block
  kAll = 0x1ff,
};

// The columns a captured field feeds. Block dimensions only feed tpb (an API with a grid has
// them, given or defaulted to 1), so a block word left unread unknows tpb alone.
uint16_t field_columns(Field f) {
  switch (f) {
    case Field::Stream: return kStream;
    case Field::Bytes:
    case Field::Width:
    case Field::Height:
    case Field::Count:
    case Field::Dtype: return kBytes;
    case Field::CopyKind:
    case Field::RedOp: return kOp;
    case Field::Func:
    case Field::Dst:
    case Field::Ptr:
    case Field::Event:
    case Field::GraphExec:
    case Field::Comm:
    case Field::DeviceOrdinal:
      return kAddr;
    case Field::Src: return kAddr2;
    case Field::GridXY:
    case Field::GridZ:
    case Field::GridX:
    case Field::GridY:
    case Field::GridZBlockX: return kGrid | kTpb;
    case Field::BlockXY:
    case Field::BlockZ:
    case Field::BlockYZ:
    case Field::BlockX:
    case Field::BlockY: return kTpb;
    case Field::Root:
    case Field::Peer:
    case Field::Rank: return kPeer;
    case Field::NRanks: return kNRanks;
    default: return 0;
  }
}

struct ApiColumns {
  uint16_t has = kAll;     // columns the API fills
  uint16_t memory = 0;     // columns fed by a word read from user memory (stack, a struct)
  uint16_t at_return = 0;  // columns fed by the out-pointer, read at return
};

ApiColumns api_columns_of(const ApiInfo& a) {
  ApiColumns c{0, 0, 0};
  for (const ArgUse& u : a.args) {
    const uint16_t cols = field_columns(u.field);
    // Only a grid word makes the grid columns exist; block words alone do not.
    const bool block_only = cols == kTpb;
    if (!block_only) c.has |= cols;
    if (u.from.src == GW_ARG_STACK || u.from.src == GW_ARG_DEREF) c.memory |= cols;
  }
  if (a.fixed_dir) c.has |= kOp;
  if (a.out_reg >= 0) c.has |= c.at_return = kAddr;
  c.memory &= c.has;
  return c;
}

// Columns the row of `api` fills; `flags` (GW_FLAG_*) may say its in-memory words were not read,
// that it was recorded at entry (nothing from the return), or that it was batched (the kernel
// alone).
uint16_t api_has(uint16_t api, uint16_t flags) {
  static const auto table = [] {
    std::array<ApiColumns, GW_MAX_API> m{};  // an id this build does not know: keep every raw value
    for (const ApiInfo& a : api_catalog())
      if (a.id < m.size()) m[a.id] = api_columns_of(a);
    return m;
  }();
  if (api >= table.size()) return kAll;
  const ApiColumns& c = table[api];
  uint16_t has = c.has;
  if (flags & GW_FLAG_ARGS_SAMPLED_OUT) has &= ~c.memory;
  if (flags & GW_FLAG_NO_RETURN) has &= ~c.at_return;
  if (flags & GW_FLAG_COMPACT) has &= kAddr;  // a batched launch kept its kernel only
  return has;
}

// ---- per-table column mapping (base: bind index of the row's first column minus one) -----------

void fill_row(RowValues& r, const ApiCall& e, Interner&) {
  const uint16_t has = api_has(e.api, e.flags);
  const ApiCallFields& f = e.f;
  r.set(0, e.ts);
  const bool returned = !(e.flags & GW_FLAG_NO_RETURN);
  r.opt(1, returned, e.dur);
  r.set(2, e.pid);
  r.set(3, e.tid);
  r.set(4, e.api);
  r.set(5, e.lib);
  r.opt(6, returned, e.ret);
  r.opt(7, has & kStream, f.stream);
  r.opt(8, has & kBytes, f.bytes);
  r.opt(9, (has & kOp) && f.op >= 0, f.op);
  r.opt(10, has & kAddr, f.addr);
  r.opt(11, has & kAddr2, f.addr2);
  r.opt(12, has & kGrid, f.blocks);
  r.opt(13, has & kTpb, f.threads_per_block);
  r.opt(14, (has & kPeer) && f.peer >= 0, f.peer);
  r.opt(15, has & kNRanks, f.nranks);
  r.opt(16, e.stack_id >= 0, e.stack_id);
  r.set(17, e.flags);
  r.opt(18, e.py_stack_id >= 0, e.py_stack_id);
}

// The task on the other side of a switch, NULL when the kernel gave none.
void fill_task(RowValues& r, uint32_t c, uint32_t pid, uint32_t tid, const Comm& comm,
               Interner& strings) {
  const std::string_view name = comm_view(comm);
  const bool known = !name.empty() || pid != 0 || tid != 0;
  r.opt(c, known, pid);
  r.opt(c + 1, known, tid);
  const int64_t id = name.empty() ? 0 : strings.id(name);
  r.opt(c + 2, id > 0, id);
}

void fill_row(RowValues& r, const OffCpu& e, Interner& strings) {
  r.set(0, e.ts);
  r.set(1, e.dur);
  r.set(2, e.runq);
  r.set(3, e.pid);
  r.set(4, e.tid);
  r.set(5, e.cpu);
  r.set(6, e.preempted ? 1 : 0);
  r.set(7, e.prev_state);
  fill_task(r, 8, e.next_pid, e.next_tid, e.next_comm, strings);
  fill_task(r, 11, e.waker_pid, e.waker_tid, e.waker_comm, strings);
  fill_task(r, 14, e.holder_pid, e.holder_tid, e.holder_comm, strings);
  r.opt(17, e.syscall >= 0, e.syscall);
  // Where it waited for the CPU (ABI 5; NULL: it was not counted waiting, or an older agent).
  r.opt(18, e.wait_cpu >= 0, e.wait_cpu);
  r.opt(19, e.wait_cpu >= 0, e.migrations);
  // Held off by its cgroup's CPU quota (ABI 9): 1, else NULL (files before it read NULL too).
  r.opt(20, e.throttled, 1);
  // What it slept on (ABI 9): the syscall's first argument, NULL when it was in none.
  r.opt(21, e.syscall >= 0, static_cast<int64_t>(e.arg0));
}

void fill_row(RowValues& r, const SyscallEvent& e, Interner&) {
  r.set(0, e.ts);
  r.set(1, e.dur);
  r.set(2, e.pid);
  r.set(3, e.tid);
  r.set(4, e.nr);
  r.set(5, e.ret);
  r.set(6, static_cast<int64_t>(e.arg0));
  r.opt(7, e.driver, e.request);
}

void fill_row(RowValues& r, const BlockIo& e, Interner&) {
  r.set(0, e.ts);
  r.set(1, e.dur);
  r.set(2, e.pid);
  r.set(3, e.tid);
  r.set(4, e.dev);
  r.set(5, static_cast<int64_t>(e.sector));
  r.set(6, e.bytes);
  r.set(7, e.op);
  r.set(8, e.error);
}

void bind_row(Stmt& s, const TcpRetrans& e, Interner&) {
  // Retransmits are host-wide and often happen in softirq context, with no task behind them.
  s.i64(1, e.ts);
  s.opt(2, e.pid != 0, e.pid);
  s.opt(3, e.pid != 0, e.tid);
  s.i64(4, e.family);
  s.text_or_null(5, e.saddr);
  s.i64(6, e.sport);
  s.text_or_null(7, e.daddr);
  s.i64(8, e.dport);
  s.i64(9, e.state);
}

void fill_row(RowValues& r, const CpuSample& e, Interner&) {
  r.set(0, e.ts);
  r.set(1, e.dur);
  r.set(2, e.pid);
  r.set(3, e.tid);
  r.set(4, e.cpu);
  r.opt(5, e.syscall >= 0, e.syscall);
  r.set(6, e.kernel ? 1 : 0);
  r.opt(7, e.stack_id >= 0, e.stack_id);
  r.opt(8, e.py_stack_id >= 0, e.py_stack_id);
  // Page faults so far (ABI 9): stored as the kernel counts them, cumulative per thread; NULL
  // from an agent that did not read them (a thread that runs has faulted by then: both 0 is an
  // older agent).
  const bool faults = e.min_flt != 0 || e.maj_flt != 0;
  r.opt(9, faults, static_cast<int64_t>(e.min_flt));
  r.opt(10, faults, static_cast<int64_t>(e.maj_flt));
}

void fill_row(RowValues& r, const CpuRun& e, Interner& strings) {
  r.set(0, e.ts);
  r.set(1, e.dur);
  r.set(2, e.cpu);
  r.set(3, e.pid);
  r.set(4, e.tid);
  const std::string_view name = comm_view(e.comm);
  const int64_t id = name.empty() ? 0 : strings.id(name);
  r.opt(5, id > 0, id);
}

void fill_row(RowValues& r, const WaitMigrate& e, Interner&) {
  r.set(0, e.ts);
  r.set(1, 0);
  r.set(2, e.pid);
  r.set(3, e.tid);
  r.set(4, e.from_cpu);
  r.set(5, e.to_cpu);
}

void fill_row(RowValues& r, const Reclaim& e, Interner&) {
  r.set(0, e.ts);
  r.set(1, e.dur);
  r.set(2, e.pid);
  r.set(3, e.tid);
  r.set(4, static_cast<int64_t>(e.nr_reclaimed));
}

std::string_view proc_kind_name(ProcEventKind k) {
  switch (k) {
    case ProcEventKind::Exec:
      return "exec";
    case ProcEventKind::Fork:
      return "fork";
    case ProcEventKind::Thread:
      return "thread";
    case ProcEventKind::Exit:
      return "exit";
    case ProcEventKind::ThreadExit:
      return "thread_exit";
  }
  return "unknown";
}

std::string insert_sql(const char* table, const char* cols, int ncols) {
  std::string sql = std::string("INSERT INTO ") + table + "(" + cols + ") VALUES (";
  for (int i = 0; i < ncols; ++i) sql += i ? ",?" : "?";
  return sql + ")";
}

Status prepare_insert(sqlite3* db, Stmt& into, const char* name, const char* cols, int ncols) {
  auto one =
      Stmt::prepare(db, insert_sql(name, cols, ncols), std::string("preparing inserts into ") + name);
  if (!one) return one.error();
  into = std::move(one.value());
  return {};
}

}  // namespace

// ---- Interner -----------------------------------------------------------------------------------

Status Interner::prepare(sqlite3* db) {
  db_ = db;
  auto s = Stmt::prepare(db, "INSERT INTO strings(s) VALUES (?)", "preparing inserts into strings");
  if (!s) return s.error();
  insert_ = std::move(s.value());
  return {};
}

int64_t Interner::id(std::string_view s) {
  if (s.empty()) return 0;
  std::string key(s);  // task names fit the small-string buffer: no allocation
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  insert_.text(1, s);
  if (insert_.run() != SQLITE_DONE) {
    error_ = sqlite3_errmsg(db_);
    return -1;
  }
  const int64_t id = sqlite3_last_insert_rowid(db_);
  ids_.emplace(key, id);
  pending_.push_back(std::move(key));
  return id;
}

void Interner::rollback() {
  for (const std::string& k : pending_) ids_.erase(k);
  pending_.clear();
}

// ---- EventTables --------------------------------------------------------------------------------

Result<EventTables> EventTables::prepare(sqlite3* db) {
  EventTables t;
  t.db_ = db;
  // Low-rate tables with text columns stay ordinary rows.
  if (auto st = prepare_insert(db, t.tcp_insert_, "tcp_retrans",
                              "ts,pid,tid,family,saddr,sport,daddr,dport,state", 9);
      !st)
    return st.error();
  if (auto st = prepare_insert(db, t.proc_insert_, "proc_events",
                              "ts,kind,pid,tid,other_pid,other_tid,exit_code,comm,filename", 9);
      !st)
    return st.error();
  for (const ChunkedTable& spec : chunked_tables()) {
    auto sink = ChunkSink::prepare(db, spec);
    static_assert(sink_index<ApiCall>() == 0 && sink_index<Reclaim>() == 4 &&
                  sink_index<CpuSample>() == 5 && sink_index<CpuRun>() == 6 &&
                  sink_index<WaitMigrate>() == 7);
    if (!sink) return sink.error();
    t.sinks_.push_back(std::move(sink.value()));
  }

  // The process (pid, start_ns) that exited is the latest one of that pid started before the exit.
  auto pexit = Stmt::prepare(
      db,
      "UPDATE processes SET exit_ns = ?1, exit_code = ?3 WHERE rowid = (SELECT rowid FROM "
      "processes WHERE pid = ?2 AND start_ns <= ?1 ORDER BY start_ns DESC LIMIT 1)",
      "preparing process exits");
  if (!pexit) return pexit.error();
  t.process_exit_ = std::move(pexit.value());
  auto texit = Stmt::prepare(
      db,
      "UPDATE threads SET exit_ns = ?1 WHERE rowid = (SELECT rowid FROM threads WHERE tid = ?2 "
      "AND first_seen_ns <= ?1 ORDER BY first_seen_ns DESC LIMIT 1)",
      "preparing thread exits");
  if (!texit) return texit.error();
  t.thread_exit_ = std::move(texit.value());
  // A rename: the last name wins, on the thread's live row and, for a main thread, its process.
  auto trename = Stmt::prepare(
      db,
      "UPDATE threads SET comm = ?3 WHERE rowid = (SELECT rowid FROM threads WHERE tid = ?2 "
      "AND pid = ?1 AND exit_ns IS NULL ORDER BY first_seen_ns DESC LIMIT 1)",
      "preparing thread renames");
  if (!trename) return trename.error();
  t.thread_rename_ = std::move(trename.value());
  auto prename = Stmt::prepare(
      db,
      "UPDATE processes SET comm = ?3 WHERE rowid = (SELECT rowid FROM processes WHERE pid = ?2 "
      "AND start_ns <= ?1 ORDER BY start_ns DESC LIMIT 1)",
      "preparing process renames");
  if (!prename) return prename.error();
  t.process_rename_ = std::move(prename.value());
  return t;
}

Status EventTables::write_tcp(const TcpRetrans& e, Interner& strings) {
  bind_row(tcp_insert_, e, strings);
  if (tcp_insert_.run() != SQLITE_DONE) return sqlite_error(db_, "writing tcp_retrans");
  return {};
}

Status EventTables::write_proc(const ProcEvent& e) {
  const bool is_exit = e.kind == ProcEventKind::Exit || e.kind == ProcEventKind::ThreadExit;
  Stmt& s = proc_insert_;
  s.i64(1, e.ts);
  s.text(2, proc_kind_name(e.kind));
  s.i64(3, e.pid);
  s.i64(4, e.tid);
  s.opt(5, !is_exit, e.other_pid);
  s.opt(6, !is_exit, e.other_tid);
  s.opt(7, is_exit, e.exit_code);
  s.text_or_null(8, comm_view(e.comm));
  s.text_or_null(9, e.kind == ProcEventKind::Exec ? std::string_view(e.filename) : "");
  if (s.run() != SQLITE_DONE) return sqlite_error(db_, "writing proc_events");
  if (e.kind == ProcEventKind::Exit) {
    process_exit_.i64(1, e.ts);
    process_exit_.i64(2, e.pid);
    process_exit_.i64(3, e.exit_code);
    if (process_exit_.run() != SQLITE_DONE) return sqlite_error(db_, "writing processes");
  }
  if (is_exit) {  // the last thread of an exiting process ends too
    thread_exit_.i64(1, e.ts);
    thread_exit_.i64(2, e.tid);
    if (thread_exit_.run() != SQLITE_DONE) return sqlite_error(db_, "writing threads");
  }
  return {};
}

Status EventTables::write_rename(const TaskRename& e) {
  const std::string_view name = comm_view(e.comm);
  if (name.empty()) return {};
  thread_rename_.i64(1, e.pid);
  thread_rename_.i64(2, e.tid);
  thread_rename_.text(3, name);
  if (thread_rename_.run() != SQLITE_DONE) return sqlite_error(db_, "writing threads");
  if (e.tid != e.pid) return {};
  process_rename_.i64(1, e.ts);
  process_rename_.i64(2, e.pid);
  process_rename_.text(3, name);
  if (process_rename_.run() != SQLITE_DONE) return sqlite_error(db_, "writing processes");
  return {};
}

Status EventTables::write(std::span<const Event> events, Interner& strings, int64_t now_ns) {
  RowValues row;
  Status st;
  for (const Event& ev : events) {
    std::visit(
        [&](const auto& e) {
          using T = std::decay_t<decltype(e)>;
          if constexpr (std::is_same_v<T, TcpRetrans>) {
            st = write_tcp(e, strings);
          } else if constexpr (std::is_same_v<T, ProcEvent>) {
            st = write_proc(e);
          } else if constexpr (std::is_same_v<T, TaskRename>) {
            st = write_rename(e);
          } else if constexpr (requires { fill_row(row, e, strings); }) {
            row.nulls = 0;
            fill_row(row, e, strings);
            st = sinks_[sink_index<T>()].add(row, now_ns);
          }
          // LibMapped only tells discovery where to look; it is not stored.
        },
        ev);
    if (!st) return st;
    if (strings.failed()) return Error{"writing strings: " + strings.error()};
  }
  return {};
}

Status EventTables::flush(int64_t older_than_ns) {
  Status result;
  for (ChunkSink& s : sinks_)
    if (Status st = s.flush(older_than_ns); !st && result) result = st;
  return result;
}

void EventTables::mark_committed() {
  for (ChunkSink& s : sinks_) s.mark();
}

uint64_t EventTables::rolled_back_rows() {
  uint64_t n = 0;
  for (ChunkSink& s : sinks_) {
    n += s.written_since_mark();
    s.mark();
  }
  return n;
}

}  // namespace gpuwhy::store
