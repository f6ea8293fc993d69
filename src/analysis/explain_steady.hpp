// SPDX-License-Identifier: Apache-2.0
// explain's default window for a trace that began with its program (`trace -- python train.py`):
// the steady state. The start-up (seconds of loading and building with the GPU idle) is found
// by the analysis itself (the start_up chain: long GPU-idle stretches early in a thread's span)
// and, when every GPU process of the trace had one, the report is made again from where the
// steps begin, so its shares, grades and verdict are the steady state's; the start-up stays as
// its own line at the end. A window the user gave (--since/--from/--to) is taken as it is.
#pragma once

#include "analysis/explain_batched.hpp"

namespace gpuwhy::analysis {

// Where the steady state of `whole` (a report over the whole trace) begins, relative to the trace
// start: the earliest start of the steps when every GPU process had a start-up; -1 otherwise.
int64_t steady_state_from(const Report& whole);

Result<Report> explain_steady_state(const store::TraceFile& file, const LoadOptions& opt,
                                    uint64_t max_batch_rows = kDefaultBatchRows,
                                    const Thresholds& th = {});

}  // namespace gpuwhy::analysis
