// SPDX-License-Identifier: Apache-2.0
// What `trace` tells the operator: the live status line on a terminal and the closing summary,
// and the loss/event counts in the form the store keeps them.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "gpuwhy/abi/events.h"
#include "store/store.hpp"

namespace gpuwhy::cli {

struct TraceCounts {
  std::vector<std::pair<uint16_t, uint64_t>> by_kind;  // gw_event_kind -> events received
  uint64_t total_events = 0;
  std::array<uint64_t, GW_CNT__MAX> bpf{};  // enum gw_counter
  uint64_t decode_errors = 0;
  uint64_t write_errors = 0;
  uint64_t batches_at_stop = 0;  // launch batches read from task storage at stop
  // Processes held at the dynamic linker's hook until their new runtime was probed, and those
  // whose runtime was probed only after they mapped it (startup_gaps), by cause.
  uint64_t held = 0;
  uint64_t hold_timeout = 0, not_held = 0, found_late = 0;
  // Python stacks and frames a call recorded but user space could not name, by cause
  // (PythonStacks::gaps(): stack_evicted, frame_not_code, ...), and Python processes whose
  // interpreter is not supported: gaps in the Python lines, not lost events (source "python"
  // in losses). Stacks named again after a code object of theirs was replaced (event_counts).
  std::vector<std::pair<std::string, uint64_t>> py_gaps;
  uint64_t py_unsupported = 0;
  uint64_t py_stacks_renamed = 0;
  // Recording stopped early (store::TraceWriter::storage_failure(), or "interrupted"): events
  // received afterwards and dropped, stored as ("store", stop_cause).
  std::string stop_cause;
  uint64_t dropped = 0;
  // trace --gpu-activity: the CUPTI hand-off's losses (source "cupti") and counts.
  std::vector<store::LossCount> gpu_losses;
  std::vector<std::pair<std::string, uint64_t>> gpu_counts;

  // Every loss cause, zeros included; source "discovery" counts processes, the others events.
  std::vector<store::LossCount> losses() const;
  std::vector<std::pair<std::string, uint64_t>> event_counts() const;
  uint64_t lost() const;  // events lost (the "discovery" and "python" gaps are not events)
  uint64_t late_processes() const { return hold_timeout + not_held + found_late; }
};

class StatusLine {
 public:
  explicit StatusLine(bool wanted);  // shown only when wanted and stderr is a terminal
  bool on() const { return on_; }
  void update(std::chrono::steady_clock::duration elapsed, const TraceCounts& c, size_t processes);
  void clear();

 private:
  bool on_ = false;
  std::chrono::steady_clock::time_point last_{};
  uint64_t last_total_ = 0;
  bool shown_ = false;
};

void print_summary(std::FILE* out, std::chrono::steady_clock::duration elapsed,
                   const TraceCounts& c, size_t processes, size_t libraries, uint32_t probes,
                   const std::string& path, uint64_t bytes);

}  // namespace gpuwhy::cli
