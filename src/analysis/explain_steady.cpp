// SPDX-License-Identifier: Apache-2.0
#include "analysis/explain_steady.hpp"

#include <algorithm>
#include <set>

#include "analysis/units.hpp"

namespace gpuwhy::analysis {

SteadyWindow steady_window(const Report& whole) {
  // Every GPU process must have started (ended) in the trace: one that was already running has
  // no start-up, and cutting the trace's first seconds would lose its steady state.
  std::set<uint32_t> gpu_pids;
  for (const BudgetReport& b : whole.budgets) gpu_pids.insert(b.process.pid);
  if (gpu_pids.empty()) return {};
  const int64_t t0 = whole.trace.window.trace_start_ns;
  bool all_start = true, all_tail = true;
  int64_t from = INT64_MAX, to = INT64_MIN, first = INT64_MAX, last = INT64_MIN;
  for (uint32_t pid : gpu_pids) {
    const auto it = whole.phases.find(pid);
    if (it == whole.phases.end()) return {};
    const ProcessPhases& p = it->second;
    all_start &= p.start_up;
    all_tail &= p.tail;
    from = std::min(from, p.steady_from - t0);
    to = std::max(to, p.steady_to - t0);
    first = std::min(first, p.first_ns - t0);
    last = std::max(last, p.last_ns - t0);
  }
  SteadyWindow w;
  w.first = first;
  w.last = last;
  if (all_start && from > 0) w.from = from;
  if (all_tail && to > 0 && to > w.from) w.to = to;
  return w;
}

bool narrow_to_steady_state(LoadOptions& opt, const SteadyWindow& w, int64_t trace_start_ns) {
  const WindowRequest& asked = opt.window;
  if (asked.since_ns || asked.from || asked.to || !w.narrows()) return false;
  if (w.from > 0) opt.window.from = TimePoint{true, trace_start_ns + w.from};
  if (w.to > 0) opt.window.to = TimePoint{true, trace_start_ns + w.to};
  return true;
}

void add_phases(Report& steady, const Report& whole) {
  for (const Chain& c : whole.chains)
    if (is_phase(c)) steady.chains.push_back(c);
  for (const auto& [pid, p] : whole.phases) steady.phases.insert_or_assign(pid, p);
}

Caveat steady_state_caveat(const SteadyWindow& w, std::string_view what) {
  std::string where, left;
  if (w.from > 0) {
    where = "starts at " + fmt_rel(w.from) + ", where the steps begin";
    left = "the start-up before it (from " + fmt_rel(w.first) + ")";
  }
  if (w.to > 0) {
    where += std::string(where.empty() ? "" : ", and ") + "ends at " + fmt_rel(w.to) +
             (w.from > 0 ? ", where they end" : ", where the steps end");
    left +=
        std::string(left.empty() ? "" : " and ") + "the tail after it (to " + fmt_rel(w.last) + ")";
  }
  const bool audit = what == "audit", both = w.from > 0 && w.to > 0;
  return {"steady_state",
          "the " + std::string(what) + " " + where + ": " + left + (both ? " are" : " is") +
              " left out" +
              (audit ? " (--from 0 for the whole trace)"
                     : ", a line of its own at the end where it kept the GPU idle (explain "
                       "--from 0 for the whole trace)")};
}

Result<Report> explain_steady_state(const store::TraceFile& file, const LoadOptions& opt,
                                    uint64_t max_batch_rows, const Thresholds& th) {
  auto whole = explain_file(file, opt, max_batch_rows, th);
  if (!whole) return whole;
  const SteadyWindow w = steady_window(*whole);
  LoadOptions steady = opt;
  if (!narrow_to_steady_state(steady, w, whole->trace.window.trace_start_ns)) return whole;
  auto part = explain_file(file, steady, max_batch_rows, th);
  if (!part) return whole;  // the whole window's report stands
  Report& r = part.value();
  add_phases(r, *whole);
  r.caveats.push_back(steady_state_caveat(w, "report"));
  return part;
}

}  // namespace gpuwhy::analysis
