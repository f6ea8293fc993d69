// SPDX-License-Identifier: Apache-2.0
#include "analysis/phases.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <vector>

namespace gpuwhy::analysis {
namespace {

// The densest run of ts (steady_run's first step): Kadane's maximum-sum run over the events,
// each worth 1 less θ times the gap before it.
EventRun densest_run(std::span<const int64_t> ts, double theta) {
  EventRun best{0, 0}, cur{0, 0};
  double best_score = 1, score = 1;
  for (size_t j = 1; j < ts.size(); ++j) {
    const double next = score + 1 - theta * static_cast<double>(ts[j] - ts[j - 1]);
    if (next < 1) {  // starting afresh at j is worth more than carrying the run on
      cur = {j, j};
      score = 1;
    } else {
      cur.last = j;
      score = next;
    }
    if (score > best_score) {
      best_score = score;
      best = cur;
    }
  }
  return best;
}

// The gap a run spends half its time in gaps shorter than: a time-weighted median, over the
// middle half of the run (what its start-up or tail holds does not move it).
int64_t typical_gap(std::span<const int64_t> ts, EventRun run) {
  const size_t m = run.last - run.first + 1;
  std::vector<int64_t> gaps;
  for (size_t k = run.first + m / 4; k < run.first + 3 * m / 4; ++k)
    gaps.push_back(ts[k + 1] - ts[k]);
  std::sort(gaps.begin(), gaps.end());
  int64_t total = 0;
  for (int64_t g : gaps) total += g;
  int64_t acc = 0;
  for (int64_t g : gaps) {
    acc += g;
    if (2 * acc >= total) return g;
  }
  return 0;
}

}  // namespace

EventRun steady_run(std::span<const int64_t> ts) {
  const size_t n = ts.size();
  if (n < kMinPhaseEvents) return {0, n == 0 ? 0 : n - 1};
  const size_t q1 = n / 4, q3 = 3 * n / 4;
  const int64_t mid_ns = ts[q3] - ts[q1];
  if (mid_ns <= 0) return {0, n - 1};
  const double theta = static_cast<double>(q3 - q1) / static_cast<double>(mid_ns) / 10;
  EventRun run = densest_run(ts, theta);
  const size_t m = run.last - run.first + 1;
  if (m < kMinPhaseEvents) return run;
  run.typical_gap = typical_gap(ts, run);
  const int64_t cut = std::max<int64_t>(10 * run.typical_gap, (ts[run.last] - ts[run.first]) / 50);
  const size_t edge = m / 10;
  // Events per ns over [ts[a], ts[b]] (a < b).
  const auto rate = [&](size_t a, size_t b) {
    return static_cast<double>(b - a) / static_cast<double>(std::max<int64_t>(1, ts[b] - ts[a]));
  };
  // A pause cuts only where the part it cuts off, the pause with it, ran at under half the rate
  // of the rest: a warm-up step before seconds of loading, not the last steps of a loop that a
  // preemption held up for a few milliseconds.
  EventRun out = run;
  for (size_t k = run.first; k < run.first + edge; ++k)  // the last such pause ends the start-up
    if (ts[k + 1] - ts[k] > cut && rate(run.first, k + 1) < rate(k + 1, run.last) / 2)
      out.first = k + 1;
  for (size_t k = run.last - edge; k < run.last; ++k) {
    if (ts[k + 1] - ts[k] > cut && rate(k, run.last) < rate(run.first, k) / 2) {
      out.last = k;  // the first such pause begins the tail
      break;
    }
  }
  return out;
}

PhaseMap process_phases(const TraceRows& rows, const Joins& joins) {
  struct Calls {
    std::vector<std::pair<int64_t, int64_t>> enqueues, drains;  // (ts, end)
    int64_t first = std::numeric_limits<int64_t>::max(), last = 0;
  };
  std::map<uint32_t, Calls> by_pid;
  for (const ThreadSummary& t : joins.threads) {
    Calls& c = by_pid[t.pid];
    c.first = std::min(c.first, t.first_ns);
    c.last = std::max(c.last, t.last_ns);
    for (size_t i = t.call_begin; i < t.call_end; ++i) {
      const uint8_t bits = joins.bits[i];
      const CallRow& r = rows.calls[i];
      if (bits & call_bits::kEnqueues) c.enqueues.emplace_back(r.ts, r.end());
      if (bits & call_bits::kDrains) c.drains.emplace_back(r.ts, r.end());
    }
  }
  PhaseMap out;
  for (auto& [pid, c] : by_pid) {
    ProcessPhases p;
    p.first_ns = p.steady_from = c.first;
    p.last_ns = p.steady_to = c.last;
    std::sort(c.enqueues.begin(), c.enqueues.end());
    std::sort(c.drains.begin(), c.drains.end());
    std::vector<int64_t> ts;
    ts.reserve(c.enqueues.size());
    for (const auto& e : c.enqueues) ts.push_back(e.first);
    if (ts.size() >= kMinPhaseEvents) {
      const EventRun run = steady_run(ts);
      const int64_t span = c.last - c.first;
      const int64_t min_ns = std::max(
          static_cast<int64_t>(kMinPhaseShare * static_cast<double>(span)), 10 * run.typical_gap);
      // Started or exited inside the window: else what lies outside the steps is the window's
      // edge, not the program's start or end (a trace attached to a running job).
      // Of the processes that had the pid (pids are reused), the last to start before its calls.
      const ProcessRow* proc = nullptr;
      for (const ProcessRow& pr : rows.processes)
        if (pr.pid == pid && pr.start_ns <= c.first && (!proc || pr.start_ns > proc->start_ns))
          proc = &pr;
      // A process that started a little before the window (`trace -- cmd` opens its session
      // after the command's fork) is seen starting too: the window holds most of its start-up.
      const int64_t before_window = proc ? rows.window.start_ns - proc->start_ns : 0;
      const bool started =
          proc && proc->start_ns > 0 && before_window < ts[run.first] - rows.window.start_ns;
      const bool exited = proc && proc->exit_ns > 0 && proc->exit_ns <= rows.window.end_ns;
      const int64_t from = ts[run.first];
      int64_t to = c.enqueues[run.last].second;
      auto drain = std::lower_bound(c.drains.begin(), c.drains.end(),
                                    std::pair<int64_t, int64_t>{ts[run.last], 0});
      if (drain != c.drains.end()) to = std::max(to, drain->second);
      to = std::min(to, c.last);
      if (started && from - c.first >= min_ns) {
        p.start_up = true;
        p.steady_from = from;
      }
      if (exited && c.last - to >= min_ns) {
        p.tail = true;
        p.steady_to = to;
      }
      if (ts[run.last] > ts[run.first])
        p.steady_rate = static_cast<double>(run.last - run.first) * 1e9 /
                        static_cast<double>(ts[run.last] - ts[run.first]);
    }
    out.emplace(pid, p);
  }
  return out;
}

}  // namespace gpuwhy::analysis
