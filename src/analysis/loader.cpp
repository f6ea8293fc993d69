// SPDX-License-Identifier: Apache-2.0
#include "analysis/loader.hpp"

#include <algorithm>
#include <thread>
#include <unordered_set>

#include "analysis/sql_scan.hpp"
#include "analysis/units.hpp"
#include "store/store.hpp"

namespace gpuwhy::analysis {
namespace {

bool has_table(sqlite3* db, const char* name) {
  Query q(db,
          std::string("SELECT 1 FROM sqlite_schema WHERE type='table' AND name='") + name + "'");
  return q.ok() && q.step() == SQLITE_ROW;
}

// The latest event end among the last rows written to each table: rows arrive in near time order
// (the agent reorders within a short window), so the tail of each table holds the newest ones
// and reading it costs the same on a 10 GB file as on a 10 kB one.
int64_t last_event_by_scan(sqlite3* db) {
  int64_t last = 0;
  for (const char* t : {"api_calls", "offcpu", "syscalls", "block_io", "reclaim"}) {
    const std::string sql = std::string("SELECT max(ts + dur) FROM (SELECT ts, dur FROM ") + t +
                            " ORDER BY rowid DESC LIMIT 4096)";
    (void)each_row(db, sql, t, [&](Query& q) { last = std::max(last, q.i64(0)); });
  }
  (void)each_row(db,
                 "SELECT max(ts) FROM (SELECT ts FROM tcp_retrans ORDER BY rowid DESC LIMIT 4096)",
                 "tcp_retrans", [&](Query& q) { last = std::max(last, q.i64(0)); });
  return last;
}

Status load_lookups(sqlite3* db, TraceRows& rows) {
  Status st = each_row(db, "SELECT id, name, category FROM apis", "apis", [&](Query& q) {
    const int64_t id = q.i64(0);
    if (id < 0 || id > 0xffff) return;
    if (static_cast<size_t>(id) >= rows.apis.size()) rows.apis.resize(static_cast<size_t>(id) + 1);
    rows.apis[static_cast<size_t>(id)] = make_api_meta(q.text(1), q.text(2));
  });
  if (!st) return st;
  st = each_row(db, "SELECT nr, name FROM syscall_names", "syscall_names",
                [&](Query& q) { rows.syscall_names[static_cast<uint32_t>(q.i64(0))] = q.text(1); });
  if (!st) return st;
  st = each_row(db, "SELECT id, s FROM strings", "strings",
                [&](Query& q) { rows.strings[static_cast<uint32_t>(q.i64(0))] = q.text(1); });
  if (!st) return st;
  st = each_row(db, "SELECT pid, start_ns, comm, exe, cmdline FROM processes", "processes",
                [&](Query& q) {
                  rows.processes.push_back(
                      {static_cast<uint32_t>(q.i64(0)), q.i64(1), q.text(2), q.text(3), q.text(4)});
                });
  if (!st) return st;
  st = each_row(
      db, "SELECT pid, tid, comm FROM threads ORDER BY first_seen_ns", "threads", [&](Query& q) {
        rows.threads.push_back(
            {static_cast<uint32_t>(q.i64(0)), static_cast<uint32_t>(q.i64(1)), q.text(2)});
      });
  if (!st) return st;
  // Latest name first: a thread renamed during the trace is shown by its last name.
  std::reverse(rows.threads.begin(), rows.threads.end());
  st =
      each_row(db, "SELECT source, cause, count FROM losses WHERE count > 0 ORDER BY source, cause",
               "losses", [&](Query& q) {
                 rows.losses.push_back({q.text(0), q.text(1), static_cast<uint64_t>(q.i64(2))});
               });
  if (!st) return st;
  if (has_table(db, "event_counts")) {
    st = each_row(db, "SELECT source, count FROM event_counts ORDER BY source", "event_counts",
                  [&](Query& q) {
                    rows.event_counts.emplace_back(q.text(0), static_cast<uint64_t>(q.i64(1)));
                  });
  }
  return st;
}

CallRow read_call(const Query& q) {
  CallRow c;
  c.ts = q.i64(0);
  c.dur = q.i64(1);
  c.pid = static_cast<uint32_t>(q.i64(2));
  c.tid = static_cast<uint32_t>(q.i64(3));
  c.api = static_cast<uint16_t>(q.i64(4));
  c.ret = static_cast<int32_t>(q.i64(5));
  c.bytes = static_cast<uint64_t>(q.i64(6));
  c.dir = static_cast<int8_t>(std::clamp<int64_t>(q.i64(7), -1, 127));
  c.addr = static_cast<uint64_t>(q.i64(8));
  c.addr2 = static_cast<uint64_t>(q.i64(9));
  return c;
}
constexpr const char* kCallColumns =
    "ts, dur, pid, tid, api, ret, bytes, coalesce(op, -1), addr, addr2";

std::string pid_list(sqlite3* db) {
  std::string out;
  (void)each_row(db,
                 "SELECT c.pid, (SELECT comm FROM processes p WHERE p.pid = c.pid "
                 "ORDER BY start_ns DESC LIMIT 1) FROM (SELECT DISTINCT pid FROM api_calls) c "
                 "ORDER BY c.pid LIMIT 20",
                 "pids", [&](Query& q) {
                   if (!out.empty()) out += ", ";
                   out += std::to_string(q.i64(0));
                   const std::string comm = q.text(1);
                   if (!comm.empty()) out += " (" + comm + ")";
                 });
  return out;
}

bool pid_in_trace(sqlite3* db, uint32_t pid) {
  bool found = false;
  for (const char* sql : {"SELECT 1 FROM processes WHERE pid = ?1 LIMIT 1",
                          "SELECT 1 FROM api_calls WHERE pid = ?1 LIMIT 1"}) {
    (void)each_row(db, sql, "pid", [&](Query&) { found = true; }, {pid});
    if (found) break;
  }
  return found;
}

std::string window_text(const TimeWindow& w) {
  return fmt_rel(w.start_ns - w.trace_start_ns) + " .. " + fmt_rel(w.end_ns - w.trace_start_ns);
}

}  // namespace

Result<TimeWindow> trace_bounds(sqlite3* db) {
  SessionRow s;
  bool found = false;
  Status st = each_row(db,
                       "SELECT status, start_ns, end_ns, last_commit_ns, last_event_ns "
                       "FROM session WHERE id = 1",
                       "session", [&](Query& q) {
                         found = true;
                         s.status = q.text(0);
                         s.start_ns = q.i64(1);
                         s.end_ns = q.i64(2);
                         s.last_commit_ns = q.i64(3);
                         s.last_event_ns = q.i64(4);
                       });
  if (!st) return st.error();
  if (!found) return Error{"the trace has no session row", "is it a gpuwhy trace?"};
  TimeWindow w;
  w.trace_start_ns = s.start_ns;
  if (s.status == "complete" && s.end_ns > 0) {
    w.trace_end_ns = s.end_ns;
  } else {
    w.end_is_last_event = true;
    w.trace_end_ns = s.last_event_ns > 0 ? s.last_event_ns : last_event_by_scan(db);
    if (w.trace_end_ns <= 0) w.trace_end_ns = s.last_commit_ns;
  }
  w.trace_end_ns = std::max(w.trace_end_ns, w.trace_start_ns);
  w.start_ns = w.trace_start_ns;
  w.end_ns = w.trace_end_ns;
  return w;
}

Result<TraceRows> load_trace(sqlite3* db, const LoadOptions& opt) {
  TraceRows rows;
  Status st = each_row(db,
                       "SELECT status, host, kernel, agent_version, command_line, "
                       "coalesce(pid_filter, ''), start_ns, end_ns, last_commit_ns, last_event_ns "
                       "FROM session WHERE id = 1",
                       "session", [&](Query& q) {
                         SessionRow& s = rows.session;
                         s.status = q.text(0);
                         s.host = q.text(1);
                         s.kernel = q.text(2);
                         s.agent_version = q.text(3);
                         s.command_line = q.text(4);
                         s.pid_filter = q.text(5);
                         s.start_ns = q.i64(6);
                         s.end_ns = q.i64(7);
                         s.last_commit_ns = q.i64(8);
                         s.last_event_ns = q.i64(9);
                       });
  if (!st) return st.error();
  auto bounds = trace_bounds(db);
  if (!bounds) return bounds.error();
  auto window = resolve_window(opt.window, bounds->trace_start_ns, bounds->trace_end_ns,
                               bounds->end_is_last_event);
  if (!window) return window.error();
  rows.window = window.value();
  if (st = load_lookups(db, rows); !st) return st.error();

  const std::unordered_set<uint32_t> wanted(opt.pids.begin(), opt.pids.end());
  for (uint32_t pid : opt.pids) {
    if (!pid_in_trace(db, pid)) {
      const std::string list = pid_list(db);
      return Error{"pid " + std::to_string(pid) + " is not in this trace",
                   list.empty() ? "the trace has no GPU API calls" : "GPU processes: " + list, 2};
    }
  }
  const int64_t from = rows.window.start_ns, to = rows.window.end_ns;

  // One pass over api_calls (it has no ts index; a second scan would double the cost): a call
  // belongs to the window it starts in, and allocations before the window are kept too, since
  // pinned host buffers are usually allocated once, long before the window looked at.
  std::vector<uint8_t> is_memory_api(rows.apis.size(), 0);
  for (size_t id = 0; id < rows.apis.size(); ++id) {
    const Category c = rows.apis[id].cat;
    is_memory_api[id] = c == Category::Alloc || c == Category::Free;
  }
  ScanPool pool(db, std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  st = pool.scan(
      "api_calls",
      std::string("SELECT ") + kCallColumns +
          " FROM api_calls WHERE rowid >= :lo AND rowid < :hi AND ts < :to",
      from, to,
      [&](const Query& q, std::vector<CallRow>& out) {
        CallRow c = read_call(q);
        if (!wanted.empty() && !wanted.count(c.pid)) return;
        if (c.ts >= from || (c.api < is_memory_api.size() && is_memory_api[c.api]))
          out.push_back(c);
      },
      rows.calls);
  if (!st) return st.error();
  std::vector<CallRow> early_memory;
  auto in_window = std::stable_partition(rows.calls.begin(), rows.calls.end(),
                                         [&](const CallRow& c) { return c.ts >= from; });
  early_memory.assign(in_window, rows.calls.end());
  rows.calls.erase(in_window, rows.calls.end());
  std::unordered_set<uint32_t> gpu_pids;
  for (const CallRow& c : rows.calls) gpu_pids.insert(c.pid);
  for (uint32_t pid : opt.pids) {
    if (!gpu_pids.count(pid)) {
      return Error{"pid " + std::to_string(pid) + " made no GPU API call in the window " +
                       window_text(rows.window),
                   "widen the window (--since/--from/--to) or drop --pid", 2};
    }
  }
  if (rows.calls.empty()) {
    const std::string list = pid_list(db);
    if (list.empty()) {
      return Error{"this trace has no GPU API calls",
                   "was a GPU runtime found? run 'gpuwhy check' on the traced host", 2};
    }
    return Error{"no GPU API call in the window " + window_text(rows.window),
                 "the trace spans " + fmt_rel(0) + " .. " +
                     fmt_rel(rows.window.trace_end_ns - rows.window.trace_start_ns),
                 2};
  }
  auto keep = [&](uint32_t pid) { return gpu_pids.count(pid) > 0; };

  if (!early_memory.empty()) {
    for (const CallRow& c : early_memory)
      if (keep(c.pid)) rows.memory_calls.push_back(c);
    for (const CallRow& c : rows.calls)
      if (c.api < is_memory_api.size() && is_memory_api[c.api]) rows.memory_calls.push_back(c);
  }

  // Interval events overlapping the window, for the processes that made GPU calls.
  const std::string overlapping =
      " WHERE rowid >= :lo AND rowid < :hi AND ts < :to AND ts + dur > :from";
  st = pool.scan(
      "offcpu",
      "SELECT ts, dur, runq, pid, tid, preempted, next_pid, next_tid, next_comm, waker_pid, "
      "waker_tid, waker_comm, cpu FROM offcpu" +
          overlapping,
      from, to,
      [&](const Query& q, std::vector<OffCpuRow>& out) {
        OffCpuRow o;
        o.pid = static_cast<uint32_t>(q.i64(3));
        if (!keep(o.pid)) return;
        o.ts = q.i64(0);
        o.dur = q.i64(1);
        o.runq = std::clamp<int64_t>(q.i64(2), 0, o.dur);
        o.tid = static_cast<uint32_t>(q.i64(4));
        o.preempted = q.i64(5) != 0;
        // Who took the CPU matters for a preemption, who woke it for a sleep.
        const int base = o.preempted ? 6 : 9;
        o.other_pid = static_cast<uint32_t>(q.i64(base));
        o.other_tid = static_cast<uint32_t>(q.i64(base + 1));
        o.other_comm = static_cast<uint32_t>(q.i64(base + 2));
        o.next_pid = static_cast<uint32_t>(q.i64(6));
        o.next_tid = static_cast<uint32_t>(q.i64(7));
        o.next_comm = static_cast<uint32_t>(q.i64(8));
        o.cpu = static_cast<uint16_t>(q.i64(12));
        out.push_back(o);
      },
      rows.offcpu);
  if (!st) return st.error();
  st = pool.scan(
      "syscalls", "SELECT ts, dur, pid, tid, nr, ret FROM syscalls" + overlapping, from, to,
      [&](const Query& q, std::vector<SyscallRow>& out) {
        SyscallRow r{q.i64(0),
                     q.i64(1),
                     static_cast<uint32_t>(q.i64(2)),
                     static_cast<uint32_t>(q.i64(3)),
                     static_cast<uint32_t>(q.i64(4)),
                     q.i64(5)};
        if (keep(r.pid)) out.push_back(r);
      },
      rows.syscalls);
  if (!st) return st.error();
  st = pool.scan(
      "block_io", "SELECT ts, dur, pid, tid, bytes, op, dev FROM block_io" + overlapping, from, to,
      [&](const Query& q, std::vector<BlockIoRow>& out) {
        BlockIoRow b{q.i64(0),
                     q.i64(1),
                     static_cast<uint32_t>(q.i64(2)),
                     static_cast<uint32_t>(q.i64(3)),
                     static_cast<uint64_t>(q.i64(4)),
                     static_cast<uint32_t>(q.i64(5)),
                     static_cast<uint32_t>(q.i64(6))};
        if (keep(b.pid)) out.push_back(b);
      },
      rows.block_io);
  if (!st) return st.error();
  st = pool.scan(
      "reclaim", "SELECT ts, dur, pid, tid, nr_reclaimed FROM reclaim" + overlapping, from, to,
      [&](const Query& q, std::vector<ReclaimRow>& out) {
        ReclaimRow r{q.i64(0), q.i64(1), static_cast<uint32_t>(q.i64(2)),
                     static_cast<uint32_t>(q.i64(3)), static_cast<uint64_t>(q.i64(4))};
        if (keep(r.pid)) out.push_back(r);
      },
      rows.reclaim);
  if (!st) return st.error();
  // Retransmits are a host-wide signal (often from softirq context, pid 0): keep them all.
  st = each_row(db,
                "SELECT ts, coalesce(pid, 0), coalesce(tid, 0), coalesce(saddr, ''), "
                "coalesce(sport, 0), coalesce(daddr, ''), coalesce(dport, 0) FROM tcp_retrans "
                "WHERE ts >= ?1 AND ts < ?2",
                "tcp_retrans",
                [&](Query& q) {
                  TcpRetransRow t;
                  t.ts = q.i64(0);
                  t.pid = static_cast<uint32_t>(q.i64(1));
                  t.tid = static_cast<uint32_t>(q.i64(2));
                  t.saddr = q.text(3);
                  t.sport = static_cast<uint32_t>(q.i64(4));
                  t.daddr = q.text(5);
                  t.dport = static_cast<uint32_t>(q.i64(6));
                  rows.tcp.push_back(std::move(t));
                },
                {from, to});
  if (!st) return st.error();
  prepare_rows(rows);
  return rows;
}

Result<TraceRows> load_trace(const store::TraceFile& file, const LoadOptions& opt) {
  auto rows = load_trace(file.db(), opt);
  if (rows) rows->live = file.is_live();
  return rows;
}

}  // namespace gpuwhy::analysis
