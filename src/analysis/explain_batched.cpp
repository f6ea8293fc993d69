// SPDX-License-Identifier: Apache-2.0
#include "analysis/explain_batched.hpp"

#include <algorithm>
#include <array>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "analysis/sql_scan.hpp"
#include "analysis/units.hpp"
#include "core/phase_timer.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::analysis {
namespace {

// Rows per process of the chunks overlapping [from, to) of one chunked table.
void add_rows(const ChunkIndex& index, std::string_view table, int64_t from, int64_t to,
              std::map<uint32_t, uint64_t>& rows) {
  if (const std::vector<ChunkRef>* refs = index.find(table))
    for (const ChunkRef& c : *refs)
      if (c.end_max >= from && c.ts_min < to) rows[c.pid] += static_cast<uint64_t>(c.rows);
}

// What caveats_for reads, without the event rows.
TraceRows shared_part(const TraceRows& rows) {
  TraceRows m;
  m.session = rows.session;
  m.window = rows.window;
  m.live = rows.live;
  m.losses = rows.losses;
  m.wal_warning = rows.wal_warning;
  m.unchecked_index = rows.unchecked_index;
  m.families_off = rows.families_off;
  m.aged_out = rows.aged_out;
  m.python_unsupported = rows.python_unsupported;
  return m;
}

// The whole-window statistics of an operation called in several batches: exact counts, totals
// and maxima; percentiles from the summed histogram (explain_batched.hpp).
OpStats merge_op(const std::vector<const OpStats*>& parts, const DurHistogram& h) {
  OpStats s = *parts.front();
  s.errors = s.bytes = s.nested = s.imputed = 0;
  for (const OpStats* p : parts) {
    s.errors += p->errors;
    s.bytes += p->bytes;
    s.nested += p->nested;
    s.imputed += p->imputed;
  }
  s.dur.count = h.count();
  s.dur.total_ns = h.total();
  s.dur.max = h.max();
  for (size_t i = 0; i < std::size(kSummaryPercentiles); ++i) {
    const DurHistogram::Rank at = h.locate(nearest_rank_index(h.count(), kSummaryPercentiles[i]));
    s.dur.*kSummaryFields[i] = std::min(DurHistogram::bucket_floor(at.bucket), h.max());
  }
  return s;
}

void merge_stats(Stats& into, std::vector<Stats>& parts) {
  std::map<uint16_t, std::vector<const OpStats*>> ops;
  std::map<uint16_t, DurHistogram> hists;
  for (Stats& s : parts) {
    into.calls += s.calls;
    for (const OpStats& o : s.ops) ops[o.api].push_back(&o);
    for (auto& [api, h] : s.op_hists) hists[api].add(h);
    std::move(s.processes.begin(), s.processes.end(), std::back_inserter(into.processes));
    std::move(s.rates.begin(), s.rates.end(), std::back_inserter(into.rates));
  }
  for (const auto& [api, v] : ops)
    into.ops.push_back(v.size() == 1 ? *v.front() : merge_op(v, hists[api]));
  sort_ops(into.ops);  // the orders compute_stats gives
  sort_processes(into.processes);
  std::unordered_map<uint32_t, size_t> place;
  for (size_t i = 0; i < into.processes.size(); ++i) place[into.processes[i].pid] = i;
  std::sort(into.rates.begin(), into.rates.end(),
            [&](const RateSeries& a, const RateSeries& b) { return place[a.pid] < place[b.pid]; });
  for (auto& [api, h] : hists) into.op_hists.emplace_back(api, std::move(h));
}

// ---- time windows of one group (a process, or the NCCL job) --------------------------------

// Cuts [from, to) into windows of about `max_rows` rows of the group's api_calls and offcpu
// chunks, each chunk's rows taken as spread evenly over its time (a chunk of a quiet thread can
// span the whole trace). From the chunk index: nothing is decoded.
Result<std::vector<Slice>> cut_windows(const ChunkIndex& index, const std::vector<uint32_t>& pids,
                                       int64_t from, int64_t to, uint64_t max_rows) {
  std::map<int64_t, double> step;  // rows per ns starting (+) and ending (-) at a time
  for (const char* table : {"api_calls", "offcpu"}) {
    const std::vector<ChunkRef>* refs = index.find(table);
    if (!refs) continue;
    std::vector<const ChunkRef*> in;
    for (const ChunkRef& c : *refs)
      if (c.end_max >= from && c.ts_min < to &&
          std::find(pids.begin(), pids.end(), c.pid) != pids.end())
        in.push_back(&c);
    // In the table's row order: the rates are summed in floating point, so the order is part of
    // where the cuts fall (kept as the chunk table's own scan gave them).
    std::sort(in.begin(), in.end(),
              [](const ChunkRef* a, const ChunkRef* b) { return a->id < b->id; });
    for (const ChunkRef* cp : in) {
      const ChunkRef& c = *cp;
      const int64_t a = std::max(c.ts_min, from);
      const int64_t b = std::max(std::min(std::max(c.end_max, c.ts_min + 1), to), a + 1);
      const double rate = static_cast<double>(c.rows) / static_cast<double>(b - a);
      step[a] += rate;
      step[b] -= rate;
    }
  }
  std::vector<Slice> out{{from, to}};
  const auto target = static_cast<double>(max_rows);
  double rate = 0, filled = 0;
  int64_t at = from;
  for (const auto& [t, d] : step) {
    // Rows come in at `rate` from `at` to `t`: cut wherever they fill a window.
    while (rate > 0 && filled + rate * static_cast<double>(t - at) >= target) {
      const auto cut = at + static_cast<int64_t>((target - filled) / rate) + 1;
      if (cut >= t || cut >= to) break;
      if (cut > out.back().from_ns) {
        out.back().to_ns = cut;
        out.push_back({cut, to});
      }
      at = cut;
      filled = 0;
    }
    filled += rate * static_cast<double>(t - at);
    at = t;
    rate += d;
  }
  return out;
}

// Per thread of the group with calls in [from, to): its next call at or after `to` and before
// `end` (the whole window's end), where its span in this window ends (TraceRows::span_ends).
Result<std::unordered_map<uint32_t, int64_t>> next_calls(sqlite3* db, const ChunkIndex& index,
                                                         const std::vector<uint32_t>& pids,
                                                         int64_t from, int64_t to, int64_t end) {
  std::set<int64_t> tids;
  if (const std::vector<ChunkRef>* refs = index.find("api_calls"))
    for (const ChunkRef& c : *refs)
      if (c.end_max >= from && c.ts_min < to &&
          std::find(pids.begin(), pids.end(), c.pid) != pids.end())
        tids.insert(c.tid);
  Status st;
  std::unordered_map<uint32_t, int64_t> ends;
  for (int64_t tid : tids) {
    st = each_row(db,
                  "SELECT ts FROM api_calls WHERE tid = ?1 AND ts >= ?2 AND ts < ?3 "
                  "ORDER BY ts LIMIT 1",
                  "api_calls", [&](Query& q) { ends[static_cast<uint32_t>(tid)] = q.i64(0); },
                  {tid, to, end});
    if (!st) return st.error();
    if (ends.count(static_cast<uint32_t>(tid))) continue;
    // No call after this window: the span ends where one analysis ends it, at the end of the
    // thread's last call (a sync running past the cut), not at the cut.
    st = each_row(
        db,
        "SELECT coalesce(max(ts + dur), -1) FROM api_calls WHERE tid = ?1 AND ts >= ?2 AND ts < ?3",
        "api_calls",
        [&](Query& q) {
          if (q.i64(0) >= 0) ends[static_cast<uint32_t>(tid)] = std::min(q.i64(0), end);
        },
        {tid, from, to});
    if (!st) return st.error();
  }
  return ends;
}

// The interval events a window's analysis counts: those that start in it (the first window also
// those that started before the whole window, the last those read past its end), so that
// events overlapping two windows are counted once.
template <typename Row, typename A>
uint64_t starting_in(const std::vector<Row, A>& v, int64_t lo, int64_t hi) {
  return static_cast<uint64_t>(
      std::count_if(v.begin(), v.end(), [&](const Row& e) { return e.ts >= lo && e.ts < hi; }));
}

struct OwnCounts {
  uint64_t offcpu = 0, syscalls = 0, block_io = 0, reclaims = 0;
};
OwnCounts own_counts(const TraceRows& rows, int64_t lo, int64_t hi) {
  return {starting_in(rows.offcpu, lo, hi), starting_in(rows.syscalls, lo, hi),
          starting_in(rows.block_io, lo, hi), starting_in(rows.reclaim, lo, hi)};
}

// An operation of a process or thread in several windows: exact counts, totals and maxima;
// percentiles of the window with the most calls of it (no per-process histograms are kept).
void add_op(std::vector<OpStats>& into, const OpStats& o) {
  auto it =
      std::find_if(into.begin(), into.end(), [&](const OpStats& e) { return e.api == o.api; });
  if (it == into.end()) {
    into.push_back(o);
    return;
  }
  OpStats& m = *it;
  const bool take = o.dur.count > m.dur.count;
  DurStats d = take ? o.dur : m.dur;
  d.count = m.dur.count + o.dur.count;
  d.total_ns = m.dur.total_ns + o.dur.total_ns;
  d.max = std::max(m.dur.max, o.dur.max);
  m.dur = d;
  m.errors += o.errors;
  m.bytes += o.bytes;
  m.nested += o.nested;
  m.imputed += o.imputed;
}

void add_process(std::vector<ProcessStats>& into, const ProcessStats& p) {
  auto it =
      std::find_if(into.begin(), into.end(), [&](const ProcessStats& e) { return e.pid == p.pid; });
  if (it == into.end()) {
    into.push_back(p);
    return;
  }
  ProcessStats& m = *it;
  m.calls += p.calls;
  m.first_ns = std::min(m.first_ns, p.first_ns);
  m.last_ns = std::max(m.last_ns, p.last_ns);
  m.api_ns += p.api_ns;
  for (const OpStats& o : p.ops) add_op(m.ops, o);
  for (const ThreadStats& t : p.threads) {
    auto th = std::find_if(m.threads.begin(), m.threads.end(),
                           [&](const ThreadStats& e) { return e.tid == t.tid; });
    if (th == m.threads.end()) {
      m.threads.push_back(t);
      continue;
    }
    th->calls += t.calls;
    th->first_ns = std::min(th->first_ns, t.first_ns);
    th->last_ns = std::max(th->last_ns, t.last_ns);
    th->api_ns += t.api_ns;
    th->off.preempted += t.off.preempted;
    th->off.blocked += t.off.blocked;
    th->off.wakeup += t.off.wakeup;
    for (const OpStats& o : t.ops) add_op(th->ops, o);
  }
}

Stats merge_window_stats(std::vector<Stats>& parts, const TimeWindow& whole, double min_drop) {
  Stats st;
  std::vector<Stats> whole_ops(parts.size());
  std::map<uint32_t, std::vector<const FineRates*>> fine;
  for (size_t i = 0; i < parts.size(); ++i) {
    for (const ProcessStats& p : parts[i].processes) add_process(st.processes, p);
    for (const FineRates& f : parts[i].fine_rates) fine[f.pid].push_back(&f);
    // The whole-window operations as batches add them up (histograms), processes apart.
    whole_ops[i].calls = parts[i].calls;
    whole_ops[i].ops = std::move(parts[i].ops);
    whole_ops[i].op_hists = std::move(parts[i].op_hists);
  }
  merge_stats(st, whole_ops);
  for (ProcessStats& p : st.processes) {
    sort_ops(p.ops);
    for (ThreadStats& t : p.threads) sort_ops(t.ops);
    std::sort(p.threads.begin(), p.threads.end(), [](const ThreadStats& a, const ThreadStats& b) {
      return a.calls != b.calls ? a.calls > b.calls : a.tid < b.tid;
    });
  }
  sort_processes(st.processes);
  // The whole span's rate series: the windows' fine counts add up to exactly those of one
  // analysis of the whole window, so a drop is found (or not) the same way.
  for (const ProcessStats& p : st.processes) {
    auto f = fine.find(p.pid);
    if (f == fine.end()) continue;
    if (auto s = rates_from_fine(f->second, whole.start_ns, min_drop)) {
      s->pid = p.pid;
      s->comm = p.comm;
      st.rates.push_back(std::move(*s));
    }
  }
  return st;
}

// A budget added up over windows: the windows' spans meet (span_ends), so the lines add up to
// the whole span.
struct BudgetSum {
  BudgetReport r;
  int64_t end_ns = 0;
  struct Line {
    int64_t ns = 0, idle_ns = 0;
    std::vector<std::pair<Task, int64_t>> tasks;
    std::vector<std::pair<std::string, int64_t>> syscalls;
  };
  std::array<Line, kBuckets> lines;
};

template <typename K, typename Same>
void add_named(std::vector<std::pair<K, int64_t>>& into, const std::pair<K, int64_t>& e,
               Same same) {
  auto it =
      std::find_if(into.begin(), into.end(), [&](const auto& x) { return same(x.first, e.first); });
  if (it == into.end())
    into.push_back(e);
  else
    it->second += e.second;
}

template <typename K>
std::vector<std::pair<K, int64_t>> top3(std::vector<std::pair<K, int64_t>> v) {
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (v.size() > 3) v.resize(3);
  return v;
}

std::vector<BudgetReport> merge_budgets(std::vector<Report>& windows) {
  std::map<std::pair<uint32_t, uint32_t>, BudgetSum> sums;
  const auto same_task = [](const Task& a, const Task& b) {
    return a.pid == b.pid && a.tid == b.tid && a.comm == b.comm;
  };
  const auto same_name = [](const std::string& a, const std::string& b) { return a == b; };
  for (Report& w : windows) {
    for (BudgetReport& b : w.budgets) {
      auto [it, fresh] = sums.try_emplace({b.process.pid, b.thread.tid});
      BudgetSum& m = it->second;
      if (fresh) {
        m.r = b;
        m.r.lines.clear();
        m.r.idle_ns = 0;
        m.end_ns = b.first_ns + b.span_ns;
      }
      m.r.first_ns = std::min(m.r.first_ns, b.first_ns);
      m.end_ns = std::max(m.end_ns, b.first_ns + b.span_ns);
      m.r.idle_ns += b.idle_ns;
      m.r.host_idle_ns += fresh ? 0 : b.host_idle_ns;  // fresh: copied with b
      m.r.idle_measured = m.r.idle_measured || b.idle_measured;
      m.r.exact_holders = m.r.exact_holders && b.exact_holders;
      for (const BudgetLine& l : b.lines) {
        BudgetSum::Line& s = m.lines[static_cast<size_t>(l.bucket)];
        s.ns += l.ns;
        s.idle_ns += l.idle_ns;
        for (const auto& t : l.tasks) add_named(s.tasks, t, same_task);
        for (const auto& c : l.syscalls) add_named(s.syscalls, c, same_name);
      }
    }
  }
  std::vector<BudgetReport> out;
  for (auto& [key, m] : sums) {
    m.r.span_ns = m.end_ns - m.r.first_ns;
    for (size_t i = 0; i < kBuckets; ++i) {
      BudgetSum::Line& s = m.lines[i];
      if (s.ns <= 0) continue;
      m.r.lines.push_back({static_cast<Bucket>(i), s.ns, s.idle_ns, top3(std::move(s.tasks)),
                           top3(std::move(s.syscalls))});
    }
    std::stable_sort(m.r.lines.begin(), m.r.lines.end(),
                     [](const BudgetLine& a, const BudgetLine& c) { return a.ns > c.ns; });
    out.push_back(std::move(m.r));
  }
  return out;
}

// Replaces the first `from` in `text` by `to`.
void replace_first(std::string& text, const std::string& from, const std::string& to) {
  if (from == to) return;
  if (const size_t at = text.find(from); at != std::string::npos) text.replace(at, from.size(), to);
}

// Chains of the same kind, victim thread and culprit from several windows: one chain, its time
// lost added up and its share taken of the thread's whole span. Its text and metrics are those
// of the window where it cost the most, with the headline time and share made whole.
// Per process, its thread with the most time runnable behind other tasks (the thread
// cpu_contention's rule picks over one window).
std::set<uint32_t> most_preempted(const std::vector<BudgetReport>& budgets) {
  std::map<uint32_t, std::pair<int64_t, uint32_t>> worst;  // pid -> (runnable ns, tid)
  for (const BudgetReport& b : budgets) {
    int64_t runnable = 0;
    for (const BudgetLine& l : b.lines)
      if (l.bucket == Bucket::Runnable) runnable = l.ns;
    auto [it, fresh] = worst.try_emplace(b.process.pid, runnable, b.thread.tid);
    auto& w = it->second;
    if (!fresh && (runnable > w.first || (runnable == w.first && b.thread.tid < w.second)))
      w = {runnable, b.thread.tid};
  }
  std::set<uint32_t> out;
  for (const auto& [pid, w] : worst) out.insert(w.second);
  return out;
}

std::vector<Chain> merge_chains(std::vector<Report>& windows,
                                const std::vector<BudgetReport>& budgets,
                                const std::set<uint32_t>& dropped_pids, const Thresholds& th) {
  const std::set<uint32_t> preempted = most_preempted(budgets);
  using Key = std::tuple<std::string, uint32_t, uint32_t, int64_t>;
  struct Sum {
    Chain best;
    int64_t lost = 0, span = 0, first = -1, last = -1;
    size_t seen = 0;
    // Chains merged whatever their window's culprit: each culprit's time as the window's top
    // one (culprit_share of the time lost), to name it when it dominates the sum.
    std::map<std::pair<uint32_t, uint32_t>, std::pair<Task, double>> culprits;
  };
  std::map<Key, Sum> sums;
  std::vector<Key> order;
  for (Report& w : windows) {
    for (Chain& c : w.chains) {
      // A window's cpu_contention names every thread; its culprit is the window's top one, so
      // the windows' chains of a thread are one chain, of the culprit where it cost the most.
      const bool contention = c.kind == "cpu_contention", lock = c.kind == "lock_wait";
      if (contention && !preempted.count(c.thread.tid)) continue;
      // A rate drop within a window is kept when the whole span's rate dropped too.
      if (c.kind == "rate_drop" && !dropped_pids.count(c.process.pid)) continue;
      const int64_t culprit = c.culprit && !contention && !lock
                                  ? (static_cast<int64_t>(c.culprit->pid) << 32) | c.culprit->tid
                                  : -1;
      const Key key{c.kind, c.process.pid, c.thread.tid, culprit};
      auto [it, fresh] = sums.try_emplace(key);
      Sum& s = it->second;
      if (fresh) order.push_back(key);
      s.lost += c.lost_ns;
      s.span += c.span_ns;
      ++s.seen;
      if (c.first_ns >= 0) s.first = s.first < 0 ? c.first_ns : std::min(s.first, c.first_ns);
      s.last = std::max(s.last, c.last_ns);
      if (culprit < 0 && c.culprit) {
        double share = 0;
        for (const auto& [name, v] : c.metrics)
          if (name == "culprit_share") share = v;
        auto& [task, ns] = s.culprits[{c.culprit->pid, c.culprit->tid}];
        task = *c.culprit;
        ns += share * static_cast<double>(c.lost_ns);
      }
      if (fresh || c.lost_ns > s.best.lost_ns) s.best = std::move(c);
    }
  }
  std::map<std::pair<uint32_t, uint32_t>, int64_t> spans;
  for (const BudgetReport& b : budgets) spans[{b.process.pid, b.thread.tid}] = b.span_ns;
  // lock_wait and gpu_idle (a window names every thread: Context::window_part): one chain per
  // process, of its thread that lost the most in all, as one analysis chooses.
  auto one_per_process = [](const std::string& kind) {
    return kind == "lock_wait" || kind == "gpu_idle";
  };
  using KindPid = std::pair<std::string, uint32_t>;
  std::map<KindPid, std::pair<int64_t, uint32_t>> most_lost;  // (kind, pid) -> (lost, tid)
  for (const auto& [key, s] : sums) {
    if (!one_per_process(std::get<0>(key))) continue;
    auto [it, fresh] =
        most_lost.try_emplace({std::get<0>(key), std::get<1>(key)}, s.lost, std::get<2>(key));
    if (!fresh && s.lost > it->second.first) it->second = {s.lost, std::get<2>(key)};
  }
  std::vector<Chain> out;
  for (const Key& key : order) {
    if (one_per_process(std::get<0>(key)) &&
        most_lost.at({std::get<0>(key), std::get<1>(key)}).second != std::get<2>(key))
      continue;
    Sum& s = sums.at(key);
    Chain c = std::move(s.best);
    const std::string lost_was = fmt_duration(c.lost_ns), share_was = fmt_percent(c.share());
    c.lost_ns = s.lost;
    const auto span = spans.find({c.process.pid, c.thread.tid});
    c.span_ns = c.thread.tid != 0 && span != spans.end() ? span->second : s.span;
    c.first_ns = s.first;
    c.last_ns = s.last;
    if (c.kind == "cpu_contention" || c.kind == "lock_wait") {
      c.culprit.reset();  // named when it dominates the whole (Thresholds::dominant)
      for (const auto& [id, v] : s.culprits)
        if (v.second >= th.dominant * static_cast<double>(c.lost_ns)) c.culprit = v.first;
    }
    replace_first(c.summary, share_was, fmt_percent(c.share()));
    replace_first(c.summary, lost_was, fmt_duration(c.lost_ns));
    if (windows.size() > 1)
      c.evidence.push_back({"explained in " + std::to_string(windows.size()) +
                            " time windows, found in " + std::to_string(s.seen) +
                            " of them: the time lost and its share are the whole window's, "
                            "the other figures above those of the window where it cost the most"});
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

Result<BatchPlan> plan_batches(sqlite3* db, const LoadOptions& opt, uint64_t max_rows) {
  auto bounds = trace_bounds(db);
  if (!bounds) return bounds.error();
  auto w = resolve_window(opt.window, bounds->trace_start_ns, bounds->trace_end_ns,
                          bounds->end_is_last_event);
  if (!w) return w.error();
  std::map<uint32_t, uint64_t> calls, rows;
  std::shared_ptr<const ChunkIndex> index = opt.chunks;
  if (!index) {
    auto read = read_chunk_index(db);
    if (!read) return read.error();
    index = std::move(read.value());
  }
  add_rows(*index, "api_calls", w->start_ns, w->end_ns, calls);
  rows = calls;
  add_rows(*index, "offcpu", w->start_ns, w->end_ns, rows);
  const std::set<uint32_t> wanted(opt.pids.begin(), opt.pids.end());
  BatchPlan plan;
  std::vector<std::pair<uint64_t, uint32_t>> procs;  // (rows, pid) of processes with calls
  for (const auto& [pid, n] : rows) {
    if (!calls.count(pid) || (!wanted.empty() && !wanted.count(pid))) continue;
    procs.emplace_back(n, pid);
    plan.rows += n;
  }
  if (procs.empty()) return plan;
  if (plan.rows <= max_rows) {
    plan.batches.emplace_back();
    for (const auto& [n, pid] : procs) plan.batches.back().push_back(pid);
    std::sort(plan.batches.back().begin(), plan.batches.back().end());
    plan.slices.emplace_back();
    plan.groups.push_back(0);
    return plan;
  }
  // The ranks of an NCCL job are compared with one another: they share a batch.
  std::set<uint32_t> ranks;
  if (const Result<bool> has = store::has_table(db, "api_calls_per_second"); has && has.value()) {
    Status st = each_row(db,
                         "SELECT DISTINCT s.pid FROM api_calls_per_second s JOIN apis a "
                         "ON a.id = s.api WHERE a.category = 'collective'",
                         "api_calls_per_second",
                         [&](Query& q) { ranks.insert(static_cast<uint32_t>(q.i64(0))); });
    if (!st) return st.error();
  }
  std::vector<uint32_t> job;
  std::vector<std::pair<uint64_t, uint32_t>> rest;
  for (const auto& p : procs) {
    if (ranks.count(p.second))
      job.push_back(p.second);
    else
      rest.push_back(p);
  }
  if (!job.empty()) plan.batches.push_back(job);
  // First fit, largest first, into batches of about equal size (the fewest that stay under the
  // limit): the next batch is read while one is analysed, and equal batches overlap best. None
  // is over the limit unless one process is.
  std::sort(rest.begin(), rest.end(), [](auto& a, auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  uint64_t rest_rows = 0;
  for (const auto& p : rest) rest_rows += p.first;
  const uint64_t count = std::max<uint64_t>(1, (rest_rows + max_rows - 1) / max_rows);
  // A quarter over the mean, so that processes of nearly equal size still pair up.
  const uint64_t target = std::min(max_rows, (rest_rows + count - 1) / count * 5 / 4);
  std::vector<uint64_t> filled;
  const size_t first = plan.batches.size();
  for (const auto& [n, pid] : rest) {
    size_t b = first;
    while (b < plan.batches.size() && filled[b - first] + n > target) ++b;
    if (b == plan.batches.size()) {
      plan.batches.emplace_back();
      filled.push_back(0);
    }
    plan.batches[b].push_back(pid);
    filled[b - first] += n;
  }
  // A batch still over the limit (one process, or the NCCL job) is cut into time windows.
  std::vector<std::vector<uint32_t>> groups = std::move(plan.batches);
  plan.batches.clear();
  for (uint32_t g = 0; g < groups.size(); ++g) {
    std::vector<uint32_t>& pids = groups[g];
    std::sort(pids.begin(), pids.end());
    uint64_t n = 0;
    for (uint32_t pid : pids) n += rows[pid];
    std::vector<Slice> windows{Slice{}};
    if (n > max_rows) {
      auto cut = cut_windows(*index, pids, w->start_ns, w->end_ns, max_rows);
      if (!cut) return cut.error();
      if (cut->size() > 1) windows = std::move(cut.value());
    }
    for (const Slice& sl : windows) {
      plan.batches.push_back(pids);
      plan.slices.push_back(sl);
      plan.groups.push_back(g);
    }
  }
  return plan;
}

Report merge_windows(std::vector<Report> windows, const TimeWindow& whole, const Thresholds& th) {
  Report r;
  if (windows.empty()) return r;
  r.trace = windows.front().trace;
  r.trace.window = whole;
  r.trace.calls = r.trace.offcpu_intervals = r.trace.syscalls = r.trace.block_io = 0;
  r.trace.reclaims = r.trace.retransmits = 0;
  std::vector<Stats> stats;
  for (Report& w : windows) {
    r.trace.calls += w.trace.calls;
    r.trace.offcpu_intervals += w.trace.offcpu_intervals;
    r.trace.syscalls += w.trace.syscalls;
    r.trace.block_io += w.trace.block_io;
    r.trace.reclaims += w.trace.reclaims;
    r.trace.retransmits += w.trace.retransmits;  // each window read its own time's
    stats.push_back(std::move(w.stats));
  }
  r.budgets = merge_budgets(windows);
  std::vector<const GpuTimeReport*> gpu_times;
  for (const Report& w : windows) gpu_times.push_back(&w.gpu_time);
  r.gpu_time = merge_gpu_time(gpu_times);
  std::set<uint32_t> pids;
  for (const BudgetReport& b : r.budgets) pids.insert(b.process.pid);
  r.trace.threads = r.budgets.size();
  r.trace.processes = pids.size();
  r.stats = merge_window_stats(stats, r.trace.window, th.rate_drop);
  std::set<uint32_t> dropped;
  for (const RateSeries& s : r.stats.rates)
    if (s.drop.found) dropped.insert(s.pid);
  r.chains =
      rank_chains(merge_chains(windows, r.budgets, dropped, th), th, r.trace.window.duration());
  std::set<std::pair<uint32_t, uint32_t>> named;
  for (const Chain& c : r.chains) named.insert({c.process.pid, c.thread.tid});
  for (BudgetReport& b : r.budgets) b.in_chain = named.count({b.process.pid, b.thread.tid}) > 0;
  sort_budgets(r.budgets);
  set_verdict(r);
  return r;
}

Report merge_reports(std::vector<Report> parts, const Thresholds& th) {
  Report r;
  if (parts.empty()) return r;
  r.trace = parts.front().trace;
  r.trace.calls = r.trace.processes = r.trace.threads = 0;
  r.trace.offcpu_intervals = r.trace.syscalls = r.trace.block_io = r.trace.reclaims = 0;
  std::vector<Chain> chains;
  std::vector<Stats> stats;
  for (Report& p : parts) {
    // Event counts are the batches' own; retransmits and losses are host-wide, read by each.
    r.trace.calls += p.trace.calls;
    r.trace.processes += p.trace.processes;
    r.trace.threads += p.trace.threads;
    r.trace.offcpu_intervals += p.trace.offcpu_intervals;
    r.trace.syscalls += p.trace.syscalls;
    r.trace.block_io += p.trace.block_io;
    r.trace.reclaims += p.trace.reclaims;
    std::move(p.chains.begin(), p.chains.end(), std::back_inserter(chains));
    std::move(p.budgets.begin(), p.budgets.end(), std::back_inserter(r.budgets));
    stats.push_back(std::move(p.stats));
    r.phases.merge(p.phases);  // each batch holds other processes
  }
  std::vector<const GpuTimeReport*> gpu_times;  // the batches' processes are disjoint
  for (const Report& p : parts) gpu_times.push_back(&p.gpu_time);
  r.gpu_time = merge_gpu_time(gpu_times);
  r.chains = rank_chains(std::move(chains), th, r.trace.window.duration());
  sort_budgets(r.budgets);
  merge_stats(r.stats, stats);
  set_verdict(r);
  return r;
}

Result<Report> explain_file(const store::TraceFile& file, const LoadOptions& asked,
                            uint64_t max_batch_rows, const Thresholds& th) {
  // The chunk index is read once, for the plan and every batch (ChunkIndex).
  LoadOptions opt = asked;
  if (!opt.chunks) {
    PhaseTimer timer("explain");
    auto index = read_chunk_index(file.db());
    if (!index) return index.error();
    opt.chunks = std::move(index.value());
    timer.lap("chunk index");
  }
  auto plan = plan_batches(file.db(), opt, max_batch_rows);
  if (!plan) return plan.error();
  spdlog::debug(
      "explain: {} rows of calls and off-CPU intervals in the window, {} batch(es) of "
      "at most {} rows",
      plan->rows, plan->batches.size(), max_batch_rows);
  if (plan->batches.size() > 1) {
    auto bounds = trace_bounds(file.db());
    if (!bounds) return bounds.error();
    auto whole = resolve_window(opt.window, bounds->trace_start_ns, bounds->trace_end_ns,
                                bounds->end_is_last_event);
    if (!whole) return whole.error();
    std::vector<Report> parts;
    TraceRows shared;
    bool has_offcpu = false, unchecked_chunks = false;
    std::vector<DamagedChunk> damaged;
    std::vector<PyLayoutGap> before_layout;
    std::set<uint32_t> seen;
    // The next batch is read while this one is analysed: the read is mostly one core decoding
    // chunks, the analysis the other, so two batches are in memory at a time.
    const auto windowed = [&](size_t i) {
      const uint32_t g = plan->groups[i];
      return (i > 0 && plan->groups[i - 1] == g) ||
             (i + 1 < plan->batches.size() && plan->groups[i + 1] == g);
    };
    using Memory = std::shared_ptr<const LoadOptions::MemoryCalls>;
    auto load = [&](size_t i, Memory memory,
                    std::shared_ptr<TraceRows> reuse) -> Result<TraceRows> {
      LoadOptions o = opt;
      o.memory_before = std::move(memory);
      o.reuse = std::move(reuse);
      o.batch = plan->batches[i];
      const Slice& sl = plan->slices[i];
      o.window_part = windowed(i);
      if (!sl.whole()) {
        spdlog::debug("explain: batch {} (group {}): time window {} .. {}", i, plan->groups[i],
                      sl.from_ns - whole->trace_start_ns, sl.to_ns - whole->trace_start_ns);
        o.window =
            WindowRequest{std::nullopt, TimePoint{true, sl.from_ns}, TimePoint{true, sl.to_ns}};
        if (sl.to_ns < whole->end_ns) {
          auto ends =
              next_calls(file.db(), *o.chunks, o.batch, sl.from_ns, sl.to_ns, whole->end_ns);
          if (!ends) return ends.error();
          o.span_ends = std::move(ends.value());
        }
      }
      auto rows = load_trace(file, o);
      // A window's launch counts in bins from the whole window's start: their sum is the whole
      // span's rate series, exactly (Stats::fine_rates).
      if (rows && o.window_part) rows->rate_origin_ns = whole->start_ns;
      return rows;
    };
    std::vector<Report> windows;  // of the group being read
    OwnCounts carried;            // of its windows without calls
    auto end_group = [&] {
      if (!windows.empty()) {
        windows.back().trace.offcpu_intervals += carried.offcpu;
        windows.back().trace.syscalls += carried.syscalls;
        windows.back().trace.block_io += carried.block_io;
        windows.back().trace.reclaims += carried.reclaims;
        parts.push_back(merge_windows(std::move(windows), *whole, th));
      }
      windows.clear();
      carried = {};
    };
    std::future<Result<TraceRows>> next =
        std::async(std::launch::async, load, 0, Memory{}, nullptr);
    // The rows of the batch analysed last, done with: batch i + 2 is read into their buffers
    // (batch i + 1 is read while batch i is analysed), so a batch's hundreds of MB of rows are
    // not faulted in, zeroed and unmapped again each time. It costs no memory: they would be
    // freed only to be allocated again.
    std::shared_ptr<TraceRows> spare;
    for (size_t i = 0; i < plan->batches.size(); ++i) {
      auto rows = next.get();
      if (!rows) return rows.error();
      if (i + 1 < plan->batches.size()) {
        // The next window of these processes starts where this one ends: its allocations
        // before it are this one's (all of memory_calls is before the window's end).
        Memory memory;
        if (plan->groups[i + 1] == plan->groups[i] && windowed(i)) {
          auto m = std::make_shared<LoadOptions::MemoryCalls>();
          m->calls = rows->memory_calls;
          for (const CallRow& c : rows->memory_calls) m->ext.push_back(rows->ext(c));
          memory = std::move(m);
        }
        next = std::async(std::launch::async, load, i + 1, std::move(memory), std::move(spare));
      }
      if (i > 0 && plan->groups[i] != plan->groups[i - 1]) end_group();
      // Every batch starts with the window's start: as the loader set it (a flight recorder's
      // file may start later than asked).
      if (i == 0) whole->start_ns = rows->window.start_ns;
      // Interval events overlapping two windows are counted in the one they start in.
      const Slice& sl = plan->slices[i];
      const bool first = i == 0 || plan->groups[i - 1] != plan->groups[i];
      const bool last = i + 1 == plan->batches.size() || plan->groups[i + 1] != plan->groups[i];
      const OwnCounts own = windowed(i) ? own_counts(*rows, first ? INT64_MIN : sl.from_ns,
                                                     last ? INT64_MAX : sl.to_ns)
                                        : OwnCounts{};
      if (rows->calls.empty()) {
        carried.offcpu += own.offcpu;
        carried.syscalls += own.syscalls;
        carried.block_io += own.block_io;
        carried.reclaims += own.reclaims;
        continue;
      }
      if (parts.empty()) shared = shared_part(*rows);
      has_offcpu |= !rows->offcpu.empty();
      unchecked_chunks |= rows->unchecked_chunks;
      for (const DamagedChunk& d : rows->damaged) {  // host-wide tables are read by every batch
        const auto same = [&](const DamagedChunk& e) {
          return e.table == d.table && e.tid == d.tid && e.ts_min == d.ts_min;
        };
        if (std::none_of(damaged.begin(), damaged.end(), same)) damaged.push_back(d);
      }
      before_layout.insert(before_layout.end(), rows->python_before_layout.begin(),
                           rows->python_before_layout.end());
      spare = std::make_shared<TraceRows>();
      if (!windowed(i)) {
        parts.push_back(analyze_rows(rows.value(), th, false));
        *spare = std::move(rows.value());
        for (const ProcessStats& p : parts.back().stats.processes) seen.insert(p.pid);
        continue;
      }
      windows.push_back(analyze_rows(rows.value(), th, true));
      *spare = std::move(rows.value());
      Report& w = windows.back();
      w.trace.offcpu_intervals = own.offcpu;
      w.trace.syscalls = own.syscalls;
      w.trace.block_io = own.block_io;
      w.trace.reclaims = own.reclaims;
      for (const ProcessStats& p : w.stats.processes) seen.insert(p.pid);
    }
    end_group();
    const bool all_pids = std::all_of(opt.pids.begin(), opt.pids.end(),
                                      [&](uint32_t pid) { return seen.count(pid) > 0; });
    if (!parts.empty() && all_pids) {
      Report r = merge_reports(std::move(parts), th);
      shared.damaged = std::move(damaged);
      shared.unchecked_chunks = unchecked_chunks;
      std::sort(before_layout.begin(), before_layout.end(),
                [](const PyLayoutGap& a, const PyLayoutGap& b) { return a.pid < b.pid; });
      shared.python_before_layout = std::move(before_layout);
      r.caveats = caveats_for(shared, has_offcpu);
      add_host_bound_hint(r);
      return r;
    }
    // No call in the window after all, or a --pid without one: the single load says so.
  }
  auto rows = load_trace(file, opt);
  if (!rows) return rows.error();
  return analyze(std::move(rows.value()), th);
}

}  // namespace gpuwhy::analysis
