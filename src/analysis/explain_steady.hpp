// SPDX-License-Identifier: Apache-2.0
// explain's default window for a trace that began or ended with its programs (`trace -- python
// train.py`): the steady state. The analysis finds each GPU process's phases from the rate of
// its GPU work (phases.hpp); when every GPU process of the trace had a start-up, the report is
// made again from where the steps begin, and when every one had a tail, up to where they end, so
// its shares, grades and verdict are the steady state's. The start-up and the tail stay as their
// own lines at the end. A window the user gave (--since/--from/--to) is taken as it is.
// audit (audit_file.hpp) narrows its window the same way.
#pragma once

#include <string_view>

#include "analysis/explain_batched.hpp"

namespace gpuwhy::analysis {

// The steady state of `whole` (a report over the whole trace), relative to the trace start:
// `from` the earliest start of the steps when every GPU process had a start-up, `to` the latest
// end of them when every one had a tail; -1 where there is no such edge.
struct SteadyWindow {
  int64_t from = -1, to = -1;
  int64_t first = 0, last = 0;  // the GPU processes' first and last GPU calls, relative
  bool narrows() const { return from > 0 || to > 0; }
};
SteadyWindow steady_window(const Report& whole);

// Sets `opt`'s window to `w` when it narrows and the user gave no window; false otherwise.
bool narrow_to_steady_state(LoadOptions& opt, const SteadyWindow& w, int64_t trace_start_ns);

// The start-up and tail chains of `whole`, appended to `steady` (they are outside its window).
void add_phases(Report& steady, const Report& whole);

// What a report narrowed to `w` says of it; `what`: "report" or "audit".
Caveat steady_state_caveat(const SteadyWindow& w, std::string_view what);

Result<Report> explain_steady_state(const store::TraceFile& file, const LoadOptions& opt,
                                    uint64_t max_batch_rows = kDefaultBatchRows,
                                    const Thresholds& th = {});

}  // namespace gpuwhy::analysis
