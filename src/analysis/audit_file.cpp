// SPDX-License-Identifier: Apache-2.0
#include "analysis/audit_file.hpp"

#include "analysis/explain_steady.hpp"
#include "analysis/gpu_truth.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {

Result<AuditReport> audit_file(const store::TraceFile& file, const LoadOptions& opt,
                               const AuditOptions& audit_opt) {
  auto rows = load_trace(file, opt);
  if (!rows) return rows.error();
  AuditReport report = audit(std::move(rows.value()), audit_opt);
  // The start-up is the programs loading, not their regime: as explain's report, the audit
  // starts where the steps begin when every GPU process started in the trace.
  const WindowRequest& w = opt.window;
  if (const int64_t from = steady_state_from(report.explain);
      from > 0 && !w.since_ns && !w.from && !w.to) {
    LoadOptions steady = opt;
    steady.window.from = TimePoint{true, report.trace.window.trace_start_ns + from};
    if (auto part = load_trace(file, steady)) {  // else the whole window's audit stands
      AuditReport whole = std::move(report);
      report = audit(std::move(part.value()), audit_opt);
      const std::string where = "starts at " + fmt_rel(from) + ", where the steps begin";
      report.caveats.push_back({"steady_state", "the audit " + where +
                                                    ": the start-up before it is left out "
                                                    "(--from 0 for the whole trace)"});
      // The explain report inside it reads as explain's own (explain_steady_state).
      for (const Chain& c : whole.explain.chains)
        if (c.kind == "start_up") report.explain.chains.push_back(c);
      report.explain.caveats.push_back(
          {"steady_state", "the report " + where +
                               ": the start-up before it is summarised last (explain --from 0 "
                               "for the whole trace)"});
    }
  }
  if (Status t = add_gpu_truth(file.db(), report); !t) return t.error();
  return report;
}

}  // namespace gpuwhy::analysis
