// SPDX-License-Identifier: Apache-2.0
#include "analysis/stats.hpp"

#include "analysis/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <optional>
#include <span>

namespace gpuwhy::analysis {
namespace {

// One thread's calls of one operation. The joins' pass over its calls counted their durations
// by bucket (OpCount); a second pass keeps the durations of the buckets where a percentile of a
// scope the thread is in (itself, its process, the trace) falls, to select it among them.
struct OpAcc {
  const OpCount* count = nullptr;
  std::vector<size_t> wanted;              // buckets whose durations the second pass keeps
  std::vector<uint8_t> wanted_index;       // bucket -> 1 + index into `wanted`; 0: not wanted
  std::vector<std::vector<int64_t>> kept;  // the durations of each wanted bucket

  uint16_t api() const { return count->api; }
  void want(size_t bucket) {
    if (wanted_index.empty()) wanted_index.assign(DurHistogram::kBuckets, 0);
    if (wanted_index[bucket] != 0) return;
    wanted.push_back(bucket);  // at most 3 percentiles x 3 scopes: fits the uint8_t index
    wanted_index[bucket] = static_cast<uint8_t>(wanted.size());
    kept.emplace_back();
  }
  void keep(int64_t dur) {
    if (wanted.empty()) return;
    if (const uint8_t i = wanted_index[DurHistogram::bucket(dur)]) kept[i - 1].push_back(dur);
  }
  std::span<const int64_t> kept_in(size_t bucket) const {
    const uint8_t i = wanted_index.empty() ? 0 : wanted_index[bucket];
    return i ? std::span<const int64_t>(kept[i - 1]) : std::span<const int64_t>();
  }
};

// One thread's operations, by api.
struct ThreadOps {
  std::vector<OpAcc> ops;     // ascending api
  std::vector<int32_t> slot;  // api -> index into ops, -1 when the thread never called it

  const OpAcc* find(uint16_t api) const {
    return api < slot.size() && slot[api] >= 0 ? &ops[static_cast<size_t>(slot[api])] : nullptr;
  }
};

// The operations of a thread, from the counts the joins made.
ThreadOps ops_of(const std::vector<OpCount>& counts) {
  ThreadOps out;
  const size_t n = counts.empty() ? 0 : size_t{counts.back().api} + 1;
  out.slot.assign(n, -1);
  out.ops.resize(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    out.ops[i].count = &counts[i];
    out.slot[counts[i].api] = static_cast<int32_t>(i);
  }
  return out;
}

// The second pass over a thread's calls.
void keep_wanted(const TraceRows& rows, const ThreadSummary& t, ThreadOps& ops) {
  for (size_t i = t.call_begin; i < t.call_end; ++i) {
    const CallRow& c = rows.calls[i];
    ops.ops[static_cast<size_t>(ops.slot[c.api])].keep(c.dur);
  }
}

// One operation over a scope (a set of threads) between the two passes: everything but the
// percentiles, and where they are.
struct PlannedOp {
  uint16_t api = 0;
  DurStats dur;  // count, total and max
  uint64_t errors = 0, bytes = 0, nested = 0, imputed = 0;
  DurHistogram::Rank at[std::size(kSummaryPercentiles)];
};

// Plans the operations of `scope` (indexes into `threads`) and marks the buckets its
// percentiles fall in as wanted by each of its threads.
// `hists`, when given, receives each operation's histogram over the scope (Stats::op_hists).
std::vector<PlannedOp> plan_ops(std::vector<ThreadOps>& threads, std::span<const size_t> scope,
                                std::vector<std::pair<uint16_t, DurHistogram>>* hists = nullptr) {
  std::map<uint16_t, std::vector<OpAcc*>> by_api;
  for (size_t k : scope)
    for (OpAcc& a : threads[k].ops) by_api[a.api()].push_back(&a);
  std::vector<PlannedOp> out;
  for (const auto& [api, parts] : by_api) {
    DurHistogram sum;
    if (parts.size() > 1)
      for (const OpAcc* a : parts) sum.add(a->count->hist);
    const DurHistogram& h = parts.size() > 1 ? sum : parts.front()->count->hist;
    if (hists) hists->emplace_back(api, h);
    PlannedOp op;
    op.api = api;
    op.dur.count = h.count();
    op.dur.total_ns = h.total();
    op.dur.max = h.max();
    for (const OpAcc* a : parts) {
      op.errors += a->count->errors;
      op.bytes += a->count->bytes;
      op.nested += a->count->nested;
      op.imputed += a->count->imputed;
    }
    for (size_t i = 0; i < std::size(kSummaryPercentiles); ++i) {
      op.at[i] = h.locate(nearest_rank_index(h.count(), kSummaryPercentiles[i]));
      for (OpAcc* a : parts) a->want(op.at[i].bucket);
    }
    out.push_back(op);
  }
  return out;
}

}  // namespace

// Most total time first; ties by name, so the order never depends on the input's.
void sort_ops(std::vector<OpStats>& ops) {
  std::sort(ops.begin(), ops.end(), [](const OpStats& a, const OpStats& b) {
    return a.dur.total_ns != b.dur.total_ns ? a.dur.total_ns > b.dur.total_ns : a.name < b.name;
  });
}

void sort_processes(std::vector<ProcessStats>& processes) {
  std::sort(processes.begin(), processes.end(), [](const ProcessStats& a, const ProcessStats& b) {
    return a.calls != b.calls ? a.calls > b.calls : a.pid < b.pid;
  });
}

namespace {

// The scope's operations once the second pass kept the wanted durations: each percentile is
// selected among its bucket's durations, gathered from the scope's threads.
std::vector<OpStats> finish_ops(const TraceRows& rows, const std::vector<ThreadOps>& threads,
                                std::span<const size_t> scope, std::vector<PlannedOp>& planned) {
  std::vector<OpStats> out;
  out.reserve(planned.size());
  std::vector<int64_t> v;
  for (PlannedOp& op : planned) {
    for (size_t i = 0; i < std::size(kSummaryPercentiles); ++i) {
      v.clear();
      for (size_t k : scope) {
        if (const OpAcc* a = threads[k].find(op.api)) {
          const std::span<const int64_t> kept = a->kept_in(op.at[i].bucket);
          v.insert(v.end(), kept.begin(), kept.end());
        }
      }
      op.dur.*kSummaryFields[i] = percentile_at(v, op.at[i].in_bucket);
    }
    OpStats s;
    s.api = op.api;
    s.name = std::string(rows.api_name(op.api));
    s.cat = rows.api(op.api).cat;
    s.dur = op.dur;
    s.errors = op.errors;
    s.bytes = op.bytes;
    s.nested = op.nested;
    s.imputed = op.imputed;
    s.entry_only = rows.entry_only(s.cat);
    out.push_back(std::move(s));
  }
  sort_ops(out);
  return out;
}

}  // namespace

RateDrop rate_drop_of(const RateSeries& s, double min_drop) {
  // Intervals mostly outside the active span (the first and last, partly) are too noisy to use.
  std::vector<size_t> idx;
  std::vector<double> rates;
  for (size_t i = 0; i < s.counts.size(); ++i) {
    if (s.covered_ns[i] * 2 < s.interval_ns) continue;
    idx.push_back(i);
    rates.push_back(s.rate(i));
  }
  RateDrop d = find_rate_drop(rates, min_drop);
  if (!d.found) return d;
  // A handful of events per interval is noise, not a rate.
  uint64_t before = 0;
  for (size_t k = 0; k < d.at; ++k) before += s.counts[idx[k]];
  if (before < 5 * d.at) return RateDrop{};
  d.at = idx[d.at];
  d.at_ns = s.start_ns + static_cast<int64_t>(d.at) * s.interval_ns;
  return d;
}

namespace {

bool is_launch(const CallRow& c) { return c.cat == Category::Launch || c.cat == Category::Graph; }

// The launch rate of one process (its threads: indexes into joins.threads), or its call rate
// when it made fewer than 20 launches; none under 20 calls. A thread's calls are in time order,
// so the span comes from the ends of its calls and the one full pass over them is the counting.
std::optional<RateSeries> rate_series(const TraceRows& rows, const Joins& joins,
                                      const std::vector<size_t>& threads, double min_drop) {
  uint64_t launches = 0, calls = 0;
  for (size_t k : threads) {
    const ThreadSummary& t = joins.threads[k];
    calls += t.calls();
    for (size_t c = t.call_begin; c < t.call_end && launches < 20; ++c)
      launches += is_launch(rows.calls[c]);
  }
  const bool use_launches = launches >= 20;
  if (!use_launches && calls < 20) return std::nullopt;
  auto counted = [&](const CallRow& c) { return !use_launches || is_launch(c); };
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t k : threads) {
    const ThreadSummary& t = joins.threads[k];
    const auto first = rows.calls.begin() + static_cast<ptrdiff_t>(t.call_begin);
    const auto last = rows.calls.begin() + static_cast<ptrdiff_t>(t.call_end);
    if (auto it = std::find_if(first, last, counted); it != last) lo = std::min(lo, it->ts);
    const auto rfirst = std::make_reverse_iterator(last), rlast = std::make_reverse_iterator(first);
    if (auto it = std::find_if(rfirst, rlast, counted); it != rlast) hi = std::max(hi, it->ts);
  }
  RateSeries s = empty_rate_series(rows.window.start_ns, lo, hi);
  for (size_t k : threads) {
    const ThreadSummary& t = joins.threads[k];
    RateSeries::Counter count(s);  // a thread's calls come in time order
    for (size_t c = t.call_begin; c < t.call_end; ++c)
      if (counted(rows.calls[c])) count.add(rows.calls[c].ts);
  }
  s.what = use_launches ? "launches" : "calls";
  s.drop = rate_drop_of(s, min_drop);
  return s;
}

// A window part's counts of one process's calls in fine bins: the calls that start in the part's
// window, and in the first window also those that started before the whole window (one analysis
// of the whole reads them too): each call counted in exactly one part.
FineRates fine_rates(const TraceRows& rows, const Joins& joins, const std::vector<size_t>& threads,
                     uint32_t pid) {
  FineRates f;
  f.pid = pid;
  const int64_t origin = rows.rate_origin_ns, from = rows.window.start_ns, to = rows.window.end_ns;
  const bool first = from <= origin;
  auto mine = [&](int64_t ts) { return ts < to && (ts >= from || first); };
  auto bin = [&](int64_t ts) {  // floor division: a call may start before the origin
    const int64_t d = ts - origin;
    return d >= 0 ? d / FineRates::kFineNs : -((-d + FineRates::kFineNs - 1) / FineRates::kFineNs);
  };
  for (size_t k : threads) {
    const ThreadSummary& t = joins.threads[k];
    for (size_t c = t.call_begin; c < t.call_end; ++c) {
      const CallRow& r = rows.calls[c];
      if (!mine(r.ts)) continue;
      for (FineRates::Counts* n : {&f.calls, is_launch(r) ? &f.launches : nullptr}) {
        if (!n) continue;
        n->lo = std::min(n->lo, r.ts);
        n->hi = std::max(n->hi, r.ts);
        ++n->total;
      }
    }
  }
  for (FineRates::Counts* n : {&f.calls, &f.launches}) {
    if (n->total == 0) continue;
    n->first_bin = bin(n->lo);
    n->bins.assign(static_cast<size_t>(bin(n->hi) - n->first_bin + 1), 0);
  }
  for (size_t k : threads) {
    const ThreadSummary& t = joins.threads[k];
    for (size_t c = t.call_begin; c < t.call_end; ++c) {
      const CallRow& r = rows.calls[c];
      if (!mine(r.ts)) continue;
      const int64_t b = bin(r.ts);
      ++f.calls.bins[static_cast<size_t>(b - f.calls.first_bin)];
      if (is_launch(r)) ++f.launches.bins[static_cast<size_t>(b - f.launches.first_bin)];
    }
  }
  return f;
}

}  // namespace

std::optional<RateSeries> rates_from_fine(const std::vector<const FineRates*>& parts,
                                          int64_t origin_ns, double min_drop) {
  uint64_t launches = 0, calls = 0;
  for (const FineRates* p : parts) {
    launches += p->launches.total;
    calls += p->calls.total;
  }
  // rate_series()'s choice: launches when there are 20, else calls, else none.
  const bool use_launches = launches >= 20;
  if (!use_launches && calls < 20) return std::nullopt;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const FineRates* p : parts) {
    const FineRates::Counts& n = use_launches ? p->launches : p->calls;
    if (n.total == 0) continue;
    lo = std::min(lo, n.lo);
    hi = std::max(hi, n.hi);
  }
  RateSeries s = empty_rate_series(origin_ns, lo, hi);
  for (const FineRates* p : parts) {
    const FineRates::Counts& n = use_launches ? p->launches : p->calls;
    for (size_t i = 0; i < n.bins.size(); ++i) {
      if (n.bins[i] == 0) continue;
      // The bin's start: inside one interval, as every interval is whole bins from the origin.
      const int64_t t = origin_ns + (n.first_bin + static_cast<int64_t>(i)) * FineRates::kFineNs;
      if (t < s.start_ns) continue;  // before the window: the Counter ignores them too
      const auto k = static_cast<size_t>((t - s.start_ns) / s.interval_ns);
      if (k < s.counts.size()) s.counts[k] += n.bins[i];
    }
  }
  s.what = use_launches ? "launches" : "calls";
  s.drop = rate_drop_of(s, min_drop);
  return s;
}

double RateSeries::rate(size_t i) const {
  return covered_ns[i] > 0 ? counts[i] * 1e9 / static_cast<double>(covered_ns[i]) : 0.0;
}

int64_t choose_interval(int64_t span_ns, int max_intervals) {
  static constexpr int64_t kMs = 1'000'000;
  static constexpr int64_t kSteps[] = {
      10 * kMs,     20 * kMs,     50 * kMs,     100 * kMs,     200 * kMs,    500 * kMs,
      1000 * kMs,   2000 * kMs,   5000 * kMs,   10000 * kMs,   30000 * kMs,  60000 * kMs,
      120000 * kMs, 300000 * kMs, 600000 * kMs, 1800000 * kMs, 3600000 * kMs};
  for (int64_t w : kSteps)
    if (span_ns <= w * max_intervals) return w;
  return kSteps[std::size(kSteps) - 1];
}

void RateSeries::Counter::add(int64_t t) {
  if (t < from_ || t >= to_) {
    if (t < s_.start_ns) return;
    at_ = static_cast<size_t>((t - s_.start_ns) / s_.interval_ns);
    from_ = s_.start_ns + static_cast<int64_t>(at_) * s_.interval_ns;
    to_ = from_ + s_.interval_ns;
  }
  if (at_ < s_.counts.size()) ++s_.counts[at_];
}

RateSeries empty_rate_series(int64_t origin_ns, int64_t span_start, int64_t span_end) {
  RateSeries s;
  s.interval_ns = choose_interval(span_end - span_start);
  const int64_t w = s.interval_ns;
  const int64_t first = span_start > origin_ns ? (span_start - origin_ns) / w : 0;
  const int64_t last = span_end > origin_ns ? (span_end - origin_ns) / w : 0;
  s.start_ns = origin_ns + first * w;
  const size_t n = static_cast<size_t>(last - first + 1);
  s.counts.assign(n, 0);
  s.covered_ns.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t b = s.start_ns + static_cast<int64_t>(i) * w;
    s.covered_ns[i] = overlap_ns(b, b + w, span_start, span_end);
  }
  return s;
}

RateSeries make_rate_series(const std::vector<int64_t>& ts, int64_t origin_ns, int64_t span_start,
                            int64_t span_end) {
  RateSeries s = empty_rate_series(origin_ns, span_start, span_end);
  RateSeries::Counter count(s);
  for (int64_t t : ts) count.add(t);
  return s;
}

RateDrop find_rate_drop(const std::vector<double>& rates, double min_drop) {
  RateDrop best;
  const size_t n = rates.size();
  if (n < 5) return best;
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + rates[i];
  double best_score = 0;
  size_t best_k = 0;
  // Two intervals at least before the split and three after it: a slowdown in a job's last
  // two intervals is as often its ending (its last steps, a rank waiting for others to exit)
  // as a drop that stayed, and with steps near the interval's length it is two samples of noise.
  for (size_t k = 2; k + 3 <= n; ++k) {
    const double before = prefix[k] / static_cast<double>(k);
    const double after = (prefix[n] - prefix[k]) / static_cast<double>(n - k);
    // Weighting by sqrt(k (n - k)) prefers a split that many intervals on both sides agree on
    // over one that isolates a single odd interval.
    const double score = (before - after) * std::sqrt(static_cast<double>(k * (n - k)));
    if (score > best_score) {
      best_score = score;
      best_k = k;
    }
  }
  if (best_k == 0) return best;
  const double before = prefix[best_k] / static_cast<double>(best_k);
  const double after = (prefix[n] - prefix[best_k]) / static_cast<double>(n - best_k);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[(v.size() - 1) / 2];
  };
  const double med_before = median({rates.begin(), rates.begin() + static_cast<ptrdiff_t>(best_k)});
  const double med_after = median({rates.begin() + static_cast<ptrdiff_t>(best_k), rates.end()});
  if (before <= 0 || after > (1 - min_drop) * before || med_after > (1 - min_drop) * med_before)
    return best;
  best.found = true;
  best.at = best_k;
  best.before_per_s = before;
  best.after_per_s = after;
  return best;
}

Stats compute_stats(const TraceRows& rows, const Joins& joins, double min_drop) {
  Stats st;
  st.calls = rows.calls.size();
  // Threads come from the joins (already one per tid, with their call ranges). Every scope's
  // percentiles (each thread, each process, the trace) come from two passes over each thread's
  // calls: bucket counts (the joins' pass), then the durations of the buckets the percentiles
  // fall in.
  const size_t nt = joins.threads.size();
  std::vector<ThreadOps> ops(nt);
  for (size_t k = 0; k < nt; ++k) ops[k] = ops_of(joins.op_counts[k]);
  const auto calls_of = [&](size_t k) { return joins.threads[k].calls(); };
  std::map<uint32_t, std::vector<size_t>> threads_of;  // pid -> indexes into joins.threads
  std::vector<size_t> all(nt);
  for (size_t k = 0; k < nt; ++k) {
    threads_of[joins.threads[k].pid].push_back(k);
    all[k] = k;
  }
  std::vector<std::vector<PlannedOp>> thread_plan(nt);
  for (size_t k = 0; k < nt; ++k) thread_plan[k] = plan_ops(ops, std::span(&all[k], 1));
  std::map<uint32_t, std::vector<PlannedOp>> process_plan;
  for (const auto& [pid, ks] : threads_of) process_plan[pid] = plan_ops(ops, ks);
  std::vector<PlannedOp> trace_plan = plan_ops(ops, all, &st.op_hists);
  parallel_for_largest_first(nt, calls_of,
                             [&](size_t k) { keep_wanted(rows, joins.threads[k], ops[k]); });

  std::map<uint32_t, ProcessStats> procs;
  for (size_t k = 0; k < nt; ++k) {
    const ThreadSummary& t = joins.threads[k];
    ThreadStats ts;
    ts.pid = t.pid;
    ts.tid = t.tid;
    ts.comm = rows.thread_name(t.tid);
    ts.calls = t.calls();
    ts.first_ns = t.first_ns;
    ts.last_ns = t.last_ns;
    ts.api_ns = t.api_ns;
    ts.off = t.off;
    ts.ops = finish_ops(rows, ops, std::span(&all[k], 1), thread_plan[k]);
    ProcessStats& p = procs[t.pid];
    if (p.calls == 0) {
      p.pid = t.pid;
      p.comm = rows.process_name(t.pid);
      p.first_ns = t.first_ns;
      p.last_ns = t.last_ns;
    }
    p.calls += ts.calls;
    p.api_ns += ts.api_ns;
    p.first_ns = std::min(p.first_ns, t.first_ns);
    p.last_ns = std::max(p.last_ns, t.last_ns);
    p.threads.push_back(std::move(ts));
  }
  for (auto& [pid, p] : procs) {
    std::sort(p.threads.begin(), p.threads.end(), [](const ThreadStats& a, const ThreadStats& b) {
      return a.calls != b.calls ? a.calls > b.calls : a.tid < b.tid;
    });
    p.ops = finish_ops(rows, ops, threads_of[pid], process_plan[pid]);
    st.processes.push_back(std::move(p));
  }
  sort_processes(st.processes);
  st.ops = finish_ops(rows, ops, all, trace_plan);
  // Launch rate per process, over the process's active span.
  st.rates.resize(st.processes.size());
  parallel_for(st.processes.size(), [&](size_t i) {
    const ProcessStats& p = st.processes[i];
    if (auto s = rate_series(rows, joins, threads_of[p.pid], min_drop)) {
      s->pid = p.pid;
      s->comm = p.comm;
      st.rates[i] = std::move(*s);
    }
  });
  if (rows.rate_origin_ns != 0) {
    st.fine_rates.resize(st.processes.size());
    parallel_for(st.processes.size(), [&](size_t i) {
      const uint32_t pid = st.processes[i].pid;
      st.fine_rates[i] = fine_rates(rows, joins, threads_of.at(pid), pid);
    });
  }
  // Processes with too few calls for a rate leave an empty slot.
  st.rates.erase(std::remove_if(st.rates.begin(), st.rates.end(),
                                [](const RateSeries& s) { return s.counts.empty(); }),
                 st.rates.end());
  return st;
}

}  // namespace gpuwhy::analysis
