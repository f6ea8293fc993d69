// SPDX-License-Identifier: Apache-2.0
// Writes the Perfetto trace thread by thread (perfetto_export.hpp). Every packet is on one
// sequence (perfetto_sequence.hpp: interned names, a clock snapshot) with absolute timestamps;
// each track's events are written in time order, and trace_processor sorts the tracks' packets
// into one timeline itself.
#include "export/perfetto_export.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/cleanup.hpp"
#include "export/perfetto_sequence.hpp"
#include "export/proto_writer.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::exporter {
namespace {

// Times of a crafted or damaged file can lie anywhere in int64_t: sums saturate instead of
// overflowing (found by tests/fuzz/fuzz_export).
int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b < 0 ? INT64_MIN : INT64_MAX;
  return r;
}
int64_t sat_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b > 0 ? INT64_MIN : INT64_MAX;
  return r;
}

// TracePacket / TrackEvent / TrackDescriptor field numbers (perfetto_trace.proto).
enum : uint32_t {
  kTrackEvent = 11,
  kTrackDescriptor = 60,
  kEvCategoryIids = 3,
  kEvAnnotations = 4,
  kEvType = 9,
  kEvNameIid = 10,
  kEvTrack = 11,
  kEvCounterValue = 30,
  kEvSourceLocationIid = 34,
  kEvFlowIds = 47,
  kEvTerminatingFlowIds = 48,
  kAnnNameIid = 1,
  kAnnInt = 4,
  kAnnString = 6,
};
enum : uint64_t { kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4 };

// Track uuids: a kind in the top byte, then the ids.
uint64_t process_uuid(uint32_t pid) { return (uint64_t{1} << 56) | pid; }
uint64_t thread_uuid(uint32_t pid, uint32_t tid) {
  return (uint64_t{2} << 56) | (uint64_t{pid} << 24) | (tid & 0xffffff);
}
uint64_t offcpu_uuid(uint32_t pid, uint32_t tid) {
  return (uint64_t{3} << 56) | (uint64_t{pid} << 24) | (tid & 0xffffff);
}
uint64_t counter_uuid(uint32_t pid, int kind) {
  return (uint64_t{4} << 56) | (uint64_t{pid} << 8) | static_cast<uint64_t>(kind);
}
// A GPU stream's track: numbered in the order the streams are met (CUPTI's stream ids are
// any 32-bit value, too wide to pack beside the pid and device).
uint64_t gpu_stream_uuid(uint64_t n) { return (uint64_t{5} << 56) | n; }
// A waker's wake-ups, under its thread.
uint64_t wakeups_uuid(uint32_t pid, uint32_t tid) {
  return (uint64_t{6} << 56) | (uint64_t{pid} << 24) | (tid & 0xffffff);
}

std::string hex(int64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// A Python stack's innermost frame: the line that made the call (python_frames, depth 0).
struct PythonLine {
  std::string file, function, source;
  int64_t line = -1;
};

struct Lookups {
  std::unordered_map<int64_t, std::string> apis, strings, syscalls, copy_kinds, call_sites;
  std::unordered_map<int64_t, PythonLine> python_lines;  // by py_stack_id
};

// The innermost frame of every Python stack whose names are known (a file predating the table
// has none).
Status load_python_lines(const store::TraceFile& file,
                         std::unordered_map<int64_t, PythonLine>& into) {
  if (!store::run_query(file, "SELECT 1 FROM python_frames LIMIT 0")) return {};
  auto s = store::Stmt::prepare(file.db(),
                                "SELECT py_stack_id, file, coalesce(function, ''), line, "
                                "coalesce(source, '') FROM python_frames WHERE depth = 0 AND "
                                "file NOT NULL",
                                "reading Python frames");
  if (!s) return s.error();
  sqlite3_stmt* q = s->get();
  auto text = [&](int i) {
    const auto* t = sqlite3_column_text(q, i);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  };
  while (sqlite3_step(q) == SQLITE_ROW)
    into[sqlite3_column_int64(q, 0)] = {
        text(1), text(2), text(4),
        sqlite3_column_type(q, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(q, 3)};
  return {};
}

Status load_map(const store::TraceFile& file, const std::string& sql,
                std::unordered_map<int64_t, std::string>& into) {
  auto s = store::Stmt::prepare(file.db(), sql, "reading lookups");
  if (!s) return s.error();
  while (sqlite3_step(s->get()) == SQLITE_ROW) {
    const auto* t = sqlite3_column_text(s->get(), 1);
    into[sqlite3_column_int64(s->get(), 0)] = t ? reinterpret_cast<const char*>(t) : "";
  }
  return {};
}

struct Thread {
  uint32_t pid = 0, tid = 0;
  std::string name;
  bool traced = false;  // has calls or off-CPU rows (else: a waker only)
};

class PerfettoWriter {
 public:
  PerfettoWriter(const store::TraceFile& file, const Scope& scope, PerfettoSequence& out)
      : file_(file), scope_(scope), out_(out) {}

  Status run(ExportStats& stats);

 private:
  Status descriptors();
  Status thread_calls(const Thread& t);
  Status thread_offcpu(const Thread& t);
  Status counters();
  Status gpu_tracks();
  void wake_ups();
  void annotate(ProtoWriter& ev, std::string_view name, int64_t v) {
    ProtoWriter a;
    a.varint(kAnnNameIid, out_.iid(kInternedAnnotationNames, name));
    a.int64(kAnnInt, v);
    ev.message(kEvAnnotations, a);
  }
  void annotate(ProtoWriter& ev, std::string_view name, std::string_view v) {
    ProtoWriter a;
    a.varint(kAnnNameIid, out_.iid(kInternedAnnotationNames, name));
    a.string(kAnnString, v);
    ev.message(kEvAnnotations, a);
  }
  // An event's category and name, interned.
  void named(ProtoWriter& ev, std::string_view category, std::string_view name) {
    ev.varint(kEvCategoryIids, out_.iid(kInternedEventCategories, category));
    ev.varint(kEvNameIid, out_.iid(kInternedEventNames, name));
  }
  void slice_begin(int64_t ts, uint64_t track, const std::string& name, const char* category,
                   ProtoWriter& ev) {
    ev.varint(kEvType, kSliceBegin);
    ev.varint(kEvTrack, track);
    named(ev, category, name);
    out_.packet(ts, kTrackEvent, ev);
    ++slices_;
  }
  void slice_end(int64_t ts, uint64_t track) {
    ProtoWriter ev;
    ev.varint(kEvType, kSliceEnd);
    ev.varint(kEvTrack, track);
    out_.packet(ts, kTrackEvent, ev);
  }
  std::string where_tid(const Thread& t) const {
    std::string w = scope_.where(true, false);
    return (w.empty() ? " WHERE " : w + " AND ") + "tid = " + std::to_string(t.tid) +
           " AND pid = " + std::to_string(t.pid);
  }

  const store::TraceFile& file_;
  const Scope& scope_;
  PerfettoSequence& out_;
  Lookups names_;
  std::map<std::pair<uint32_t, uint32_t>, Thread> threads_;
  std::map<uint32_t, std::string> processes_;
  std::set<uint32_t> traced_pids_;
  // The wakers' side of the wake-up flows, written after every thread's own events (wake_ups()).
  struct WakeUp {
    uint32_t pid, tid;
    int64_t ts;
    uint64_t flow;
    std::string name;
  };
  std::vector<WakeUp> wakeups_;
  uint64_t slices_ = 0, flows_ = 0, gpu_tracks_ = 0;
};

Status PerfettoWriter::descriptors() {
  const std::string in_scope = scope_.where(true, true);
  // Processes and threads with events in scope, and every thread that woke one of them.
  const std::string sql = "SELECT pid, tid, 1 FROM (SELECT DISTINCT pid, tid FROM api_calls" +
                          in_scope + " UNION SELECT DISTINCT pid, tid FROM offcpu" + in_scope +
                          ") UNION ALL SELECT DISTINCT waker_pid, waker_tid, 0 FROM offcpu" +
                          (in_scope.empty() ? " WHERE" : in_scope + " AND") +
                          " waker_tid NOT NULL AND waker_tid != 0 AND NOT preempted";
  auto s = store::Stmt::prepare(file_.db(), sql, "listing threads");
  if (!s) return s.error();
  while (sqlite3_step(s->get()) == SQLITE_ROW) {
    const auto pid = static_cast<uint32_t>(sqlite3_column_int64(s->get(), 0));
    const auto tid = static_cast<uint32_t>(sqlite3_column_int64(s->get(), 1));
    Thread& t = threads_[{pid, tid}];
    t.pid = pid;
    t.tid = tid;
    t.traced = t.traced || sqlite3_column_int(s->get(), 2);
    processes_.emplace(pid, "");
    if (t.traced) traced_pids_.insert(pid);
  }
  std::unordered_map<int64_t, std::string> comms, procs, cmdlines;
  if (auto st = load_map(file_, "SELECT tid, comm FROM threads ORDER BY first_seen_ns", comms); !st)
    return st;
  if (auto st = load_map(file_, "SELECT pid, comm FROM processes ORDER BY start_ns", procs); !st)
    return st;
  if (auto st = load_map(file_, "SELECT pid, cmdline FROM processes ORDER BY start_ns", cmdlines);
      !st)
    return st;
  // A waker gpuwhy did not trace is named by the task name its wake-ups recorded; its process
  // by its main thread's, else by the earliest of its threads that woke one (a kernel thread is
  // its own process). One scan of the wake-ups fills both; in this order the last row of a tid
  // or a pid is the one that names it.
  std::unordered_map<int64_t, std::string> waker_names, waker_processes;
  {
    auto w = store::Stmt::prepare(file_.db(),
                                  "SELECT o.waker_pid, o.waker_tid, s.s FROM offcpu AS o JOIN "
                                  "strings AS s ON s.id = o.waker_comm" +
                                      in_scope + " ORDER BY o.waker_tid = o.waker_pid, o.ts DESC",
                                  "reading the wakers' names");
    if (!w) return w.error();
    sqlite3_stmt* q = w->get();
    while (sqlite3_step(q) == SQLITE_ROW) {
      const auto* t = sqlite3_column_text(q, 2);
      const std::string name = t ? reinterpret_cast<const char*>(t) : "";
      if (sqlite3_column_type(q, 1) != SQLITE_NULL) waker_names[sqlite3_column_int64(q, 1)] = name;
      if (sqlite3_column_type(q, 0) != SQLITE_NULL)
        waker_processes[sqlite3_column_int64(q, 0)] = name;
    }
  }
  for (auto& [pid, name] : processes_) {
    name = !procs[pid].empty()          ? procs[pid]
           : waker_processes.count(pid) ? waker_processes[pid]
                                        : "pid " + std::to_string(pid);
    ProtoWriter p, d;
    p.int64(1, pid);
    if (cmdlines.count(pid) && !cmdlines[pid].empty()) p.string(2, cmdlines[pid]);
    p.string(6, name);
    d.varint(1, process_uuid(pid));
    d.message(3, p);
    out_.packet(-1, kTrackDescriptor, d);
    if (!traced_pids_.count(pid)) continue;  // a waker's process: no counters to show
    const char* kCounterNames[] = {"GPU API calls/s", "GPU API bytes/s", "off-CPU ns/s"};
    const uint64_t kUnits[] = {2, 3, 1};
    for (int k = 0; k < 3; ++k) {
      ProtoWriter c, cd;
      cd.varint(3, kUnits[k]);
      c.varint(1, counter_uuid(pid, k));
      c.string(2, kCounterNames[k]);
      c.varint(5, process_uuid(pid));
      c.message(8, cd);
      out_.packet(-1, kTrackDescriptor, c);
    }
  }
  for (auto& [key, t] : threads_) {
    t.name = comms.count(t.tid)         ? comms[t.tid]
             : waker_names.count(t.tid) ? waker_names[t.tid]
                                        : "tid " + std::to_string(t.tid);
    ProtoWriter th, d;
    th.int64(1, t.pid);
    th.int64(2, t.tid);
    th.string(5, t.name);
    d.varint(1, thread_uuid(t.pid, t.tid));
    d.message(4, th);
    out_.packet(-1, kTrackDescriptor, d);
    if (!t.traced) continue;
    ProtoWriter o;
    o.varint(1, offcpu_uuid(t.pid, t.tid));
    o.string(2, t.name + " off-CPU");
    o.varint(5, thread_uuid(t.pid, t.tid));
    out_.packet(-1, kTrackDescriptor, o);
  }
  return {};
}

// A thread's calls, nested as the thread made them (a runtime call holding its driver calls): a
// call that outlives the one it started in is cut at that one's end and says so.
Status PerfettoWriter::thread_calls(const Thread& t) {
  auto s = store::Stmt::prepare(file_.db(),
                                "SELECT ts, dur, api, ret, stream, bytes, op, addr, blocks, tpb, "
                                "peer, stack_id, rowid, category, py_stack FROM api_calls" +
                                    where_tid(t) + " ORDER BY ts, dur DESC",
                                "reading calls");
  if (!s) return s.error();
  const uint64_t track = thread_uuid(t.pid, t.tid);
  std::vector<int64_t> open;  // end times of the enclosing calls
  sqlite3_stmt* q = s->get();
  while (sqlite3_step(q) == SQLITE_ROW) {
    const int64_t ts = sqlite3_column_int64(q, 0);
    while (!open.empty() && open.back() <= ts) {
      slice_end(open.back(), track);
      open.pop_back();
    }
    ProtoWriter ev;
    auto col = [&](int i) { return sqlite3_column_int64(q, i); };
    auto present = [&](int i) { return sqlite3_column_type(q, i) != SQLITE_NULL; };
    const auto api = names_.apis.find(col(2));
    const std::string name =
        api != names_.apis.end() ? api->second : "api " + std::to_string(col(2));
    annotate(ev, "call_id", col(12));
    if (present(3)) annotate(ev, "ret", col(3));
    if (present(4)) annotate(ev, "stream", hex(col(4)));
    if (present(5)) annotate(ev, "bytes", col(5));
    const auto* cat = sqlite3_column_text(q, 13);
    const std::string category = cat ? reinterpret_cast<const char*>(cat) : "gpu";
    if (present(6) && category == "copy" && names_.copy_kinds.count(col(6)))
      annotate(ev, "direction", names_.copy_kinds[col(6)]);
    if (present(7)) annotate(ev, category == "launch" ? "kernel" : "addr", hex(col(7)));
    if (present(8)) annotate(ev, "blocks", col(8));
    if (present(9)) annotate(ev, "threads_per_block", col(9));
    if (present(10)) annotate(ev, "peer", col(10));
    if (present(11)) {
      const auto site = names_.call_sites.find(col(11));
      if (site != names_.call_sites.end()) annotate(ev, "call_site", site->second);
    }
    // The Python line that made the call: the slice's source location (the UI shows it with the
    // slice) and, with its text, an argument.
    if (present(14)) {
      const auto py = names_.python_lines.find(col(14));
      if (py != names_.python_lines.end()) {
        const PythonLine& l = py->second;
        ev.varint(kEvSourceLocationIid, out_.source_location_iid(l.file, l.function, l.line));
        annotate(ev, "python",
                 l.file + ":" + (l.line >= 0 ? std::to_string(l.line) : "?") + " in " + l.function +
                     (l.source.empty() ? "" : ": " + l.source));
      }
    }
    if (!present(1)) {  // recorded at entry only: a moment, not a slice
      ev.varint(kEvType, kInstant);
      ev.varint(kEvTrack, track);
      named(ev, category, name);
      out_.packet(ts, kTrackEvent, ev);
      continue;
    }
    int64_t end = sat_add(ts, std::max<int64_t>(col(1), 0));
    if (!open.empty() && end > open.back()) {
      annotate(ev, "cut_ns", sat_sub(end, open.back()));
      end = open.back();
    }
    slice_begin(ts, track, name, category.c_str(), ev);
    open.push_back(end);
  }
  while (!open.empty()) {
    slice_end(open.back(), track);
    open.pop_back();
  }
  return {};
}

// Off-CPU intervals: "preempted by X", "blocked in futex, woken by Y"; a wake-up by a thread
// (not by an interrupt on an idle CPU, tid 0) is a flow from an instant on the waker's track to one
// on this track.
Status PerfettoWriter::thread_offcpu(const Thread& t) {
  auto s = store::Stmt::prepare(file_.db(),
                                "SELECT ts, dur, runq, cpu, preempted, next_pid, next_tid, "
                                "next_comm, waker_pid, waker_tid, waker_comm, syscall, holder_comm "
                                "FROM offcpu" +
                                    where_tid(t) + " ORDER BY ts",
                                "reading off-CPU intervals");
  if (!s) return s.error();
  const uint64_t track = offcpu_uuid(t.pid, t.tid);
  sqlite3_stmt* q = s->get();
  auto str = [&](int i) -> std::string {
    if (sqlite3_column_type(q, i) == SQLITE_NULL) return "";
    const auto it = names_.strings.find(sqlite3_column_int64(q, i));
    return it == names_.strings.end() ? "" : it->second;
  };
  while (sqlite3_step(q) == SQLITE_ROW) {
    const int64_t ts = sqlite3_column_int64(q, 0), dur = sqlite3_column_int64(q, 1);
    const int64_t runq = sqlite3_column_int64(q, 2);
    const bool preempted = sqlite3_column_int(q, 4) != 0;
    std::string syscall;
    if (sqlite3_column_type(q, 11) != SQLITE_NULL) {
      const auto it = names_.syscalls.find(sqlite3_column_int64(q, 11));
      syscall = it != names_.syscalls.end() ? it->second : "syscall";
    }
    const std::string culprit = preempted ? str(7) : str(10);
    std::string name = preempted         ? "preempted"
                       : syscall.empty() ? "blocked"
                                         : "blocked in " + syscall;
    if (!culprit.empty()) name += preempted ? " by " + culprit : ", woken by " + culprit;
    ProtoWriter ev;
    annotate(ev, "cpu", sqlite3_column_int64(q, 3));
    annotate(ev, "runq_ns", runq);
    if (!syscall.empty()) annotate(ev, "syscall", syscall);
    if (preempted && !str(7).empty()) annotate(ev, "preempted_by", str(7));
    if (!preempted && !str(10).empty()) annotate(ev, "woken_by", str(10));
    if (!str(12).empty()) annotate(ev, "cpu_held_by", str(12));
    slice_begin(ts, track, name, preempted ? "preempted" : "blocked", ev);
    // The wake-up: from the waker's track at the wake time to this thread's, when it ran again.
    if (!preempted && sqlite3_column_type(q, 9) != SQLITE_NULL) {
      const auto wpid = static_cast<uint32_t>(sqlite3_column_int64(q, 8));
      const auto wtid = static_cast<uint32_t>(sqlite3_column_int64(q, 9));
      if (threads_.count({wpid, wtid})) {
        const uint64_t flow = ++flows_;
        const int64_t at = sat_add(ts, sat_sub(dur, runq));
        wakeups_.push_back({wpid, wtid, at, flow, "wakes " + t.name});
        ProtoWriter r;
        r.varint(kEvType, kInstant);
        r.varint(kEvTrack, track);
        named(r, "wakeup", "woken");
        r.fixed64(kEvTerminatingFlowIds, flow);
        out_.packet(at, kTrackEvent, r);
      }
    }
    slice_end(sat_add(ts, dur), track);
  }
  return {};
}

// The device's own timeline (trace --gpu-activity): one track per process, device and stream,
// under the process, with a slice per kernel (its name), copy ("memcpy HtoD") and memset. A
// stream runs its work in order; a record that starts before the one before it ended (a crafted
// file) is cut to start there and says so, so the slices stay balanced.
Status PerfettoWriter::gpu_tracks() {
  if (!store::run_query(file_, "SELECT 1 FROM gpu_activity LIMIT 0")) return {};  // older file
  std::unordered_map<int64_t, std::string> kernels;
  if (auto st = load_map(file_, "SELECT id, name FROM gpu_kernel_names", kernels); !st) return st;
  std::string w = scope_.where(true, true);
  auto s = store::Stmt::prepare(
      file_.db(),
      "SELECT pid, coalesce(device, 0), coalesce(stream, -1), ts, dur, kind, name_id, "
      "correlation, grid_x, grid_y, grid_z, block_x, block_y, block_z, bytes, copy_kind, "
      "src_kind, dst_kind FROM gpu_activity" +
          (w.empty() ? std::string(" WHERE") : w + " AND") +
          " kind IN ('kernel', 'memcpy', 'memset') ORDER BY pid, 2, 3, ts, rowid",
      "reading gpu_activity");
  if (!s) return s.error();
  sqlite3_stmt* q = s->get();
  auto text = [&](int i) -> std::string {
    const auto* t = sqlite3_column_text(q, i);
    return t ? reinterpret_cast<const char*>(t) : "";
  };
  auto present = [&](int i) { return sqlite3_column_type(q, i) != SQLITE_NULL; };
  std::tuple<int64_t, int64_t, int64_t> key{-1, -1, -2};
  uint64_t track = 0;
  int64_t last_end = INT64_MIN;
  while (sqlite3_step(q) == SQLITE_ROW) {
    const auto pid = static_cast<uint32_t>(sqlite3_column_int64(q, 0));
    const int64_t device = sqlite3_column_int64(q, 1), stream = sqlite3_column_int64(q, 2);
    if (std::tuple<int64_t, int64_t, int64_t>{pid, device, stream} != key) {
      key = {pid, device, stream};
      track = gpu_stream_uuid(++gpu_tracks_);
      last_end = INT64_MIN;
      if (!processes_.count(pid)) {  // a process with device work only
        processes_[pid] = "pid " + std::to_string(pid);
        ProtoWriter p, d;
        p.int64(1, pid);
        p.string(6, processes_[pid]);
        d.varint(1, process_uuid(pid));
        d.message(3, p);
        out_.packet(-1, kTrackDescriptor, d);
      }
      ProtoWriter d;
      d.varint(1, track);
      d.string(2, "GPU " + std::to_string(device) + " stream " + std::to_string(stream));
      d.varint(5, process_uuid(pid));
      out_.packet(-1, kTrackDescriptor, d);
    }
    int64_t ts = sqlite3_column_int64(q, 3);
    const int64_t end = sat_add(ts, std::max<int64_t>(sqlite3_column_int64(q, 4), 0));
    const std::string kind = text(5);
    ProtoWriter ev;
    if (present(7)) annotate(ev, "correlation", sqlite3_column_int64(q, 7));
    std::string name = kind;
    if (kind == "kernel") {
      const auto k = kernels.find(sqlite3_column_int64(q, 6));
      name = present(6) && k != kernels.end() ? k->second : "kernel";
      if (present(8))
        annotate(ev, "grid",
                 std::to_string(sqlite3_column_int64(q, 8)) + "," +
                     std::to_string(sqlite3_column_int64(q, 9)) + "," +
                     std::to_string(sqlite3_column_int64(q, 10)));
      if (present(11))
        annotate(ev, "block",
                 std::to_string(sqlite3_column_int64(q, 11)) + "," +
                     std::to_string(sqlite3_column_int64(q, 12)) + "," +
                     std::to_string(sqlite3_column_int64(q, 13)));
    } else {
      if (present(14)) annotate(ev, "bytes", sqlite3_column_int64(q, 14));
      if (kind == "memcpy" && present(15)) name += " " + text(15);
      if (present(16)) annotate(ev, "src_kind", text(16));
      if (present(17)) annotate(ev, "dst_kind", text(17));
    }
    if (ts < last_end) {
      annotate(ev, "cut_ns", sat_sub(last_end, ts));
      ts = last_end;
    }
    if (end < ts) continue;  // wholly inside the one before it: nothing of it left to show
    slice_begin(ts, track, name, kind == "kernel" ? "gpu_kernel" : "gpu_memory", ev);
    slice_end(end, track);
    last_end = end;
  }
  return {};
}

// The start of each wake-up flow, on a "wake-ups" track under the waker's thread: the wakers'
// instants are found while reading the woken threads' intervals, so they are gathered and
// written per waker in time order (a track's events in order; the thread's own track keeps only
// its calls).
void PerfettoWriter::wake_ups() {
  std::stable_sort(wakeups_.begin(), wakeups_.end(), [](const WakeUp& a, const WakeUp& b) {
    return std::tie(a.pid, a.tid, a.ts) < std::tie(b.pid, b.tid, b.ts);
  });
  for (size_t i = 0; i < wakeups_.size(); ++i) {
    const WakeUp& w = wakeups_[i];
    const uint64_t track = wakeups_uuid(w.pid, w.tid);
    if (i == 0 || wakeups_[i - 1].pid != w.pid || wakeups_[i - 1].tid != w.tid) {
      ProtoWriter d;
      d.varint(1, track);
      d.string(2, threads_.at({w.pid, w.tid}).name + " wake-ups");
      d.varint(5, thread_uuid(w.pid, w.tid));
      out_.packet(-1, kTrackDescriptor, d);
    }
    ProtoWriter ev;
    ev.varint(kEvType, kInstant);
    ev.varint(kEvTrack, track);
    named(ev, "wakeup", w.name);
    ev.fixed64(kEvFlowIds, w.flow);
    out_.packet(w.ts, kTrackEvent, ev);
  }
}

// Per process and second: calls started, their bytes, and off-CPU time, from the per-second
// rollups' definitions over the rows in scope.
Status PerfettoWriter::counters() {
  const std::string in_scope = scope_.where(true, true);
  const std::string start = std::to_string(scope_.start_ns());
  const std::string sql =
      "SELECT pid, second, sum(calls), sum(bytes), sum(off) FROM ("
      " SELECT pid, (ts - " +
      start +
      ") / 1000000000 AS second, 1 AS calls, "
      "coalesce(bytes, 0) AS bytes, 0 AS off FROM api_calls" +
      in_scope + " UNION ALL SELECT pid, (ts - " + start + ") / 1000000000, 0, 0, dur FROM offcpu" +
      in_scope + ") GROUP BY pid, second ORDER BY pid, second";
  auto s = store::Stmt::prepare(file_.db(), sql, "computing counters");
  if (!s) return s.error();
  sqlite3_stmt* q = s->get();
  int64_t last_pid = -1, next_second = 0;
  auto put = [&](uint32_t pid, int64_t second, const int64_t v[3]) {
    for (int k = 0; k < 3; ++k) {
      ProtoWriter ev;
      ev.varint(kEvType, kCounter);
      ev.varint(kEvTrack, counter_uuid(pid, k));
      ev.int64(kEvCounterValue, v[k]);
      int64_t at;
      if (__builtin_mul_overflow(second, 1'000'000'000, &at))
        at = second < 0 ? INT64_MIN : INT64_MAX;
      out_.packet(sat_add(scope_.start_ns(), at), kTrackEvent, ev);
    }
  };
  const int64_t zero[3] = {0, 0, 0};
  while (sqlite3_step(q) == SQLITE_ROW) {
    const auto pid = static_cast<uint32_t>(sqlite3_column_int64(q, 0));
    const int64_t second = sqlite3_column_int64(q, 1);
    if (static_cast<int64_t>(pid) != last_pid) {
      if (last_pid >= 0) put(static_cast<uint32_t>(last_pid), next_second, zero);
      last_pid = pid;
    } else if (second > next_second) {
      put(pid, next_second, zero);  // a second without calls reads 0, not the last value
    }
    const int64_t v[3] = {sqlite3_column_int64(q, 2), sqlite3_column_int64(q, 3),
                          sqlite3_column_int64(q, 4)};
    put(pid, second, v);
    next_second = second + 1;
  }
  if (last_pid >= 0) put(static_cast<uint32_t>(last_pid), next_second, zero);
  return {};
}

Status PerfettoWriter::run(ExportStats& stats) {
  if (auto st = load_map(file_, "SELECT id, name FROM apis", names_.apis); !st) return st;
  if (auto st = load_map(file_, "SELECT id, s FROM strings", names_.strings); !st) return st;
  if (auto st = load_map(file_, "SELECT nr, name FROM syscall_names", names_.syscalls); !st)
    return st;
  if (auto st = load_map(file_, "SELECT id, name FROM copy_kinds", names_.copy_kinds); !st)
    return st;
  if (store::run_query(file_, "SELECT 1 FROM stack_frames LIMIT 0"))
    if (auto st = load_map(file_,
                           "SELECT stack_id, coalesce(symbol, printf('0x%x', addr)) || "
                           "coalesce(' (' || module || ')', '') FROM stack_frames "
                           "WHERE call_site = 1",
                           names_.call_sites);
        !st)
      return st;
  if (auto st = load_python_lines(file_, names_.python_lines); !st) return st;
  if (auto st = descriptors(); !st) return st;
  for (const auto& [key, t] : threads_) {
    if (!t.traced) continue;
    if (auto st = thread_calls(t); !st) return st;
    if (auto st = thread_offcpu(t); !st) return st;
  }
  wake_ups();
  if (auto st = counters(); !st) return st;
  if (auto st = gpu_tracks(); !st) return st;
  stats.rows = slices_;
  stats.tables = threads_.size();
  return {};
}

}  // namespace

Result<ExportStats> export_perfetto(const store::TraceFile& file, const Scope& scope,
                                    const std::string& out_path, const PerfettoOptions& opt) {
  const std::string in_scope = scope.where(true, true);
  auto n = store::run_query(file, "SELECT (SELECT count(*) FROM api_calls" + in_scope +
                                      ") + (SELECT count(*) FROM offcpu" + in_scope + ")");
  if (!n) return n.error();
  uint64_t slices = std::stoull(n->rows.at(0).at(0));
  if (auto g = store::run_query(file, "SELECT count(*) FROM gpu_activity" + in_scope))
    slices += std::stoull(g->rows.at(0).at(0));  // the device's slices (a file may predate them)
  if (slices > opt.max_slices)
    return Error{"the window holds " + std::to_string(slices) +
                     " calls, off-CPU intervals and GPU activity records, more than the Perfetto "
                     "UI shows comfortably (" +
                     std::to_string(opt.max_slices) + ")",
                 "export a part of it with --since 10s, --from/--to or --pid, or raise "
                 "--max-slices (trace_processor reads larger files)",
                 2};
  const std::string tmp = out_path + ".tmp";
  const cleanup::Guard partial(tmp);  // removed if a signal ends the export
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(tmp.c_str(), "wb"), &std::fclose);
  if (!f) return errno_error("cannot create " + out_path, errno, "check the output directory");
  int64_t mono_to_wall = 0;
  if (auto m = store::run_query(
          file, "SELECT CAST(coalesce(mono_to_wall_ns, 0) AS INTEGER) FROM session");
      m && !m->rows.empty())
    mono_to_wall = std::stoll(m->rows[0][0]);
  PerfettoSequence out(f.get(), scope.start_ns(), mono_to_wall);
  ExportStats stats;
  PerfettoWriter w(file, scope, out);
  Status st = w.run(stats);
  const bool flushed = std::fflush(f.get()) == 0 && !out.failed();
  f.reset();
  if (!st || !flushed) {
    std::remove(tmp.c_str());
    if (!st) return st.error();
    return errno_error("cannot write " + out_path);
  }
  if (std::rename(tmp.c_str(), out_path.c_str()) != 0)
    return errno_error("cannot rename " + tmp + " to " + out_path);
  return stats;
}

}  // namespace gpuwhy::exporter
