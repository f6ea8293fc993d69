// SPDX-License-Identifier: Apache-2.0
// The composition root of `gpuwhy trace`: probes -> reader thread -> writer thread -> store, with
// the discovery loop on the calling thread. Options come from trace_cmd.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "metrics/listen_address.hpp"
#include "probes/probes.hpp"
#include "store/retention_policy.hpp"

namespace gpuwhy::cli {

struct TraceOptions {
  int64_t duration_ns = 0;  // 0: until Ctrl-C / SIGTERM
  std::vector<uint32_t> pids;
  std::string out;
  std::vector<std::string> libs;
  uint32_t ring_bytes = 32u << 20;
  bool stacks = false;
  bool sample_stacks = true;  // native stacks in the CPU samples of non-Python threads
  bool any_stacks() const { return stacks || (sample_stacks && sample_hz > 0); }
  uint32_t launch_read_mask = 63;  // launches read in-memory arguments when (count & mask) == 0
  bool launch_batching = true;     // launches that read no memory go to their thread's batch
  bool python_stacks = true;       // the Python line behind each call (off: trace --no-python)
  bool uprobe_multi = true;        // one uprobe_multi link per library where the kernel has them
  bool uprobe_session = true;      // driver launches by uprobe session where the kernel has them
  // Adaptive launch timing (issue 33): a thread above this many launches a second records the
  // launches it does not sample at entry only (0: every launch timed, trace --full).
  uint32_t launch_untimed_per_s = 0;   // opt-in: trace --untimed-above
  uint32_t entry_only_categories = 0;  // bit 1 << Category: recorded at entry, no return probe
  uint64_t min_offcpu_ns = 0;
  uint64_t min_syscall_ns = 1'000'000;
  bool host_libraries = true;  // also probe the GPU runtimes installed on the host at start
  // Optional kernel probe families (`--with`, `--without`; defaults in
  // probes::host_family_on_by_default). Syscalls cost every syscall on the host, including the
  // uretprobe syscall each traced GPU call returns through.
  bool syscalls = false, block_io = true, tcp = true, reclaim = true;
  bool driver_ioctls = false;  // trace --with driver-ioctls (where the driver's files exist)
  uint32_t sample_hz =
      probes::kDefaultSampleHz;  // CPU samples of traced threads per second and CPU (0: none)
  bool status_line = true;       // only shown on a terminal
  std::string command_line;
  bool keep_secret_args = false;  // store command lines as they are (no "***" for secrets)
  std::string ready_file;  // created once the initial probes are attached (scripts and tests)
  // trace -- CMD ARGS...: launched once the probes are in place, traced with its descendants;
  // the trace ends with it and exits with its status.
  std::vector<std::string> command;
  // A process mapping a GPU runtime file not yet probed is stopped at the dynamic linker's hook
  // until it is (at most hold_bound_ms); false: it runs on, and its first calls may be missed.
  bool hold_new_libs = true;
  uint32_t hold_bound_ms = 2000;
  // trace --metrics: serve Prometheus metrics here while tracing (docs/metrics.md).
  std::optional<metrics::ListenAddress> metrics;
  // Flight recorder (--keep, --max-size): the file keeps a recent window within a size budget,
  // the oldest data going first; SIGHUP then does not stop the trace.
  store::RetentionOptions retention;
  // trace --gpu-activity [DURATION]: the launched command loads gpuwhy's CUPTI client
  // (CUDA_INJECTION64_PATH), whose kernel, copy, memset and sync records become gpu_activity
  // rows; after gpu_activity_ns (0: no bound) the client turns CUPTI's activity off.
  bool gpu_activity = false;
  int64_t gpu_activity_ns = 0;
  // trace --gpu-activity-socket PATH: the records come to a socket bound there, for processes
  // the user starts with CUDA_INJECTION64_PATH and GPUWHY_GPU_ACTIVITY_SOCKET set (the agent
  // logs both); a launched command is pointed at it too.
  std::string gpu_activity_socket;
};

// Runs a whole trace; returns the exit code (and prints the summary / the one-line error).
int run_trace(const TraceOptions& opt);

}  // namespace gpuwhy::cli
