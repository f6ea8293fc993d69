// SPDX-License-Identifier: Apache-2.0
// Why a culprit was late: what the task a victim waited for (the producer at the other end of its
// pipe, ...) was itself doing during the victim's waits, from the culprit's own scheduler records:
// on the CPU, held off it by its cgroup's CPU quota, waiting for a CPU behind other tasks, or
// asleep. The second level of a chain: the wait, then why the producer was late. A producer that
// was on the CPU the whole time is slow in its own code (its Python line says where); one that was
// throttled needs a larger quota, not faster code.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/detectors.hpp"
#include "analysis/rows.hpp"

namespace gpuwhy::analysis {

struct CulpritStates {
  int64_t wait_ns = 0;  // the victim's waits the states cover
  int64_t on_cpu_ns = 0, throttled_ns = 0, runnable_ns = 0, asleep_ns = 0;
  // The culprit's own records were in the trace (its off-CPU rows or CPU samples): without them
  // (an untraced process) nothing is said.
  bool recorded = false;
  // Its sleeps by the syscall it slept in (nr, ns), most time first.
  std::vector<std::pair<uint32_t, int64_t>> asleep_in;
  // A producer thread that only hands the data over (multiprocessing.Queue's feeder thread, a
  // writer thread) sleeps until a sibling thread that makes the data wakes it: when one sibling
  // ended at least half of its sleeps, `through_ns` of them were spent waiting for thread
  // `through_tid`, and those are counted by that thread's own states instead of as asleep.
  uint32_t through_tid = 0;
  int64_t through_ns = 0;

  enum class State { OnCpu, Throttled, Runnable, Asleep };
  State dominant() const;
  int64_t ns(State s) const;
};

// The states of thread `culprit_tid` over `waits` ([start, end) wall ns, sorted, not
// overlapping).
CulpritStates culprit_states(const Context& ctx, uint32_t culprit_tid,
                             const std::vector<std::pair<int64_t, int64_t>>& waits);

// "why loader (pid 572) was late: throttled by its cgroup's CPU quota 50.1% of the waits
// (cgroup /job: 0.50 CPUs, cpu.max 50000 100000), on the CPU 48.0%, waiting for a CPU 1.2%,
// asleep 0.7%", largest first; empty when not recorded.
std::string culprit_states_line(const Context& ctx, const Task& culprit, const CulpritStates& s);

// "0.50"; "12.5" from 10 CPUs on.
std::string fmt_cpus(double cpus);
// "cgroup /job (0.50 CPUs: cpu.max 50000 100000)", the limit as its cgroup version writes it.
std::string quota_text(const TraceRows::CpuLimit& l);

}  // namespace gpuwhy::analysis
