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
  kGrid = 1 << 5,
  kPeer = 1 << 6,
  kNRanks = 1 << 7,
  kAll = 0xff,
};

uint16_t has_mask(const ApiInfo& a) {
  uint16_t m = 0;
  for (const ArgUse& u : a.args) {
    switch (u.field) {
      case Field::Stream:
        m |= kStream;
        break;
      case Field::Bytes:
      case Field::Width:
      case Field::Height:
      case Field::Count:
        m |= kBytes;
        break;
      case Field::CopyKind:
      case Field::RedOp:
        m |= kOp;
        break;
      case Field::Func:
      case Field::Dst:
      case Field::Ptr:
      case Field::Event:
      case Field::GraphExec:
      case Field::Comm:
        m |= kAddr;
        break;
      case Field::Src:
        m |= kAddr2;
        break;
      case Field::GridXY:
      case Field::GridZ:
      case Field::GridZBlockX:
      case Field::GridX:
      case Field::GridY:
        m |= kGrid;
        break;
      case Field::Root:
      case Field::Peer:
      case Field::Rank:
        m |= kPeer;
        break;
      case Field::NRanks:
        m |= kNRanks;
        break;
      default:
        break;
    }
  }
  if (a.fixed_dir) m |= kOp;
  if (a.out_reg >= 0) m |= kAddr;
  return m;
}

uint16_t api_has(uint16_t api) {
  static const auto masks = [] {
    std::array<uint16_t, GW_MAX_API> m;
    m.fill(kAll);  // an id this build does not know: keep every raw value
    for (const ApiInfo& a : api_catalog())
      if (a.id < m.size()) m[a.id] = has_mask(a);
    return m;
  }();
  return api < masks.size() ? masks[api] : static_cast<uint16_t>(kAll);
}

// ---- per-table column mapping (base: bind index of the row's first column minus one) -----------

void bind_row(Stmt& s, int b, const ApiCall& e, Interner&) {
  const uint16_t has = api_has(e.api);
  const ApiCallFields& f = e.f;
  s.i64(b + 1, e.ts);
  s.i64(b + 2, e.dur);
  s.i64(b + 3, e.pid);
  s.i64(b + 4, e.tid);
  s.i64(b + 5, e.api);
  s.i64(b + 6, e.lib);
  s.i64(b + 7, e.ret);
  s.opt(b + 8, has & kStream, f.stream);
  s.opt(b + 9, has & kBytes, f.bytes);
  s.opt(b + 10, (has & kOp) && f.op >= 0, f.op);
  s.opt(b + 11, has & kAddr, f.addr);
  s.opt(b + 12, has & kAddr2, f.addr2);
  s.opt(b + 13, has & kGrid, f.blocks);
  s.opt(b + 14, has & kGrid, f.threads_per_block);
  s.opt(b + 15, (has & kPeer) && f.peer >= 0, f.peer);
  s.opt(b + 16, has & kNRanks, f.nranks);
  s.opt(b + 17, e.stack_id >= 0, e.stack_id);
  s.i64(b + 18, e.flags);
}

// The task on the other side of a switch, NULL when the kernel gave none.
void bind_task(Stmt& s, int b, uint32_t pid, uint32_t tid, const Comm& comm, Interner& strings) {
  const std::string_view name = comm_view(comm);
  const bool known = !name.empty() || pid != 0 || tid != 0;
  s.opt(b + 1, known, pid);
  s.opt(b + 2, known, tid);
  const int64_t id = name.empty() ? 0 : strings.id(name);
  s.opt(b + 3, id > 0, id);
}

void bind_row(Stmt& s, int b, const OffCpu& e, Interner& strings) {
  s.i64(b + 1, e.ts);
  s.i64(b + 2, e.dur);
  s.i64(b + 3, e.runq);
  s.i64(b + 4, e.pid);
  s.i64(b + 5, e.tid);
  s.i64(b + 6, e.cpu);
  s.i64(b + 7, e.preempted ? 1 : 0);
  s.i64(b + 8, e.prev_state);
  bind_task(s, b + 8, e.next_pid, e.next_tid, e.next_comm, strings);
  bind_task(s, b + 11, e.waker_pid, e.waker_tid, e.waker_comm, strings);
}

void bind_row(Stmt& s, int b, const SyscallEvent& e, Interner&) {
  s.i64(b + 1, e.ts);
  s.i64(b + 2, e.dur);
  s.i64(b + 3, e.pid);
  s.i64(b + 4, e.tid);
  s.i64(b + 5, e.nr);
  s.i64(b + 6, e.ret);
  s.u64(b + 7, e.arg0);
}

void bind_row(Stmt& s, int b, const BlockIo& e, Interner&) {
  s.i64(b + 1, e.ts);
  s.i64(b + 2, e.dur);
  s.i64(b + 3, e.pid);
  s.i64(b + 4, e.tid);
  s.i64(b + 5, e.dev);
  s.u64(b + 6, e.sector);
  s.i64(b + 7, e.bytes);
  s.i64(b + 8, e.op);
  s.i64(b + 9, e.error);
}

void bind_row(Stmt& s, int b, const TcpRetrans& e, Interner&) {
  // Retransmits are host-wide and often happen in softirq context, with no task behind them.
  s.i64(b + 1, e.ts);
  s.opt(b + 2, e.pid != 0, e.pid);
  s.opt(b + 3, e.pid != 0, e.tid);
  s.i64(b + 4, e.family);
  s.text_or_null(b + 5, e.saddr);
  s.i64(b + 6, e.sport);
  s.text_or_null(b + 7, e.daddr);
  s.i64(b + 8, e.dport);
  s.i64(b + 9, e.state);
}

void bind_row(Stmt& s, int b, const Reclaim& e, Interner&) {
  s.i64(b + 1, e.ts);
  s.i64(b + 2, e.dur);
  s.i64(b + 3, e.pid);
  s.i64(b + 4, e.tid);
  s.u64(b + 5, e.nr_reclaimed);
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

std::string insert_sql(const char* table, const char* cols, int ncols, int rows) {
  std::string row = "(";
  for (int i = 0; i < ncols; ++i) row += i ? ",?" : "?";
  row += ')';
  std::string sql = std::string("INSERT INTO ") + table + "(" + cols + ") VALUES ";
  for (int r = 0; r < rows; ++r) sql += (r ? "," : "") + row;
  return sql;
}

Status prepare_table(sqlite3* db, EventTables::Table& t, const char* name, const char* cols,
                     int ncols) {
  t.name = name;
  t.columns = ncols;
  const std::string what = std::string("preparing inserts into ") + name;
  auto one = Stmt::prepare(db, insert_sql(name, cols, ncols, 1), what);
  if (!one) return one.error();
  auto many = Stmt::prepare(db, insert_sql(name, cols, ncols, kRowsPerInsert), what);
  if (!many) return many.error();
  t.one = std::move(one.value());
  t.many = std::move(many.value());
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
  struct Spec {
    Table* table;
    const char* name;
    const char* cols;
    int ncols;
  };
  const Spec specs[] = {
      {&t.api_calls_, "api_calls",
       "ts,dur,pid,tid,api,lib,ret,stream,bytes,op,addr,addr2,blocks,tpb,peer,nranks,stack_id,"
       "flags",
       18},
      {&t.offcpu_, "offcpu",
       "ts,dur,runq,pid,tid,cpu,preempted,state,next_pid,next_tid,next_comm,waker_pid,waker_tid,"
       "waker_comm",
       14},
      {&t.syscalls_, "syscalls", "ts,dur,pid,tid,nr,ret,arg0", 7},
      {&t.block_io_, "block_io", "ts,dur,pid,tid,dev,sector,bytes,op,error", 9},
      {&t.tcp_retrans_, "tcp_retrans", "ts,pid,tid,family,saddr,sport,daddr,dport,state", 9},
      {&t.reclaim_, "reclaim", "ts,dur,pid,tid,nr_reclaimed", 5},
      {&t.proc_events_, "proc_events",
       "ts,kind,pid,tid,other_pid,other_tid,exit_code,comm,filename", 9},
  };
  for (const Spec& s : specs)
    if (auto st = prepare_table(db, *s.table, s.name, s.cols, s.ncols); !st) return st.error();

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
  return t;
}

template <class E>
Status EventTables::write_rows(Table& t, const std::vector<const E*>& rows, Interner& strings) {
  size_t i = 0;
  for (; i + kRowsPerInsert <= rows.size(); i += kRowsPerInsert) {
    for (int r = 0; r < kRowsPerInsert; ++r) bind_row(t.many, r * t.columns, *rows[i + r], strings);
    if (strings.failed()) return Error{"writing strings: " + strings.error()};
    if (t.many.run() != SQLITE_DONE) return sqlite_error(db_, std::string("writing ") + t.name);
  }
  for (; i < rows.size(); ++i) {
    bind_row(t.one, 0, *rows[i], strings);
    if (strings.failed()) return Error{"writing strings: " + strings.error()};
    if (t.one.run() != SQLITE_DONE) return sqlite_error(db_, std::string("writing ") + t.name);
  }
  return {};
}

Status EventTables::write_proc(const ProcEvent& e) {
  const bool is_exit = e.kind == ProcEventKind::Exit || e.kind == ProcEventKind::ThreadExit;
  Stmt& s = proc_events_.one;
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

Status EventTables::write(std::span<const Event> events, Interner& strings) {
  // Grouped per table so runs of rows go through the multi-row statement; order within a table
  // is kept (rowids follow the batcher's time order).
  std::vector<const ApiCall*> calls;
  std::vector<const OffCpu*> offcpu;
  std::vector<const SyscallEvent*> syscalls;
  std::vector<const BlockIo*> block_io;
  std::vector<const TcpRetrans*> tcp;
  std::vector<const Reclaim*> reclaim;
  std::vector<const ProcEvent*> procs;
  calls.reserve(events.size());
  for (const Event& ev : events) {
    std::visit(
        [&](const auto& e) {
          using T = std::decay_t<decltype(e)>;
          if constexpr (std::is_same_v<T, ApiCall>)
            calls.push_back(&e);
          else if constexpr (std::is_same_v<T, OffCpu>)
            offcpu.push_back(&e);
          else if constexpr (std::is_same_v<T, SyscallEvent>)
            syscalls.push_back(&e);
          else if constexpr (std::is_same_v<T, BlockIo>)
            block_io.push_back(&e);
          else if constexpr (std::is_same_v<T, TcpRetrans>)
            tcp.push_back(&e);
          else if constexpr (std::is_same_v<T, Reclaim>)
            reclaim.push_back(&e);
          else if constexpr (std::is_same_v<T, ProcEvent>)
            procs.push_back(&e);
          // LibMapped only tells discovery where to look; it is not stored.
        },
        ev);
  }
  if (auto s = write_rows(api_calls_, calls, strings); !s) return s;
  if (auto s = write_rows(offcpu_, offcpu, strings); !s) return s;
  if (auto s = write_rows(syscalls_, syscalls, strings); !s) return s;
  if (auto s = write_rows(block_io_, block_io, strings); !s) return s;
  if (auto s = write_rows(tcp_retrans_, tcp, strings); !s) return s;
  if (auto s = write_rows(reclaim_, reclaim, strings); !s) return s;
  for (const ProcEvent* p : procs)
    if (auto s = write_proc(*p); !s) return s;
  return {};
}

}  // namespace gpuwhy::store
