// SPDX-License-Identifier: Apache-2.0
// GPU truth for audit: where the trace holds device activity (trace --gpu-activity: the
// gpu_activity table, CUPTI's kernel, copy and memset records), the GPU's busy time is measured,
// not bounded: the union of those intervals over the same span the host-side estimate covers.
// The estimate is kept beside it with its error against the truth, which is how the host-only
// mode earns trust; the kernels that took the most device time are listed.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace gpuwhy::analysis {

struct AuditReport;

// The device's own figures over a span [start, end) (wall ns).
struct GpuTruthFigures {
  int64_t span_ns = 0;  // the span the union is taken over (the host estimate's span)
  int64_t busy_ns = 0;  // union of kernel, copy and memset intervals, clipped to the span
  // Each kind's own union (kernels overlap on concurrent streams; busy is not their sum).
  int64_t kernel_ns = 0, copy_ns = 0, memset_ns = 0;
  uint64_t kernels = 0, copies = 0, memsets = 0;
  // Copies with pageable host memory on either side (staged by the driver, never overlapped).
  uint64_t pageable_copies = 0;
  int64_t pageable_copy_ns = 0;
  // The host-side estimate of the same span, and how far it was from the truth (estimate - busy).
  int64_t host_estimate_ns = 0;
  int64_t host_error_ns() const { return host_estimate_ns - busy_ns; }
};

struct TopKernel {
  std::string name;  // demangled (untrusted text from the traced process)
  uint64_t count = 0;
  int64_t total_ns = 0, max_ns = 0;
};

struct ProcessGpuTruth {
  GpuTruthFigures figures;  // the process: its devices' unions summed over its devices' spans
  std::vector<std::pair<int, GpuTruthFigures>> devices;  // by device ordinal
  std::vector<TopKernel> top_kernels;                    // most device time first
};

// Union length of [start, end) intervals clipped to [lo, hi); sorts `iv`.
int64_t union_ns(std::vector<std::pair<int64_t, int64_t>>& iv, int64_t lo, int64_t hi);

// Fills ProcessAudit::gpu_truth for each process of `report` that has gpu_activity rows (none
// when the file predates the table or was traced without --gpu-activity).
Status add_gpu_truth(sqlite3* db, AuditReport& report, size_t top_kernels = 10);

}  // namespace gpuwhy::analysis
