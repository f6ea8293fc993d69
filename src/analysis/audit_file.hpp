// SPDX-License-Identifier: Apache-2.0
// The audit of a trace file, as `audit`, `explain --html` and the MCP audit tool give it: the
// window's rows audited, and as explain does (explain_steady.hpp) a trace that began with its
// programs audited from where their steps begin unless a window was given; then the device's own
// busy time where the trace has it (gpu_truth.hpp), which decides the regime again.
#pragma once

#include "analysis/audit.hpp"
#include "analysis/loader.hpp"
#include "core/result.hpp"
#include "store/store.hpp"

namespace gpuwhy::analysis {

Result<AuditReport> audit_file(const store::TraceFile& file, const LoadOptions& opt,
                               const AuditOptions& audit_opt = {});

}  // namespace gpuwhy::analysis
