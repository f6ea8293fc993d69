// SPDX-License-Identifier: Apache-2.0
// The trace's running totals (events by kind, losses) as `trace --metrics` exposes them.
#pragma once

#include "cli/trace_summary.hpp"
#include "metrics/registry.hpp"

namespace gpuwhy::cli {

// Events received by kind, and the losses that are events (not the discovery or Python gaps,
// which count processes and frames).
metrics::Registry::Totals metrics_totals(const TraceCounts& c);

}  // namespace gpuwhy::cli
