// SPDX-License-Identifier: Apache-2.0
#include "analysis/explain_batched.hpp"

#include <algorithm>
#include <future>
#include <map>
#include <set>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "analysis/sql_scan.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::analysis {
namespace {

// Rows per process of the chunks overlapping [from, to) of one chunked table.
Status add_rows(sqlite3* db, const std::string& chunks, int64_t from, int64_t to,
                std::map<uint32_t, uint64_t>& rows) {
  return each_row(
      db,
      "SELECT pid, sum(rows) FROM " + chunks + " WHERE end_max >= ?1 AND ts_min < ?2 GROUP BY pid",
      chunks,
      [&](Query& q) { rows[static_cast<uint32_t>(q.i64(0))] += static_cast<uint64_t>(q.i64(1)); },
      {from, to});
}

// What caveats_for reads, without the event rows.
TraceRows shared_part(const TraceRows& rows) {
  TraceRows m;
  m.session = rows.session;
  m.window = rows.window;
  m.live = rows.live;
  m.losses = rows.losses;
  m.wal_warning = rows.wal_warning;
  m.families_off = rows.families_off;
  m.aged_out = rows.aged_out;
  m.python_unsupported = rows.python_unsupported;
  return m;
}

// The whole-window statistics of an operation called in several batches: exact counts, totals
// and maxima; percentiles from the summed histogram (explain_batched.hpp).
OpStats merge_op(const std::vector<const OpStats*>& parts, const DurHistogram& h) {
  OpStats s = *parts.front();
  s.errors = s.bytes = s.nested = 0;
  for (const OpStats* p : parts) {
    s.errors += p->errors;
    s.bytes += p->bytes;
    s.nested += p->nested;
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

}  // namespace

Result<BatchPlan> plan_batches(sqlite3* db, const LoadOptions& opt, uint64_t max_rows) {
  auto bounds = trace_bounds(db);
  if (!bounds) return bounds.error();
  auto w = resolve_window(opt.window, bounds->trace_start_ns, bounds->trace_end_ns,
                          bounds->end_is_last_event);
  if (!w) return w.error();
  std::map<uint32_t, uint64_t> calls, rows;
  if (Status st = add_rows(db, "api_calls_chunks", w->start_ns, w->end_ns, calls); !st)
    return st.error();
  rows = calls;
  if (Status st = add_rows(db, "offcpu_chunks", w->start_ns, w->end_ns, rows); !st)
    return st.error();
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
  for (auto& b : plan.batches) std::sort(b.begin(), b.end());
  return plan;
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
  }
  r.chains = rank_chains(std::move(chains), th, r.trace.window.duration());
  sort_budgets(r.budgets);
  merge_stats(r.stats, stats);
  set_verdict(r);
  return r;
}

Result<Report> explain_file(const store::TraceFile& file, const LoadOptions& opt,
                            uint64_t max_batch_rows, const Thresholds& th) {
  auto plan = plan_batches(file.db(), opt, max_batch_rows);
  if (!plan) return plan.error();
  spdlog::debug(
      "explain: {} rows of calls and off-CPU intervals in the window, {} batch(es) of "
      "at most {} rows",
      plan->rows, plan->batches.size(), max_batch_rows);
  if (plan->batches.size() > 1) {
    std::vector<Report> parts;
    TraceRows shared;
    bool has_offcpu = false;
    std::vector<DamagedChunk> damaged;
    std::vector<PyLayoutGap> before_layout;
    std::set<uint32_t> seen;
    // The next batch is read while this one is analysed: the read is mostly one core decoding
    // chunks, the analysis the other, so two batches are in memory at a time.
    auto load = [&](size_t i) {
      LoadOptions o = opt;
      o.batch = plan->batches[i];
      return load_trace(file, o);
    };
    std::future<Result<TraceRows>> next = std::async(std::launch::async, load, 0);
    for (size_t i = 0; i < plan->batches.size(); ++i) {
      auto rows = next.get();
      if (!rows) return rows.error();
      if (i + 1 < plan->batches.size()) next = std::async(std::launch::async, load, i + 1);
      if (rows->calls.empty()) continue;
      if (parts.empty()) shared = shared_part(*rows);
      has_offcpu |= !rows->offcpu.empty();
      for (const DamagedChunk& d : rows->damaged) {  // host-wide tables are read by every batch
        const auto same = [&](const DamagedChunk& e) {
          return e.table == d.table && e.tid == d.tid && e.ts_min == d.ts_min;
        };
        if (std::none_of(damaged.begin(), damaged.end(), same)) damaged.push_back(d);
      }
      before_layout.insert(before_layout.end(), rows->python_before_layout.begin(),
                           rows->python_before_layout.end());
      parts.push_back(analyze(std::move(rows.value()), th));
      for (const ProcessStats& p : parts.back().stats.processes) seen.insert(p.pid);
    }
    const bool all_pids = std::all_of(opt.pids.begin(), opt.pids.end(),
                                      [&](uint32_t pid) { return seen.count(pid) > 0; });
    if (!parts.empty() && all_pids) {
      Report r = merge_reports(std::move(parts), th);
      shared.damaged = std::move(damaged);
      std::sort(before_layout.begin(), before_layout.end(),
                [](const PyLayoutGap& a, const PyLayoutGap& b) { return a.pid < b.pid; });
      shared.python_before_layout = std::move(before_layout);
      r.caveats = caveats_for(shared, has_offcpu);
      return r;
    }
    // No call in the window after all, or a --pid without one: the single load says so.
  }
  auto rows = load_trace(file, opt);
  if (!rows) return rows.error();
  return analyze(std::move(rows.value()), th);
}

}  // namespace gpuwhy::analysis
