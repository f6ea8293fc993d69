// SPDX-License-Identifier: Apache-2.0
#include "cli/trace_metrics.hpp"

#include "reader/decode.hpp"

namespace gpuwhy::cli {

metrics::Registry::Totals metrics_totals(const TraceCounts& c) {
  metrics::Registry::Totals t;
  for (const auto& [kind, n] : c.by_kind) t.recorded.emplace_back(reader::kind_name(kind), n);
  for (const store::LossCount& l : c.losses())
    if (l.source != "discovery" && l.source != "python")
      t.lost.push_back({l.source, l.cause, l.count});
  return t;
}

}  // namespace gpuwhy::cli
