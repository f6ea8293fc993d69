// SPDX-License-Identifier: Apache-2.0
// Launches recorded without a duration by adaptive launch timing (issue 33; the agent's default,
// trace --full turns it off): a thread launching above a rate times 1 launch in N and records the
// others at entry only. Their count and start are exact; their durations are estimated here, once,
// so that every reader of the rows (the time budget, the statistics, the detectors) sees the same
// launch time a fully timed trace would have shown, within the sampling's error.
#pragma once

#include "analysis/rows.hpp"

namespace gpuwhy::analysis {

// Gives each untimed launch (duration 0, category launch, in a trace whose launch_timing family
// is "sampled") the mean duration of its thread's timed launches of the same API (of every
// thread's, when its own has none), cut at the thread's next call, and marks it
// (CallRow::dir == kDurationImputed). Needs the calls grouped by thread in time order.
void impute_untimed_launches(TraceRows& rows);

}  // namespace gpuwhy::analysis
