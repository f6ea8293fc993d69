// SPDX-License-Identifier: Apache-2.0
// A causal chain: one root cause, who suffered it, who caused it, how much wall time it cost, the
// evidence (numbers and times), and what to change. Renderers print these; they never compute.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuwhy::analysis {

// By share of the victim's wall time lost (thresholds in detectors.hpp, docs/explain.md).
enum class Severity : uint8_t { Low = 1, Medium = 2, High = 3 };
std::string_view severity_name(Severity s);  // "LOW" | "MEDIUM" | "HIGH"

// A process or thread as the report names it.
struct Task {
  uint32_t pid = 0;
  uint32_t tid = 0;  // 0: the whole process
  std::string comm;
  // Set when the culprit is not a task but the CPU quota of a cgroup (this path) that the
  // process `pid` runs in: cpu_quota's chain.
  std::string cgroup;
  // "cpu_hog (pid 4242)", or "ckpt_writer (tid 105)" for a thread; "cgroup /a/b's CPU quota".
  std::string label() const;
};

struct Evidence {
  std::string text;
  int64_t at_ns = -1;  // when, relative to the trace start; -1 when the line is not about one time
};

struct Chain {
  std::string kind;   // stable id: "cpu_contention", "lock_wait", ... (docs/explain.md)
  std::string title;  // "CPU contention"
  Severity severity = Severity::Low;
  // The highest severity this chain may get: a symptom without a host-side cause (a rate drop
  // explained by nothing explain sees) is never HIGH, however much time it covers.
  Severity cap = Severity::High;
  std::string summary;  // one line, names victim and culprit
  Task process;         // the process that lost time
  Task thread;          // its thread that lost the most (tid 0 when process-wide)
  std::optional<Task> culprit;
  int64_t lost_ns = 0;  // wall time lost (an estimate; how, per kind, in docs/explain.md)
  int64_t span_ns = 0;  // the victim's active span in the window: what the share is of
  int64_t first_ns = -1, last_ns = -1;  // relative to the trace start; -1 when not known
  std::vector<Evidence> evidence;
  std::string fix;
  // Named numbers for programs reading the JSON ("preempted_ns", "syncs_per_s", ...).
  std::vector<std::pair<std::string, double>> metrics;

  double share() const { return span_ns > 0 ? static_cast<double>(lost_ns) / span_ns : 0.0; }
};

// A start_up or tail chain: a phase outside the steady state (phases.hpp), summarised after the
// steady state's causes and kept from the whole trace when explain narrows to the steady state.
inline bool is_phase(const Chain& c) { return c.kind == "start_up" || c.kind == "tail"; }

}  // namespace gpuwhy::analysis
