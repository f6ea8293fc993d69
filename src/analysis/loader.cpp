// SPDX-License-Identifier: Apache-2.0
#include "analysis/loader.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_set>

#include "analysis/device_activity.hpp"
#include "analysis/parallel.hpp"
#include "analysis/sql_scan.hpp"
#include "analysis/units.hpp"
#include "core/phase_timer.hpp"
#include "store/chunk_codec.hpp"
#include "store/chunk_index.hpp"
#include "store/chunked_tables.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::analysis {
namespace {

// Tables a file may predate (event_counts, probe_families); unreadable counts as absent.
bool has_table(sqlite3* db, std::string_view name) {
  const Result<bool> has = store::has_table(db, name);
  return has && has.value();
}

// The latest event end among the last chunks written to each table: chunks arrive in near time
// order, so the tail of each chunk table holds the newest rows, and reading it costs the same on
// a 10 GB file as on a 10 kB one.
int64_t last_event_by_scan(sqlite3* db) {
  int64_t last = 0;
  for (const store::ChunkedTable& t : store::chunked_tables()) {
    const std::string sql = "SELECT max(end_max) FROM (SELECT end_max FROM " + t.chunks() +
                            " ORDER BY id DESC LIMIT 256)";
    (void)each_row(db, sql, t.chunks(), [&](Query& q) { last = std::max(last, q.i64(0)); });
  }
  (void)each_row(db,
                 "SELECT max(ts) FROM (SELECT ts FROM tcp_retrans ORDER BY rowid DESC LIMIT 4096)",
                 "tcp_retrans", [&](Query& q) { last = std::max(last, q.i64(0)); });
  return last;
}

// Column positions of a chunked table, by name: the loader reads chunks without SQL. The columns
// asked for are the ones a scan decodes (`want`): the rest are stepped over.
struct Columns {
  const store::ChunkedTable* table;
  uint64_t want = 0;
  uint32_t operator[](std::string_view name) {
    for (uint32_t i = 0; i < table->columns.size(); ++i)
      if (table->columns[i] == name) {
        want |= uint64_t{1} << i;
        return i;
      }
    return UINT32_MAX;  // reads as NULL (Chunk::value/is_null past the stored columns)
  }
};

// Chunks a scan skipped because they are damaged (checksum mismatch, bad encoding): their rows
// are missing and explain says where. Set by load_trace for its scans (worker threads append
// under the mutex).
struct DamageLog {
  std::mutex mu;
  std::vector<DamagedChunk>* out = nullptr;
  std::atomic<bool> unchecked{false};  // a chunk without a checksum was read (format 1 or 2)
};
thread_local DamageLog* g_damage = nullptr;

// How many of the rows a scan decodes it keeps: nearly all (a window's events), or a few (the
// allocations before the window).
enum class Keep { Most, Few };

// Where one part of a scan puts the rows it keeps: straight into its share of the output (Most:
// sized once, never copied) or into a vector of its own (Few: no memory for rows it drops).
template <class Row>
struct PartRows {
  size_t part = 0;       // which part of the scan (0 .. parts - 1)
  Row* at = nullptr;     // Keep::Most
  size_t n = 0;          // rows at `at`
  std::vector<Row> own;  // Keep::Few
  void push_back(const Row& r) {
    if (at)
      at[n++] = r;
    else
      own.push_back(r);
  }
  size_t size() const { return at ? n : own.size(); }  // the next row's index in this part
};

// Decodes every chunk of `table` that overlaps [from, to) and hands each row to
// each(const Chunk&, uint32_t row, PartRows<Row>&), which appends what it keeps (or each chunk
// to each(const Chunk&, PartRows<Row>&), for a loop that reads columns as arrays). Threads are
// split into contiguous tid ranges of about equal row counts, one per connection, and each range
// is read in (tid, ts_min) order, so the result comes out sorted by (tid, ts) whenever a thread's
// chunks do not overlap in time (the usual case), and prepare_rows' sort finds nothing to do.
// The chunks come from `index` (read_chunk_index) and are read by id.
// `part_start`, when given, receives where each part's rows begin in `out`.
// `only`: the pids whose chunks are read (a batch's, or --pid's), ascending; empty: every one.
// Chunks it rules out are never read, let alone decoded.
template <class Row, class A, class Fn>
Status scan_chunks(ScanPool& pool, const ChunkIndex& index, const Columns& cols, int64_t from,
                   int64_t to, Keep keep, Fn each, std::vector<Row, A>& out,
                   std::vector<size_t>* part_start = nullptr,
                   const std::vector<uint32_t>& only = {}) {
  const store::ChunkedTable& table = *cols.table;
  const std::string chunks = table.chunks();
  if (part_start) part_start->clear();
  const std::vector<ChunkRef>* all = index.find(table.name);
  if (!all) {  // the file has no such table: the error SQLite gives for it
    return each_row(pool.connection(0), "SELECT rows FROM " + chunks, chunks, [](Query&) {});
  }
  std::vector<const ChunkRef*> sel;  // in (tid, ts_min, id) order
  int64_t total = 0;
  for (const ChunkRef& c : *all) {
    if (c.end_max < from || c.ts_min >= to) continue;
    if (!only.empty() && !std::binary_search(only.begin(), only.end(), c.pid)) continue;
    sel.push_back(&c);
    total += c.rows;
  }
  if (sel.empty()) return {};
  // [first, end) of `sel` per part, and the rows it may keep (for one allocation). A part holds
  // whole threads.
  struct Part {
    size_t first = 0, end = 0;
    int64_t rows = 0;
  };
  std::vector<Part> parts;
  const size_t n_parts = std::min<size_t>(pool.size(), total >= 100'000 ? pool.size() : 1);
  const int64_t share = (total + static_cast<int64_t>(n_parts) - 1) / static_cast<int64_t>(n_parts);
  for (size_t i = 0; i < sel.size(); ++i) {
    const bool new_tid = i == 0 || sel[i]->tid != sel[i - 1]->tid;
    if (parts.empty() || (new_tid && parts.back().rows >= share && parts.size() < n_parts))
      parts.push_back({i, i});
    parts.back().end = i + 1;
    parts.back().rows += sel[i]->rows;
  }
  const size_t base = out.size();
  if (keep == Keep::Most) grow_parallel(out, static_cast<size_t>(total));
  std::vector<PartRows<Row>> got(parts.size());
  size_t offset = base;
  for (size_t k = 0; k < parts.size(); ++k) {
    got[k].part = k;
    if (keep == Keep::Most) got[k].at = out.data() + offset;
    offset += static_cast<size_t>(parts[k].rows);
  }
  std::vector<Status> status(parts.size());
  const std::string sql =
      "SELECT data, rows, tid, ts_min, end_max FROM " + chunks + " WHERE id = ?1";
  DamageLog* damage = g_damage;
  auto work = [&](size_t k) {
    Query q(pool.connection(k), sql);
    if (!q.ok()) {
      status[k] = q.error(chunks);
      return;
    }
    store::Chunk c;
    for (size_t i = parts[k].first; i < parts[k].end; ++i) {
      const ChunkRef& ref = *sel[i];
      q.reset();
      q.bind(1, ref.id);
      if (q.step() != SQLITE_ROW) {
        if (q.failed()) break;
        continue;  // a live flight recorder's file aged it out since the index was read
      }
      // An id used again for a newer chunk (its predecessor aged out): not the chunk indexed.
      if (q.i64(2) != ref.tid || q.i64(3) != ref.ts_min || q.i64(1) != ref.rows) continue;
      if (Status d = store::decode_chunk(q.blob(0), c, cols.want); !d) {
        if (!damage || !store::chunk_damaged(d.error())) {
          status[k] = d;
          return;
        }
        std::lock_guard lock(damage->mu);
        damage->out->push_back({table.name, q.i64(2), q.i64(3), q.i64(4), d.error().what});
        continue;
      }
      if (damage && !q.blob(0).empty() && static_cast<uint8_t>(q.blob(0)[0]) < 3)
        damage->unchecked.store(true, std::memory_order_relaxed);
      if (c.rows != q.i64(1)) {  // the parts were sized from the rows column
        status[k] =
            Error{"corrupt event chunk in the trace file: " + chunks + " says " +
                      std::to_string(q.i64(1)) + " rows, its data holds " + std::to_string(c.rows),
                  "the file was damaged (copy it again, or re-record the trace)"};
        return;
      }
      // Rows beyond the part's share are never written past it (the checks above keep every
      // chunk to its indexed size: this one only guards the buffer).
      if (keep == Keep::Most && got[k].n + c.rows > static_cast<size_t>(parts[k].rows)) continue;
      if constexpr (std::is_invocable_v<Fn, const store::Chunk&, PartRows<Row>&>) {
        each(c, got[k]);  // a loop over the whole chunk, its columns read as arrays
      } else {
        for (uint32_t r = 0; r < c.rows; ++r) each(c, r, got[k]);
      }
    }
    if (q.failed()) status[k] = q.error(chunks);
  };
  std::vector<std::thread> threads;
  for (size_t k = 1; k < parts.size(); ++k) threads.emplace_back(work, k);
  work(0);
  for (std::thread& t : threads) t.join();
  for (const Status& s : status)
    if (!s) {
      out.resize(base);
      return s;
    }
  // Close up the parts: each one's rows follow the previous one's.
  size_t end = base;
  for (const PartRows<Row>& g : got) {
    if (part_start) part_start->push_back(end);
    if (keep == Keep::Few) {
      out.insert(out.end(), g.own.begin(), g.own.end());
    } else if (g.at != out.data() + end) {
      std::move(g.at, g.at + g.n, out.data() + end);
    }
    end += g.size();
  }
  out.resize(end);
  return {};
}

// The CallExt of the calls a scan keeps, held per part until the rows have their final places.
class PendingExt {
 public:
  explicit PendingExt(size_t parts) : parts_(parts) {}
  void add(const PartRows<CallRow>& part, const CallExt& e) {
    parts_[part.part].emplace_back(part.size(), e);
  }
  // Moves them to rows.call_ext and points each of `calls` (placed by scan_chunks at
  // `part_start`) at its own.
  void attach(CallRows& calls, const std::vector<size_t>& part_start, TraceRows& rows) {
    size_t total = rows.call_ext.size();
    for (const auto& part : parts_) total += part.size();
    rows.call_ext.reserve(total);  // grown once: doubling faulted in and copied it twice over
    for (size_t k = 0; k < part_start.size(); ++k) {
      for (const auto& [row, e] : parts_[k]) rows.set_ext(calls[part_start[k] + row], e);
    }
  }

 private:
  std::vector<std::vector<std::pair<size_t, CallExt>>> parts_;  // (row in its part, ext)
};

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
  st = each_row(db, "SELECT pid, start_ns, comm, exe, cmdline, coalesce(exit_ns, 0) FROM processes",
                "processes", [&](Query& q) {
                  rows.processes.push_back({static_cast<uint32_t>(q.i64(0)), q.i64(1), q.text(2),
                                            q.text(3), q.text(4), q.i64(5)});
                });
  if (!st) return st;
  // threads.cpus_allowed came with ABI 5: an older file's statement fails, and goes without.
  for (const char* cpus : {"coalesce(cpus_allowed, 0)", "0"}) {
    rows.threads.clear();
    st = each_row(
        db, std::string("SELECT pid, tid, comm, ") + cpus + " FROM threads ORDER BY first_seen_ns",
        "threads", [&](Query& q) {
          rows.threads.push_back({static_cast<uint32_t>(q.i64(0)), static_cast<uint32_t>(q.i64(1)),
                                  q.text(2), static_cast<uint32_t>(q.i64(3))});
        });
    if (st) break;
  }
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
    if (!st) return st;
  }
  if (has_table(db, "stack_frames")) {
    // The frame of each stack the agent marked as its call site: where the application called.
    st = each_row(db,
                  "SELECT stack_id, coalesce(symbol, ''), coalesce(module, ''), "
                  "coalesce(offset, addr) FROM stack_frames WHERE call_site = 1",
                  "stack_frames", [&](Query& q) {
                    const auto id = static_cast<int32_t>(q.i64(0));
                    const std::string module = q.text(2);
                    const std::string base = module.substr(module.rfind('/') + 1);
                    char off[24];
                    std::snprintf(off, sizeof off, "+0x%llx",
                                  static_cast<unsigned long long>(q.i64(3)));
                    const std::string where = q.text(1).empty() ? base + off : q.text(1);
                    rows.call_sites[id] = base.empty() ? where : where + " in " + base;
                  });
    if (!st) return st;
  }
  if (has_table(db, "python_frames")) {
    // The innermost Python frame of each stack: the line that made the call.
    st = each_row(db,
                  "SELECT py_stack_id, coalesce(file, ''), coalesce(function, ''), "
                  "coalesce(line, -1), coalesce(source, '') FROM python_frames WHERE depth = 0",
                  "python_frames", [&](Query& q) {
                    PySite site{q.text(1), q.text(2), static_cast<int32_t>(q.i64(3)), q.text(4)};
                    if (!site.file.empty())
                      rows.python_sites[static_cast<int32_t>(q.i64(0))] = std::move(site);
                  });
    if (!st) return st;
  }
  if (has_table(db, "python_processes")) {
    st = each_row(db,
                  "SELECT pid, interpreter, coalesce(version, ''), coalesce(detail, '') "
                  "FROM python_processes WHERE supported = 0 ORDER BY pid",
                  "python_processes", [&](Query& q) {
                    rows.python_unsupported.push_back(
                        {static_cast<uint32_t>(q.i64(0)), q.text(1), q.text(2), q.text(3)});
                  });
    if (!st) return st;
  }
  // python_processes.runtime_addr/size came after the table: an older file's statement fails,
  // and goes without (no wait is then known to be for the GIL).
  if (has_table(db, "python_processes")) {
    (void)each_row(db,
                   "SELECT pid, runtime_addr, runtime_size FROM python_processes "
                   "WHERE runtime_size > 0",
                   "python_processes", [&](Query& q) {
                     rows.python_runtime[static_cast<uint32_t>(q.i64(0))] = {
                         static_cast<uint64_t>(q.i64(1)), static_cast<uint64_t>(q.i64(2))};
                   });
  }
  if (has_table(db, "cpu_limits")) {
    st = each_row(db, "SELECT pid, cgroup, quota_us, period_us, version FROM cpu_limits",
                  "cpu_limits", [&](Query& q) {
                    rows.cpu_limits[static_cast<uint32_t>(q.i64(0))] = {
                        q.text(1), q.i64(2), q.i64(3), static_cast<int>(q.i64(4))};
                  });
    if (!st) return st;
  }
  if (has_table(db, "probe_families")) {
    st = each_row(db,
                  "SELECT family, state, coalesce(detail, '') FROM probe_families "
                  "WHERE state <> 'on' ORDER BY family",
                  "probe_families", [&](Query& q) {
                    rows.families_off.push_back({q.text(0), q.text(1), q.text(2)});
                  });
  }
  return st;
}

std::string pid_list(sqlite3* db) {
  std::string out;
  (void)each_row(
      db,
      "SELECT c.pid, (SELECT comm FROM processes p WHERE p.pid = c.pid "
      "ORDER BY start_ns DESC LIMIT 1) FROM (SELECT DISTINCT pid FROM api_calls_chunks) c "
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
                          "SELECT 1 FROM api_calls_chunks WHERE pid = ?1 LIMIT 1"}) {
    (void)each_row(db, sql, "pid", [&](Query&) { found = true; }, {pid});
    if (found) break;
  }
  return found;
}

std::string window_text(const TimeWindow& w) {
  return fmt_rel(w.start_ns - w.trace_start_ns) + " .. " + fmt_rel(w.end_ns - w.trace_start_ns);
}

// A chunk whose index row fails its checksum, for the damage report: where its own rows say it
// lies (its data has a checksum of its own), else where the damaged row says.
DamagedChunk index_damage(sqlite3* db, const store::ChunkedTable& t, int64_t id) {
  const std::string chunks = t.chunks();
  DamagedChunk d{t.name, 0, 0, 0, store::chunk_index_damaged(chunks, id).what};
  (void)each_row(db, "SELECT tid, ts_min, end_max, data FROM " + chunks + " WHERE id = ?1", chunks,
                 [&](Query& q) {
                   d.tid = q.i64(0);
                   d.ts_min = q.i64(1);
                   d.end_max = q.i64(2);
                   store::Chunk c;
                   if (!store::decode_chunk(q.blob(3), c) || c.rows == 0) return;
                   d.tid = c.value(t.tid, 0);
                   d.ts_min = INT64_MAX;
                   d.end_max = INT64_MIN;
                   for (uint32_t r = 0; r < c.rows; ++r) {
                     const int64_t ts = c.value(t.ts, r);
                     d.ts_min = std::min(d.ts_min, ts);
                     int64_t end;  // saturating, as the writer's end_max
                     if (__builtin_add_overflow(ts, c.value(t.dur, r), &end)) end = INT64_MAX;
                     d.end_max = std::max(d.end_max, end);
                   }
                 },
                 {id});
  return d;
}

}  // namespace

Result<std::shared_ptr<const ChunkIndex>> read_chunk_index(sqlite3* db) {
  auto index = std::make_shared<ChunkIndex>();
  for (const store::ChunkedTable& t : store::chunked_tables()) {
    const std::string chunks = t.chunks();
    if (!has_table(db, chunks)) continue;
    std::vector<ChunkRef>& refs = index->tables[std::string(t.name)];
    auto crc = store::index_crc_column(db, chunks);
    if (!crc) return crc.error();
    std::vector<int64_t> bad;  // ids whose index row fails its checksum
    // In rowid order: the table's pages about in file order (read ahead), not the index's.
    Status st =
        each_row(db, "SELECT id, pid, tid, ts_min, end_max, rows, " + *crc + " FROM " + chunks,
                 chunks, [&](Query& q) {
                   const store::ChunkKey k{q.i64(1), q.i64(2), q.i64(3), q.i64(4), q.i64(5)};
                   if (*crc != "NULL" && !store::index_crc_matches(k, q.i64(6))) {
                     bad.push_back(q.i64(0));
                     return;
                   }
                   refs.push_back({q.i64(0), k.tid, k.ts_min, k.end_max, k.rows,
                                   static_cast<uint32_t>(k.pid)});
                 });
    if (!st) return st.error();
    for (int64_t id : bad) index->damaged.push_back(index_damage(db, t, id));
    if (*crc == "NULL" && !refs.empty()) index->unchecked = true;
    std::sort(refs.begin(), refs.end(), [](const ChunkRef& a, const ChunkRef& b) {
      return std::tie(a.tid, a.ts_min, a.id) < std::tie(b.tid, b.ts_min, b.id);
    });
  }
  return std::shared_ptr<const ChunkIndex>(std::move(index));
}

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
  if (opt.reuse) {  // LoadOptions::reuse
    TraceRows& old = *opt.reuse;
    auto take = [](auto& to, auto& from) {
      to = std::move(from);
      to.clear();
    };
    take(rows.calls, old.calls);
    take(rows.call_ext, old.call_ext);
    take(rows.memory_calls, old.memory_calls);
    take(rows.offcpu, old.offcpu);
    take(rows.syscalls, old.syscalls);
    take(rows.cpu_samples, old.cpu_samples);
    take(rows.cpu_runs, old.cpu_runs);
    take(rows.wait_migrations, old.wait_migrations);
  }
  DamageLog damage;
  damage.out = &rows.damaged;
  g_damage = &damage;
  struct Reset {
    ~Reset() { g_damage = nullptr; }
  } reset;
  Status st = each_row(db,
                       "SELECT status, host, kernel, agent_version, command_line, "
                       "coalesce(pid_filter, ''), start_ns, end_ns, last_commit_ns, last_event_ns, "
                       "abi_version FROM session WHERE id = 1",
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
                         s.abi_version = q.i64(10);
                       });
  if (!st) return st.error();
  // session.online_cpus came with ABI 5; an older file has no such column.
  (void)each_row(db, "SELECT coalesce(online_cpus, 0) FROM session WHERE id = 1", "session",
                 [&](Query& q) { rows.session.online_cpus = static_cast<uint32_t>(q.i64(0)); });
  auto bounds = trace_bounds(db);
  if (!bounds) return bounds.error();
  auto window = resolve_window(opt.window, bounds->trace_start_ns, bounds->trace_end_ns,
                               bounds->end_is_last_event);
  if (!window) return window.error();
  rows.window = window.value();
  // A flight recorder's file: what is older than its window start was aged out (only the chunks
  // that straddle it keep a little), so the report starts there.
  if (has_table(db, "retention")) {
    TraceRows::AgedOut& a = rows.aged_out;
    st = each_row(db,
                  "SELECT coalesce(window_start_ns, 0), events, coalesce(keep_ns, 0), "
                  "coalesce(max_bytes, 0) FROM retention WHERE id = 1",
                  "retention", [&](Query& q) {
                    a.recorder = true;
                    a.window_start_ns = q.i64(0);
                    a.events = static_cast<uint64_t>(q.i64(1));
                    a.keep_ns = q.i64(2);
                    a.max_bytes = static_cast<uint64_t>(q.i64(3));
                  });
    if (!st) return st.error();
    if (a.window_start_ns > rows.window.start_ns && a.window_start_ns < rows.window.end_ns)
      rows.window.start_ns = a.window_start_ns;
  }
  if (st = load_lookups(db, rows); !st) return st.error();

  const std::unordered_set<uint32_t> wanted(opt.pids.begin(), opt.pids.end());
  // The chunks of other processes are not read at all: a batch's (explain_batched.hpp), or those
  // outside --pid.
  std::vector<uint32_t> only = opt.batch.empty() ? opt.pids : opt.batch;
  std::sort(only.begin(), only.end());
  for (uint32_t pid : opt.pids) {
    if (!pid_in_trace(db, pid)) {
      const std::string list = pid_list(db);
      return Error{"pid " + std::to_string(pid) + " is not in this trace",
                   list.empty() ? "the trace has no GPU API calls" : "GPU processes: " + list, 2};
    }
  }
  const int64_t from = rows.window.start_ns, to = rows.window.end_ns;

  // A call belongs to the window it starts in. Allocations, frees and device selections before
  // the window are kept too (memory_calls): pinned host buffers are usually allocated once, and a
  // thread's device chosen once, long before the window.
  std::vector<uint8_t> is_memory_api(rows.apis.size(), 0);
  for (size_t id = 0; id < rows.apis.size(); ++id) {
    const Category c = rows.apis[id].cat;
    is_memory_api[id] =
        c == Category::Alloc || c == Category::Free || c == Category::Init || c == Category::Device;
  }
  auto memory_api = [&](uint16_t api) { return api < is_memory_api.size() && is_memory_api[api]; };
  PhaseTimer timer("load");
  std::shared_ptr<const ChunkIndex> chunk_index = opt.chunks;
  if (!chunk_index) {
    auto read = read_chunk_index(db);
    if (!read) return read.error();
    chunk_index = std::move(read.value());
    timer.lap("chunk index");
  }
  const ChunkIndex& index = *chunk_index;
  rows.damaged.insert(rows.damaged.end(), index.damaged.begin(), index.damaged.end());
  rows.unchecked_index = index.unchecked;
  ScanPool pool(db, std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  Columns ac{store::find_chunked_table("api_calls")};
  const uint32_t c_ts = ac["ts"], c_dur = ac["dur"], c_pid = ac["pid"], c_tid = ac["tid"],
                 c_api = ac["api"], c_ret = ac["ret"], c_bytes = ac["bytes"], c_op = ac["op"],
                 c_addr = ac["addr"], c_addr2 = ac["addr2"], c_stack = ac["stack_id"],
                 c_peer = ac["peer"], c_nranks = ac["nranks"], c_py = ac["py_stack"];
  std::vector<size_t> part_start;
  PendingExt window_ext(pool.size());
  // A chunk's api_calls columns as arrays, read once per chunk: the per-row reads through
  // Chunk::value() were a tenth of explain's instructions. Categories by api id, once.
  // With the file's API table (a file without one gets the catalogue's in prepare_rows, which
  // then fills the calls itself), each call is filled in as it is read, as prepare_rows would
  // (fill_call): one pass over millions of calls fewer.
  std::vector<Category> cat_of(rows.apis.size(), kUnknownCategory);
  std::vector<int8_t> fixed_dir_of(rows.apis.size(), -1);
  for (size_t id = 0; id < rows.apis.size(); ++id) {
    cat_of[id] = rows.api(static_cast<uint16_t>(id)).cat;
    fixed_dir_of[id] = rows.api(static_cast<uint16_t>(id)).fixed_dir;
  }
  const bool fill = !rows.apis.empty();
  struct CallColumns {
    const int64_t *ts, *dur, *pid, *tid, *api, *op, *ret, *bytes, *addr, *addr2, *stack, *peer,
        *nranks, *py;
    const uint8_t *has_op, *has_stack, *has_py;
  };
  auto columns_of = [&](const store::Chunk& k) {
    return CallColumns{k.values_of(c_ts),     k.values_of(c_dur),   k.values_of(c_pid),
                       k.values_of(c_tid),    k.values_of(c_api),   k.values_of(c_op),
                       k.values_of(c_ret),    k.values_of(c_bytes), k.values_of(c_addr),
                       k.values_of(c_addr2),  k.values_of(c_stack), k.values_of(c_peer),
                       k.values_of(c_nranks), k.values_of(c_py),    k.present_of(c_op),
                       k.present_of(c_stack), k.present_of(c_py)};
  };
  // Returns the row it appended.
  auto keep_call = [&](const CallColumns& k, uint32_t r, PartRows<CallRow>& out,
                       PendingExt& pending) {
    CallRow c;
    c.ts = k.ts[r];
    c.dur = k.dur[r];
    c.pid = static_cast<uint32_t>(k.pid[r]);
    c.tid = static_cast<uint32_t>(k.tid[r]);
    c.api = static_cast<uint16_t>(k.api[r]);
    c.dir = k.has_op[r] ? static_cast<int8_t>(std::clamp<int64_t>(k.op[r], -1, 127)) : int8_t{-1};
    const Category cat = c.api < cat_of.size() ? cat_of[c.api] : kUnknownCategory;
    if (fill) fill_call(c, cat, c.api < fixed_dir_of.size() ? fixed_dir_of[c.api] : int8_t{-1});
    // A communicator's set-up keeps its rank and size where a copy keeps its address and bytes.
    const bool init = cat == Category::Init;
    CallExt e = make_call_ext(cat, static_cast<uint64_t>(init ? k.nranks[r] : k.bytes[r]),
                              static_cast<uint64_t>(init ? k.peer[r] : k.addr[r]),
                              static_cast<uint64_t>(k.addr2[r]), static_cast<int32_t>(k.ret[r]));
    if (k.has_stack[r]) e.stack_id = static_cast<int32_t>(k.stack[r]);
    if (k.has_py[r]) e.pystack_id = static_cast<int32_t>(k.py[r]);
    if (!e.empty()) pending.add(out, e);
    out.push_back(c);
    return c;
  };
  // What prepare_rows' pass over the calls would find, per part of the scan: the copies whose
  // direction their addresses must tell (by index in the part), and whether the part's calls
  // are in (tid, ts) order. And what a pass of the loader's own would: the processes that made
  // calls (a pid where it changes) and the allocations and frees among them (by index).
  struct PartFill {
    std::vector<size_t> default_copies;
    bool sorted = true;
    uint32_t last_tid = 0;
    int64_t last_ts = INT64_MIN;
    std::vector<uint32_t> pids;
    std::vector<size_t> memory;
  };
  std::vector<PartFill> part_fill(pool.size());
  auto keep_window = [&](const store::Chunk& chunk, PartRows<CallRow>& out) {
    const CallColumns k = columns_of(chunk);
    PartFill& pf = part_fill[out.part];
    for (uint32_t r = 0; r < chunk.rows; ++r) {
      if (k.ts[r] < from || k.ts[r] >= to) continue;
      if (!wanted.empty() && !wanted.count(static_cast<uint32_t>(k.pid[r]))) continue;
      const size_t at = out.size();
      const CallRow c = keep_call(k, r, out, window_ext);
      if (pf.pids.empty() || c.pid != pf.pids.back()) pf.pids.push_back(c.pid);
      if (memory_api(c.api)) pf.memory.push_back(at);
      if (!fill) continue;
      if (c.cat == Category::Copy && c.dir == static_cast<int8_t>(CopyDir::Default))
        pf.default_copies.push_back(at);
      if (c.tid < pf.last_tid || (c.tid == pf.last_tid && c.ts < pf.last_ts)) pf.sorted = false;
      pf.last_tid = c.tid;
      pf.last_ts = c.ts;
    }
  };
  st = scan_chunks(pool, index, ac, from, to, Keep::Most, keep_window, rows.calls, &part_start,
                   only);
  if (!st) return st.error();
  window_ext.attach(rows.calls, part_start, rows);
  if (fill) {
    TraceRows::CallsFilled f;
    for (size_t k = 0; k < part_start.size(); ++k) {
      const size_t first = part_start[k];
      for (size_t i : part_fill[k].default_copies) f.default_copies.push_back(first + i);
      f.sorted = f.sorted && part_fill[k].sorted;
      // Where one part's calls meet the next's.
      if (k > 0 && first > 0 && first < rows.calls.size() &&
          (rows.calls[first].tid < rows.calls[first - 1].tid ||
           (rows.calls[first].tid == rows.calls[first - 1].tid &&
            rows.calls[first].ts < rows.calls[first - 1].ts)))
        f.sorted = false;
    }
    rows.calls_filled = std::move(f);
  }
  // Calls of Python processes made before the probes had the interpreter's layout: no line.
  // python_processes.layout_ns came after the table; an older file's statement fails, and goes
  // without.
  if (has_table(db, "python_processes")) {
    std::unordered_map<uint32_t, int64_t> layouts;
    (void)each_row(db,
                   "SELECT pid, layout_ns FROM python_processes "
                   "WHERE supported = 1 AND layout_ns IS NOT NULL",
                   "python_processes",
                   [&](Query& q) { layouts[static_cast<uint32_t>(q.i64(0))] = q.i64(1); });
    rows.python_before_layout = python_layout_gaps(rows, layouts);
  }
  timer.lap("api_calls");
  // The processes that made the window's calls, and the allocations and frees among them (with
  // their CallExt, attached above), as the scan's parts found them.
  std::unordered_set<uint32_t> gpu_pids;
  CallRows window_memory;
  for (size_t k = 0; k < part_start.size(); ++k) {
    gpu_pids.insert(part_fill[k].pids.begin(), part_fill[k].pids.end());
    for (size_t i : part_fill[k].memory) window_memory.push_back(rows.calls[part_start[k] + i]);
  }
  // A batch holds only some of the --pid processes, and may hold none with calls in the window:
  // explain_file judges the pids over all batches.
  if (!opt.batch.empty()) {
    if (rows.calls.empty() && !opt.window_part) {
      prepare_rows(rows);
      rows.unchecked_chunks = damage.unchecked.load();
      return rows;
    }
  } else {
    for (uint32_t pid : opt.pids) {
      if (!gpu_pids.count(pid)) {
        return Error{"pid " + std::to_string(pid) + " made no GPU API call in the window " +
                         window_text(rows.window),
                     "widen the window (--since/--from/--to) or drop --pid", 2};
      }
    }
  }
  if (rows.calls.empty() && !opt.window_part) {
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
  if (opt.window_part) gpu_pids.insert(opt.batch.begin(), opt.batch.end());
  auto keep = [&](uint32_t pid) { return gpu_pids.count(pid) > 0; };

  // The chunks before the window are decoded for their few allocations and frees.
  if (opt.memory_before) {  // the previous window's (LoadOptions::memory_before)
    const LoadOptions::MemoryCalls& m = *opt.memory_before;
    rows.memory_calls.reserve(m.calls.size() + window_memory.size());
    for (size_t i = 0; i < m.calls.size(); ++i) {
      CallRow c = m.calls[i];
      c.ext = kNoExt;
      if (!m.ext[i].empty()) rows.set_ext(c, m.ext[i]);
      rows.memory_calls.push_back(c);
    }
  } else {
    PendingExt early_ext(pool.size());
    st = scan_chunks(
        pool, index, ac, INT64_MIN, from, Keep::Few,
        [&](const store::Chunk& chunk, PartRows<CallRow>& out) {
          const CallColumns k = columns_of(chunk);
          for (uint32_t r = 0; r < chunk.rows; ++r) {
            if (k.ts[r] >= from || !memory_api(static_cast<uint16_t>(k.api[r])) ||
                !keep(static_cast<uint32_t>(k.pid[r])))
              continue;
            keep_call(k, r, out, early_ext);
          }
        },
        rows.memory_calls, &part_start, only);
    if (!st) return st.error();
    early_ext.attach(rows.memory_calls, part_start, rows);
  }
  rows.memory_calls.insert(rows.memory_calls.end(), window_memory.begin(), window_memory.end());
  timer.lap("allocations before the window");

  // Interval events overlapping the window, for the processes that made GPU calls. A window of a
  // longer analysis: a thread's run on to its span's end, its next call (span_ends).
  rows.span_ends = opt.span_ends;
  int64_t ev_to = to;
  for (const auto& [tid, end] : opt.span_ends) ev_to = std::max(ev_to, end);
  // [t, t + dur) of thread `tid` (-1: a row of no one thread) overlaps the window or, in a window
  // of a longer analysis, runs on before its thread's span ends.
  auto interval_kept = [&](int64_t t, int64_t dur, int64_t tid) {
    if (t + dur <= from) return false;
    if (t < to) return true;
    if (tid < 0 || opt.span_ends.empty()) return tid < 0 && t < ev_to;
    const auto end = opt.span_ends.find(static_cast<uint32_t>(tid));
    return end != opt.span_ends.end() && t < end->second;
  };
  auto overlaps = [&](const store::Chunk& k, uint32_t r, uint32_t ts, uint32_t dur,
                      uint32_t tid = UINT32_MAX) {
    return interval_kept(k.value(ts, r), k.value(dur, r),
                         tid == UINT32_MAX ? int64_t{-1} : k.value(tid, r));
  };
  int16_t futex_nr = -1;  // a GIL wait is a futex on an address inside the interpreter's state
  for (const auto& [nr, name] : rows.syscall_names)
    if (name == "futex") futex_nr = static_cast<int16_t>(nr);
  Columns oc{store::find_chunked_table("offcpu")};
  const uint32_t o_ts = oc["ts"], o_dur = oc["dur"], o_runq = oc["runq"], o_pid = oc["pid"],
                 o_tid = oc["tid"], o_cpu = oc["cpu"], o_pre = oc["preempted"],
                 o_npid = oc["next_pid"], o_ntid = oc["next_tid"], o_ncomm = oc["next_comm"],
                 o_wpid = oc["waker_pid"], o_wtid = oc["waker_tid"], o_wcomm = oc["waker_comm"],
                 o_hpid = oc["holder_pid"], o_htid = oc["holder_tid"], o_hcomm = oc["holder_comm"],
                 o_sys = oc["syscall"], o_wcpu = oc["wait_cpu"], o_migr = oc["migrations"],
                 o_thr = oc["throttled"], o_arg0 = oc["arg0"];
  // Read as arrays once per chunk, like the calls; a chunk holds one thread's rows or a few,
  // so whether its process is kept is asked once per run of one pid, not per row.
  st = scan_chunks(
      pool, index, oc, from, ev_to, Keep::Most,
      [&](const store::Chunk& k, PartRows<OffCpuRow>& out) {
        const int64_t *ts = k.values_of(o_ts), *dur = k.values_of(o_dur),
                      *runq = k.values_of(o_runq), *pid = k.values_of(o_pid),
                      *tid = k.values_of(o_tid), *cpu = k.values_of(o_cpu),
                      *pre = k.values_of(o_pre), *npid = k.values_of(o_npid),
                      *ntid = k.values_of(o_ntid), *ncomm = k.values_of(o_ncomm),
                      *wpid = k.values_of(o_wpid), *wtid = k.values_of(o_wtid),
                      *wcomm = k.values_of(o_wcomm), *hpid = k.values_of(o_hpid),
                      *htid = k.values_of(o_htid), *hcomm = k.values_of(o_hcomm),
                      *sys = k.values_of(o_sys), *wcpu = k.values_of(o_wcpu),
                      *migr = k.values_of(o_migr), *thr = k.values_of(o_thr),
                      *arg0 = k.values_of(o_arg0);
        const uint8_t *has_holder = k.present_of(o_hpid), *has_sys = k.present_of(o_sys),
                      *has_wcpu = k.present_of(o_wcpu);
        int64_t last_pid = -1;
        bool last_kept = false;
        std::pair<uint64_t, uint64_t> runtime{0, 0};  // the pid's _PyRuntime, {0, 0}: none
        for (uint32_t r = 0; r < k.rows; ++r) {
          if (pid[r] != last_pid) {
            last_pid = pid[r];
            last_kept = keep(static_cast<uint32_t>(pid[r]));
            auto py = rows.python_runtime.find(static_cast<uint32_t>(pid[r]));
            runtime =
                py == rows.python_runtime.end() ? std::pair<uint64_t, uint64_t>{0, 0} : py->second;
          }
          // A process that made no GPU call (a data-loader worker) is kept apart below.
          if (!interval_kept(ts[r], dur[r], tid[r])) continue;
          if (!last_kept && !opt.batch.empty()) continue;
          OffCpuRow o;
          o.pid = static_cast<uint32_t>(pid[r]);
          o.ts = ts[r];
          o.dur = dur[r];
          o.runq = std::clamp<int64_t>(runq[r], 0, o.dur);
          o.tid = static_cast<uint32_t>(tid[r]);
          o.preempted = pre[r] != 0;
          const auto next_pid = static_cast<uint32_t>(npid[r]);
          const auto next_tid = static_cast<uint32_t>(ntid[r]);
          const auto next_comm = static_cast<uint32_t>(ncomm[r]);
          o.holder_recorded = has_holder[r] != 0;
          if (o.holder_recorded) {
            o.holder_pid = static_cast<uint32_t>(hpid[r]);
            o.holder_tid = static_cast<uint32_t>(htid[r]);
            o.holder_comm = static_cast<uint32_t>(hcomm[r]);
          } else {
            o.holder_pid = next_pid;
            o.holder_tid = next_tid;
            o.holder_comm = next_comm;
          }
          // Who took the CPU matters for a preemption, who woke it for a sleep.
          if (o.preempted) {
            o.other_pid = next_pid;
            o.other_tid = next_tid;
            o.other_comm = next_comm;
          } else {
            o.other_pid = static_cast<uint32_t>(wpid[r]);
            o.other_tid = static_cast<uint32_t>(wtid[r]);
            o.other_comm = static_cast<uint32_t>(wcomm[r]);
          }
          o.cpu = static_cast<uint16_t>(cpu[r]);
          if (has_sys[r]) o.syscall = static_cast<int16_t>(sys[r]);
          o.throttled = thr[r] != 0;  // NULL (not throttled, or an older chunk) reads as 0
          const auto addr = static_cast<uint64_t>(arg0[r]);
          o.gil = runtime.second > 0 && o.syscall >= 0 && addr >= runtime.first &&
                  addr - runtime.first < runtime.second && o.syscall == futex_nr;
          if (has_wcpu[r]) {
            o.wait_cpu = static_cast<int16_t>(wcpu[r]);
            o.migrations = static_cast<uint16_t>(migr[r]);
          }
          out.push_back(o);
        }
      },
      rows.offcpu, nullptr, only);
  if (!st) return st.error();
  {
    auto others = std::stable_partition(rows.offcpu.begin(), rows.offcpu.end(),
                                        [&](const OffCpuRow& o) { return keep(o.pid); });
    rows.worker_offcpu.assign(others, rows.offcpu.end());
    rows.offcpu.erase(others, rows.offcpu.end());
    std::sort(rows.worker_offcpu.begin(), rows.worker_offcpu.end(),
              [](const OffCpuRow& a, const OffCpuRow& b) {
                return a.tid != b.tid ? a.tid < b.tid : a.ts < b.ts;
              });
  }
  timer.lap("offcpu");
  Columns sc{store::find_chunked_table("syscalls")};
  const uint32_t s_ts = sc["ts"], s_dur = sc["dur"], s_pid = sc["pid"], s_tid = sc["tid"],
                 s_nr = sc["nr"], s_ret = sc["ret"], s_req = sc["request"];
  st = scan_chunks(
      pool, index, sc, from, ev_to, Keep::Most,
      [&](const store::Chunk& k, uint32_t r, auto& out) {
        const auto pid = static_cast<uint32_t>(k.value(s_pid, r));
        if (!keep(pid) || !overlaps(k, r, s_ts, s_dur, s_tid)) return;
        out.push_back({k.value(s_ts, r), k.value(s_dur, r), pid,
                       static_cast<uint32_t>(k.value(s_tid, r)),
                       static_cast<uint32_t>(k.value(s_nr, r)), k.value(s_ret, r),
                       k.is_null(s_req, r) ? int64_t{-1} : k.value(s_req, r)});
      },
      rows.syscalls, nullptr, only);
  if (!st) return st.error();
  // The driver's ioctls are recorded whatever their length and with the syscall family off: not
  // the slow syscalls the other rows are.
  const auto driver = std::stable_partition(rows.syscalls.begin(), rows.syscalls.end(),
                                            [](const SyscallRow& s) { return s.request < 0; });
  rows.driver_ioctls.assign(driver, rows.syscalls.end());
  rows.syscalls.erase(driver, rows.syscalls.end());
  Columns bc{store::find_chunked_table("block_io")};
  const uint32_t b_ts = bc["ts"], b_dur = bc["dur"], b_pid = bc["pid"], b_tid = bc["tid"],
                 b_bytes = bc["bytes"], b_op = bc["op"], b_dev = bc["dev"];
  st = scan_chunks(
      pool, index, bc, from, ev_to, Keep::Most,
      [&](const store::Chunk& k, uint32_t r, auto& out) {
        const auto pid = static_cast<uint32_t>(k.value(b_pid, r));
        if (!keep(pid) || !overlaps(k, r, b_ts, b_dur, b_tid)) return;
        out.push_back(
            {k.value(b_ts, r), k.value(b_dur, r), pid, static_cast<uint32_t>(k.value(b_tid, r)),
             static_cast<uint64_t>(k.value(b_bytes, r)), static_cast<uint32_t>(k.value(b_op, r)),
             static_cast<uint32_t>(k.value(b_dev, r))});
      },
      rows.block_io, nullptr, only);
  if (!st) return st.error();
  Columns rc{store::find_chunked_table("reclaim")};
  const uint32_t r_ts = rc["ts"], r_dur = rc["dur"], r_pid = rc["pid"], r_tid = rc["tid"],
                 r_n = rc["nr_reclaimed"];
  st = scan_chunks(
      pool, index, rc, from, ev_to, Keep::Most,
      [&](const store::Chunk& k, uint32_t r, auto& out) {
        const auto pid = static_cast<uint32_t>(k.value(r_pid, r));
        if (!keep(pid) || !overlaps(k, r, r_ts, r_dur, r_tid)) return;
        out.push_back({k.value(r_ts, r), k.value(r_dur, r), pid,
                       static_cast<uint32_t>(k.value(r_tid, r)),
                       static_cast<uint64_t>(k.value(r_n, r))});
      },
      rows.reclaim, nullptr, only);
  if (!st) return st.error();
  if (has_table(db, "cpu_samples_chunks")) {
    Columns cc{store::find_chunked_table("cpu_samples")};
    const uint32_t c_ts = cc["ts"], c_dur = cc["dur"], c_pid = cc["pid"], c_tid = cc["tid"],
                   c_sys = cc["syscall"], c_kernel = cc["kernel"], c_cstack = cc["stack_id"],
                   c_cpy = cc["py_stack"], c_minf = cc["min_flt"], c_majf = cc["maj_flt"];
    st = scan_chunks(
        pool, index, cc, from, ev_to, Keep::Most,
        [&](const store::Chunk& k, uint32_t r, auto& out) {
          const auto pid = static_cast<uint32_t>(k.value(c_pid, r));
          if (!overlaps(k, r, c_ts, c_dur, c_tid)) return;  // other processes' are split off below
          CpuSampleRow s;
          s.ts = k.value(c_ts, r);
          s.dur = k.value(c_dur, r);
          s.pid = pid;
          s.tid = static_cast<uint32_t>(k.value(c_tid, r));
          if (!k.is_null(c_sys, r)) s.syscall = static_cast<int16_t>(k.value(c_sys, r));
          s.kernel = k.value(c_kernel, r) != 0;
          if (!k.is_null(c_cstack, r)) s.stack_id = static_cast<int32_t>(k.value(c_cstack, r));
          if (!k.is_null(c_cpy, r)) s.pystack_id = static_cast<int32_t>(k.value(c_cpy, r));
          if (!k.is_null(c_minf, r)) {
            s.min_flt = k.value(c_minf, r);
            s.maj_flt = k.value(c_majf, r);
          }
          out.push_back(s);
        },
        rows.cpu_samples);
    if (!st) return st.error();
    // Samples exist only for traced processes: those making GPU calls and their children. The
    // children's are kept apart, for the Python line of a worker that stalls the step.
    auto others = std::stable_partition(rows.cpu_samples.begin(), rows.cpu_samples.end(),
                                        [&](const CpuSampleRow& s) { return keep(s.pid); });
    rows.worker_samples.assign(others, rows.cpu_samples.end());
    rows.cpu_samples.erase(others, rows.cpu_samples.end());
  }
  // Who held the CPUs the traced threads waited for: every run overlapping the window, whoever
  // ran (ABI 5; older files have no such table).
  if (has_table(db, "cpu_runs_chunks")) {
    Columns rc{store::find_chunked_table("cpu_runs")};
    const uint32_t u_ts = rc["ts"], u_dur = rc["dur"], u_cpu = rc["cpu"], u_pid = rc["pid"],
                   u_tid = rc["tid"], u_comm = rc["comm"];
    // A window of a longer analysis: from the earliest run-queue wait a loaded interval holds,
    // as one analysis of the whole window would have them for a wait crossing into this one.
    int64_t runs_from = from;
    if (opt.window_part)
      for (const OffCpuRow& o : rows.offcpu) runs_from = std::min(runs_from, o.end() - o.runq);
    st = scan_chunks(
        pool, index, rc, runs_from, ev_to, Keep::Most,
        [&](const store::Chunk& k, uint32_t r, auto& out) {
          const int64_t t = k.value(u_ts, r);
          if (t >= ev_to || t + k.value(u_dur, r) <= runs_from) return;
          CpuRunRow u;
          u.ts = k.value(u_ts, r);
          u.dur = k.value(u_dur, r);
          u.cpu = static_cast<uint16_t>(k.value(u_cpu, r));
          u.pid = static_cast<uint32_t>(k.value(u_pid, r));
          u.tid = static_cast<uint32_t>(k.value(u_tid, r));
          u.comm = static_cast<uint32_t>(k.value(u_comm, r));
          out.push_back(u);
        },
        rows.cpu_runs);
    if (!st) return st.error();
  }
  // The moves of waiting threads, from the earliest wait a loaded interval holds: which CPU a
  // thread waited on at the window's start can depend on a move before it.
  if (has_table(db, "wait_migrations_chunks")) {
    int64_t first_wait = from;
    for (const OffCpuRow& o : rows.offcpu) first_wait = std::min(first_wait, o.end() - o.runq);
    Columns mc{store::find_chunked_table("wait_migrations")};
    const uint32_t m_ts = mc["ts"], m_pid = mc["pid"], m_tid = mc["tid"], m_from = mc["from_cpu"],
                   m_to = mc["to_cpu"];
    st = scan_chunks(
        pool, index, mc, first_wait, ev_to, Keep::Most,
        [&](const store::Chunk& k, uint32_t r, auto& out) {
          const auto pid = static_cast<uint32_t>(k.value(m_pid, r));
          const int64_t ts = k.value(m_ts, r);
          if (!keep(pid) || ts < first_wait || ts >= ev_to) return;
          out.push_back({ts, pid, static_cast<uint32_t>(k.value(m_tid, r)),
                         static_cast<uint16_t>(k.value(m_from, r)),
                         static_cast<uint16_t>(k.value(m_to, r))});
        },
        rows.wait_migrations, nullptr, only);
    if (!st) return st.error();
  }
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
  // The device's own timeline (trace --gpu-activity), where the file has one.
  st = load_device_activity(db, rows, from, to, keep);
  if (!st) return st.error();
  timer.lap("other tables");
  prepare_rows(rows);
  timer.lap("prepare");
  rows.unchecked_chunks = damage.unchecked.load();
  return rows;
}

Result<TraceRows> load_trace(const store::TraceFile& file, const LoadOptions& opt) {
  auto rows = load_trace(file.db(), opt);
  if (rows) rows->live = file.is_live();
  if (rows) rows->wal_warning = file.wal_warning();
  return rows;
}

}  // namespace gpuwhy::analysis
