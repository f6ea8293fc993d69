// SPDX-License-Identifier: Apache-2.0
#include "analysis/stats.hpp"

#include "analysis/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace gpuwhy::analysis {
namespace {

struct OpAcc {
  std::vector<int64_t> durs;
  uint64_t errors = 0, bytes = 0;
};

using OpAccs = std::map<uint16_t, OpAcc>;

// Reorders each durs vector (percentiles are selected in place); the values stay, so the
// accumulators can still be merged afterwards.
std::vector<OpStats> finish_ops(const TraceRows& rows, OpAccs& acc) {
  std::vector<OpStats> out;
  out.reserve(acc.size());
  for (auto& [api, a] : acc) {
    OpStats s;
    s.api = api;
    s.name = std::string(rows.api_name(api));
    s.cat = rows.api(api).cat;
    s.errors = a.errors;
    s.bytes = a.bytes;
    s.dur = summarize(a.durs);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const OpStats& a, const OpStats& b) {
    return a.dur.total_ns != b.dur.total_ns ? a.dur.total_ns > b.dur.total_ns : a.name < b.name;
  });
  return out;
}

void add(OpAccs& acc, const CallRow& c) {
  OpAcc& a = acc[c.api];
  a.durs.push_back(c.dur);
  if (c.ret != 0) ++a.errors;
  a.bytes += c.bytes;
}

// The accumulators of several threads as one (a process's, the whole trace's).
OpAccs merged(const std::vector<const OpAccs*>& parts) {
  OpAccs out;
  for (const OpAccs* p : parts) {
    for (const auto& [api, a] : *p) {
      OpAcc& o = out[api];
      o.durs.insert(o.durs.end(), a.durs.begin(), a.durs.end());
      o.errors += a.errors;
      o.bytes += a.bytes;
    }
  }
  return out;
}

RateDrop drop_of(const RateSeries& s, double min_drop) {
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

}  // namespace

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

RateSeries make_rate_series(const std::vector<int64_t>& ts, int64_t origin_ns, int64_t span_start,
                            int64_t span_end) {
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
  for (int64_t t : ts) {
    if (t < s.start_ns) continue;
    const size_t i = static_cast<size_t>((t - s.start_ns) / w);
    if (i < n) ++s.counts[i];
  }
  return s;
}

RateDrop find_rate_drop(const std::vector<double>& rates, double min_drop) {
  RateDrop best;
  const size_t n = rates.size();
  if (n < 4) return best;
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + rates[i];
  double best_score = 0;
  size_t best_k = 0;
  for (size_t k = 2; k + 2 <= n; ++k) {
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
  // Threads come from the joins (already one per tid, with their call ranges): each thread's
  // durations are collected once, and processes and the whole trace merge them.
  const size_t nt = joins.threads.size();
  std::vector<OpAccs> accs(nt);
  std::vector<ThreadStats> threads(nt);
  parallel_for(nt, [&](size_t k) {
    const ThreadSummary& t = joins.threads[k];
    for (size_t i = t.call_begin; i < t.call_end; ++i) add(accs[k], rows.calls[i]);
    ThreadStats& ts = threads[k];
    ts.pid = t.pid;
    ts.tid = t.tid;
    ts.comm = rows.thread_name(t.tid);
    ts.calls = t.calls();
    ts.first_ns = t.first_ns;
    ts.last_ns = t.last_ns;
    ts.api_ns = t.api_ns;
    ts.off = t.off;
    ts.ops = finish_ops(rows, accs[k]);
  });
  std::map<uint32_t, ProcessStats> procs;
  std::map<uint32_t, std::vector<size_t>> threads_of;  // pid -> indexes into joins.threads
  for (size_t k = 0; k < nt; ++k) {
    const ThreadSummary& t = joins.threads[k];
    threads_of[t.pid].push_back(k);
    ProcessStats& p = procs[t.pid];
    if (p.calls == 0) {
      p.pid = t.pid;
      p.comm = rows.process_name(t.pid);
      p.first_ns = t.first_ns;
      p.last_ns = t.last_ns;
    }
    p.calls += threads[k].calls;
    p.api_ns += threads[k].api_ns;
    p.first_ns = std::min(p.first_ns, t.first_ns);
    p.last_ns = std::max(p.last_ns, t.last_ns);
    p.threads.push_back(std::move(threads[k]));
  }
  std::vector<ProcessStats*> plist;
  for (auto& [pid, p] : procs) plist.push_back(&p);
  parallel_for(plist.size(), [&](size_t i) {
    ProcessStats& p = *plist[i];
    std::sort(p.threads.begin(), p.threads.end(), [](const ThreadStats& a, const ThreadStats& b) {
      return a.calls != b.calls ? a.calls > b.calls : a.tid < b.tid;
    });
    if (p.threads.size() == 1) {
      p.ops = p.threads[0].ops;  // the common case: nothing to merge
    } else {
      std::vector<const OpAccs*> parts;
      for (size_t k : threads_of[p.pid]) parts.push_back(&accs[k]);
      OpAccs all = merged(parts);
      p.ops = finish_ops(rows, all);
    }
  });
  for (auto& [pid, p] : procs) st.processes.push_back(std::move(p));
  std::sort(st.processes.begin(), st.processes.end(),
            [](const ProcessStats& a, const ProcessStats& b) {
              return a.calls != b.calls ? a.calls > b.calls : a.pid < b.pid;
            });
  if (st.processes.size() == 1) {
    st.ops = st.processes[0].ops;
  } else {
    std::vector<const OpAccs*> parts;
    for (const OpAccs& a : accs) parts.push_back(&a);
    OpAccs all = merged(parts);
    st.ops = finish_ops(rows, all);
  }
  // Launch rate per process, over the process's active span.
  st.rates.resize(st.processes.size());
  parallel_for(st.processes.size(), [&](size_t i) {
    const ProcessStats& p = st.processes[i];
    std::vector<int64_t> launches, calls;
    for (size_t k : threads_of[p.pid]) {
      const ThreadSummary& t = joins.threads[k];
      for (size_t c = t.call_begin; c < t.call_end; ++c) {
        const CallRow& row = rows.calls[c];
        calls.push_back(row.ts);
        if (row.cat == Category::Launch || row.cat == Category::Graph) launches.push_back(row.ts);
      }
    }
    const bool use_launches = launches.size() >= 20;
    const std::vector<int64_t>& ts = use_launches ? launches : calls;
    if (ts.size() < 20) return;
    const auto [lo, hi] = std::minmax_element(ts.begin(), ts.end());
    RateSeries s = make_rate_series(ts, rows.window.start_ns, *lo, *hi);
    s.pid = p.pid;
    s.comm = p.comm;
    s.what = use_launches ? "launches" : "calls";
    s.drop = drop_of(s, min_drop);
    st.rates[i] = std::move(s);
  });
  // Processes with too few calls for a rate leave an empty slot.
  st.rates.erase(std::remove_if(st.rates.begin(), st.rates.end(),
                                [](const RateSeries& s) { return s.counts.empty(); }),
                 st.rates.end());
  return st;
}

}  // namespace gpuwhy::analysis
