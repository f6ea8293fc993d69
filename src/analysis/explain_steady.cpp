// SPDX-License-Identifier: Apache-2.0
#include "analysis/explain_steady.hpp"

#include <algorithm>
#include <set>

#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

// Where the start_up chain says the steps begin, relative to the trace start; -1: not one.
int64_t steady_from(const Chain& c) {
  if (c.kind != "start_up") return -1;
  for (const auto& [k, v] : c.metrics)
    if (k == "steady_from_rel_ns") return static_cast<int64_t>(v);
  return -1;
}

}  // namespace

int64_t steady_state_from(const Report& whole) {
  // Every GPU process must have started in the trace: one that was already running has no
  // start-up, and cutting its first seconds would lose its steady state.
  std::set<uint32_t> gpu_pids, started;
  int64_t from = -1;
  for (const BudgetReport& b : whole.budgets) gpu_pids.insert(b.process.pid);
  for (const Chain& c : whole.chains) {
    const int64_t at = steady_from(c);
    if (at < 0) continue;
    started.insert(c.process.pid);
    from = from < 0 ? at : std::min(from, at);
  }
  return from > 0 && started == gpu_pids ? from : -1;
}

Result<Report> explain_steady_state(const store::TraceFile& file, const LoadOptions& opt,
                                    uint64_t max_batch_rows, const Thresholds& th) {
  auto whole = explain_file(file, opt, max_batch_rows, th);
  if (!whole) return whole;
  const WindowRequest& w = opt.window;
  if (w.since_ns || w.from || w.to) return whole;
  const int64_t from = steady_state_from(*whole);
  if (from < 0) return whole;
  LoadOptions steady = opt;
  const int64_t start = whole->trace.window.trace_start_ns + from;
  steady.window.from = TimePoint{true, start};
  auto part = explain_file(file, steady, max_batch_rows, th);
  if (!part) return whole;  // the whole window's report stands
  Report& r = part.value();
  // The start-up is summarised after the steady state's causes, as found over the whole window.
  for (const Chain& c : whole->chains)
    if (c.kind == "start_up") r.chains.push_back(c);
  r.caveats.push_back(
      {"steady_state",
       "the report starts at " + fmt_rel(from) +
           ", where the steps begin: the start-up before it is summarised last (explain --from 0 "
           "for the whole trace)"});
  return part;
}

}  // namespace gpuwhy::analysis
