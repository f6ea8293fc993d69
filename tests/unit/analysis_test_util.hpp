// SPDX-License-Identifier: Apache-2.0
// Builders for the analysis tests: TraceRows by hand (times in ms since the trace start, so a
// test reads like the scenario it plants), and trace files from SQL (schema + lookup tables of
// this build, then the fixture's statements) for loader and golden tests.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "analysis/rows.hpp"
#include "catalog/api_catalog.hpp"
#include "store/chunked_vtab.hpp"
#include "store/embedded_sql.hpp"
#include "store/lookup_tables.hpp"
#include "store/store.hpp"

namespace gpuwhy::analysis::testing {

inline constexpr int64_t kT0 = 1'700'000'000'000'000'000;  // trace start, wall ns
inline constexpr int64_t kMs = 1'000'000;
inline constexpr int64_t kUs = 1'000;

class RowsBuilder {
 public:
  explicit RowsBuilder(int64_t duration_ms = 10'000) {
    rows_.session.status = "complete";
    rows_.session.host = "testhost";
    rows_.session.start_ns = kT0;
    rows_.session.end_ns = kT0 + duration_ms * kMs;
    rows_.window = {kT0, kT0 + duration_ms * kMs, false, kT0, kT0 + duration_ms * kMs};
    rows_.apis = catalog_api_table();
    rows_.syscall_names = {
        {0, "read"}, {1, "write"}, {74, "fsync"}, {202, "futex"}, {257, "openat"}};
  }

  RowsBuilder& process(uint32_t pid, std::string comm) {
    rows_.processes.push_back({pid, kT0, comm, "", ""});
    rows_.threads.push_back({pid, pid, std::move(comm)});
    return *this;
  }
  // The process exited at `at_ms` (processes.exit_ns): in the window, so its end is the trace's.
  RowsBuilder& exited(uint32_t pid, double at_ms) {
    for (ProcessRow& p : rows_.processes)
      if (p.pid == pid) p.exit_ns = at(at_ms);
    return *this;
  }
  // The process was running before the window began (a trace attached to a running job).
  RowsBuilder& started_before(uint32_t pid) {
    for (ProcessRow& p : rows_.processes)
      if (p.pid == pid) p.start_ns = kT0 - 60'000 * kMs;
    return *this;
  }
  RowsBuilder& thread(uint32_t pid, uint32_t tid, std::string comm) {
    rows_.threads.push_back({pid, tid, std::move(comm)});
    return *this;
  }

  // A call at `at_ms` lasting `dur_ns`. Copies take bytes/direction/dst/src.
  RowsBuilder& call(uint32_t pid, uint32_t tid, std::string_view api, double at_ms, int64_t dur_ns,
                    uint64_t bytes = 0, int dir = -1, uint64_t dst = 0, uint64_t src = 0) {
    const ApiInfo* info = find_api(api);
    CallRow c;
    c.ts = at(at_ms);
    c.dur = dur_ns;
    c.pid = pid;
    c.tid = tid;
    c.api = info ? info->id : 0;
    c.dir = static_cast<int8_t>(dir);
    rows_.set_ext(c, make_call_ext(info ? info->category : kUnknownCategory, bytes, dst, src, 0));
    rows_.calls.push_back(c);
    return *this;
  }
  // The last call failed with `ret`.
  RowsBuilder& failed(int32_t ret) {
    CallRow& c = rows_.calls.back();
    CallExt e = rows_.ext(c);
    e.ret = ret;
    rows_.set_ext(c, e);
    return *this;
  }

  RowsBuilder& preempt(uint32_t pid, uint32_t tid, double at_ms, int64_t dur_ns, uint32_t by_pid,
                       std::string_view by_comm) {
    OffCpuRow o{at(at_ms), dur_ns, dur_ns, pid, tid, by_pid, by_pid, intern(by_comm), true};
    rows_.offcpu.push_back(o);
    return *this;
  }
  RowsBuilder& block(uint32_t pid, uint32_t tid, double at_ms, int64_t dur_ns, uint32_t waker_pid,
                     uint32_t waker_tid, std::string_view waker_comm, int64_t runq_ns = 0) {
    OffCpuRow o{at(at_ms),          dur_ns, runq_ns, pid, tid, waker_pid, waker_tid,
                intern(waker_comm), false};
    rows_.offcpu.push_back(o);
    return *this;
  }
  // The last off-CPU interval ended by taking the CPU back from this task (pid 0: the idle
  // task), as recorded at switch-in since ABI 2.
  RowsBuilder& held_by(uint32_t pid, uint32_t tid, std::string_view comm) {
    OffCpuRow& o = rows_.offcpu.back();
    o.holder_pid = pid;
    o.holder_tid = tid;
    o.holder_comm = intern(comm);
    o.holder_recorded = true;
    return *this;
  }
  // A CPU sample at `at_ms` standing for `period_ns`, in system call `nr` (-1: none).
  RowsBuilder& sample(uint32_t pid, uint32_t tid, double at_ms, int64_t period_ns, int16_t nr) {
    rows_.cpu_samples.push_back({at(at_ms), period_ns, pid, tid, nr, nr >= 0});
    return *this;
  }
  // The last off-CPU interval began in system call `nr` (ABI 3's offcpu.syscall).
  RowsBuilder& in_syscall(int16_t nr) {
    rows_.offcpu.back().syscall = nr;
    return *this;
  }
  RowsBuilder& syscall(uint32_t pid, uint32_t tid, uint32_t nr, double at_ms, int64_t dur_ns) {
    rows_.syscalls.push_back({at(at_ms), dur_ns, pid, tid, nr, 0});
    return *this;
  }
  RowsBuilder& block_io(uint32_t pid, uint32_t tid, double at_ms, int64_t dur_ns, uint64_t bytes) {
    rows_.block_io.push_back({at(at_ms), dur_ns, pid, tid, bytes, 0, 8});
    return *this;
  }
  RowsBuilder& reclaim(uint32_t pid, uint32_t tid, double at_ms, int64_t dur_ns, uint64_t pages) {
    rows_.reclaim.push_back({at(at_ms), dur_ns, pid, tid, pages});
    return *this;
  }
  RowsBuilder& retransmit(double at_ms, std::string daddr, uint32_t dport) {
    TcpRetransRow t;
    t.ts = at(at_ms);
    t.saddr = "10.0.0.1";
    t.sport = 40000;
    t.daddr = std::move(daddr);
    t.dport = dport;
    rows_.tcp.push_back(std::move(t));
    return *this;
  }
  RowsBuilder& loss(std::string source, std::string cause, uint64_t n) {
    rows_.losses.push_back({std::move(source), std::move(cause), n});
    return *this;
  }
  // What the device ran for `pid` (trace --gpu-activity's gpu_activity rows).
  RowsBuilder& device_work(uint32_t pid, DeviceWork kind, double at_ms, double end_ms,
                           int32_t device = 0, int64_t stream = 7) {
    rows_.device_activity.push_back({at(at_ms), at(end_ms) - at(at_ms), pid, device, stream, kind});
    return *this;
  }
  TraceRows& rows() { return rows_; }
  TraceRows build() {
    TraceRows r = rows_;
    prepare_rows(r);
    return r;
  }

  static int64_t at(double ms) { return kT0 + static_cast<int64_t>(ms * kMs); }

 private:
  uint32_t intern(std::string_view s) {
    for (const auto& [id, v] : rows_.strings)
      if (v == s) return id;
    const uint32_t id = static_cast<uint32_t>(rows_.strings.size() + 1);
    rows_.strings[id] = std::string(s);
    return id;
  }
  TraceRows rows_;
};

// Creates a trace file (schema kSchemaVersion) at `path` with this build's schema and lookup
// tables, then runs `fixture_sql`. Returns an empty string on success, else the error.
inline std::string make_trace_db(const std::string& path, const std::string& fixture_sql) {
  std::remove(path.c_str());
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return "cannot create " + path;
  std::string schema;
  for (const EmbeddedSql& f : embedded_sql())
    if (f.name == "schema.sql") schema = std::string(f.text);
  std::string err;
  char* msg = nullptr;
  auto run = [&](const std::string& sql, const char* what) {
    if (!err.empty()) return;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
      err = std::string(what) + ": " + (msg ? msg : "?");
      sqlite3_free(msg);
    }
  };
  run("BEGIN", "begin");
  run(schema, "schema");
  // The event tables exist as virtual tables over their chunks: fixtures INSERT through them.
  if (err.empty()) {
    if (auto st = store::attach_chunked_tables(db); !st) err = "event tables: " + st.error().what;
  }
  if (err.empty()) {
    if (auto st = store::fill_lookup_tables(db); !st) err = "lookup tables: " + st.error().what;
  }
  run(fixture_sql, "fixture");
  run("PRAGMA user_version=" + std::to_string(store::kSchemaVersion) + "; COMMIT", "commit");
  sqlite3_close(db);
  return err;
}

}  // namespace gpuwhy::analysis::testing
