// SPDX-License-Identifier: Apache-2.0
// What explain and audit say of the GPU's time when the device's own records are there (trace
// --gpu-activity): how busy each device was, measured, beside the calls' estimate of it with its
// error (the host-only mode earns trust that way); the compute/stall ratio (time in kernels
// against the time the device waited on copies and on the host); and, per stream, its idle
// time in HTA's categories (Holistic Trace Analysis, "idle time breakdown"):
//   host wait   the stream ran dry and the host had not yet launched its next work: the latest
//               launch of the process before that work (a kernel launch, a copy or memset,
//               synchronous or not) still ran when the stream went idle, or began after (the
//               launching thread is that launch's); the device's last gap in the span, which
//               no work ends, too (in a window of a longer analysis, its end);
//   kernel wait the next work was launched already and started within kKernelWaitNs: the
//               device's own gap between back-to-back work;
//   other       launched already and started later (a dependency on another stream, an event).
// The launch is inferred from the host's calls, not read from CUPTI's runtime records (the
// client does not record them): a host that launches ahead while the stream idles makes a
// kernel wait read as host wait, and so does the short gap before a synchronous copy queued
// behind running work. The categories add up to the stream's idle time exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/chain.hpp"
#include "analysis/device_activity.hpp"

namespace gpuwhy::analysis {

struct Context;

// A gap shorter than this, with the next work launched already, is the device's own (kernel
// wait): queued work starts a few microseconds after the work before it on current GPUs.
inline constexpr int64_t kKernelWaitNs = 30'000;

// The idle time of one span of device time, by HTA's categories.
struct IdleSplit {
  int64_t host_wait_ns = 0, kernel_wait_ns = 0, other_ns = 0;
  uint64_t gaps = 0;
  int64_t total() const { return host_wait_ns + kernel_wait_ns + other_ns; }
  void add(const IdleSplit& o);
};

struct StreamIdle {
  int device = 0;
  int64_t stream = -1;
  // The thread whose launches the stream waited on most (host wait); else the process's thread
  // that launched last before its work. tid 0: none found.
  Task thread;
  int64_t first_ns = 0, last_ns = 0;  // relative to the trace start: its first and last work
  int64_t busy_ns = 0;                // union of its work
  IdleSplit idle;                     // between its first and last work
};

// One device of a process over the figures' span.
struct DeviceTime {
  int device = 0;
  int64_t busy_ns = 0;    // union of kernels, copies and memsets
  int64_t kernel_ns = 0;  // in kernels (union over its streams): compute
  // Copies and memsets while no kernel of the process ran: the device waited on the copies.
  int64_t copy_stall_ns = 0;
  IdleSplit idle;  // nothing of the process ran: host wait, kernel wait, other
  // Compute against stall: kernel_ns / (copy_stall_ns + idle.host_wait_ns); -1 when nothing
  // stalled (no ratio to state).
  double compute_stall_ratio() const;
  std::vector<StreamIdle> streams;  // most idle first
};

// A process's GPU time over the span of its longest GPU thread.
struct ProcessGpuTime {
  Task process;
  Task thread;  // the thread whose span the figures cover
  int64_t span_ns = 0;
  bool measured = false;  // busy_ns from the device's records; else the calls' estimate
  int64_t busy_ns = 0;
  int64_t host_busy_ns = 0;  // the calls' estimate over the same span
  int64_t host_error_ns() const { return host_busy_ns - busy_ns; }
  std::vector<DeviceTime> devices;  // measured only, by ordinal
};

struct GpuTimeReport {
  // Where the GPU-idle time (budgets, gpu_idle chains) and busy figures come from: "device"
  // (every GPU process had the device's records), "mixed" (some), "host" (none: the calls).
  std::string source = "host";
  std::vector<ProcessGpuTime> processes;  // by pid
};

// Every GPU process's figures, from the budgets (the calls' estimate) and, where the trace has
// them, the device's records (TraceRows::device_activity).
GpuTimeReport gpu_time_report(const Context& ctx);

// Windows of a longer analysis (explain_batched): their figures added up per process, device
// and stream.
GpuTimeReport merge_gpu_time(const std::vector<const GpuTimeReport*>& parts);

}  // namespace gpuwhy::analysis
