// SPDX-License-Identifier: Apache-2.0
#include "analysis/audit_file.hpp"

#include "analysis/explain_steady.hpp"
#include "analysis/gpu_truth.hpp"

namespace gpuwhy::analysis {

Result<AuditReport> audit_file(const store::TraceFile& file, const LoadOptions& opt,
                               const AuditOptions& audit_opt) {
  auto rows = load_trace(file, opt);
  if (!rows) return rows.error();
  AuditReport report = audit(std::move(rows.value()), audit_opt);
  // The start-up and the tail are the programs loading and ending, not their regime: as
  // explain's report, the audit covers the steady state (explain_steady.hpp).
  const SteadyWindow w = steady_window(report.explain);
  if (LoadOptions steady = opt;
      narrow_to_steady_state(steady, w, report.trace.window.trace_start_ns)) {
    if (auto part = load_trace(file, steady)) {  // else the whole window's audit stands
      AuditReport whole = std::move(report);
      report = audit(std::move(part.value()), audit_opt);
      report.caveats.push_back(steady_state_caveat(w, "audit"));
      // The explain report inside it reads as explain's own (explain_steady_state).
      add_phases(report.explain, whole.explain);
      report.explain.caveats.push_back(steady_state_caveat(w, "report"));
    }
  }
  if (Status t = add_gpu_truth(file.db(), report); !t) return t.error();
  return report;
}

}  // namespace gpuwhy::analysis
