// SPDX-License-Identifier: Apache-2.0
// Who held the CPU while a traced thread was runnable and waiting for it, by time. The kernel side
// (bpf/cpu_runs.bpf.h) records every run of every task on a CPU while some traced thread waits in
// that CPU's run queue (TraceRows::cpu_runs) and every move of a waiting thread to another queue
// (TraceRows::wait_migrations); an off-CPU interval says on which CPU its wait began
// (OffCpuRow::wait_cpu) and on which it ended (OffCpuRow::cpu). Clipping the runs of each CPU to
// the part of the wait spent in its queue gives the holders exactly, a preempting helper's few
// microseconds apart from the neighbour that then ran for milliseconds.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/rows.hpp"

namespace gpuwhy::analysis {

// One task's share of a wait. pid = tid = kUnknownHolder: time no recorded run covers (runs lost
// to a full ring, a wait the kernel side did not count, a move whose record was lost).
struct HolderTime {
  uint32_t pid = 0, tid = 0, comm = 0 /*strings.id*/;
  int64_t ns = 0;
};
inline constexpr uint32_t kUnknownHolder = UINT32_MAX;

class CpuHolders {
 public:
  // Indexes `rows` (prepared: cpu_runs sorted by (cpu, ts), wait_migrations by (tid, ts)); keeps a
  // reference, so `rows` must outlive it.
  explicit CpuHolders(const TraceRows& rows);
  // The trace has run segments (written by an agent of ABI 5 or later with the scheduler family
  // on); else callers fall back to OffCpuRow::holder_* / other_*.
  bool recorded() const { return recorded_; }
  // Appends the holders of o's runnable part (all of a preempted interval; the runq tail of a
  // blocked one) inside [from, to), by task (pid, tid; the idle task is 0, 0), most time first;
  // time no segment covers is one HolderTime with pid = tid = kUnknownHolder, in the same order.
  // Their ns add up to the runnable part's length inside [from, to).
  void holders(const OffCpuRow& o, int64_t from, int64_t to, std::vector<HolderTime>& out) const;

 private:
  // Adds the runs of `cpu` over [a, b) to acc[first..], and what they leave uncovered as unknown.
  void add_cpu(uint16_t cpu, int64_t a, int64_t b, std::vector<HolderTime>& acc,
               size_t first) const;

  const TraceRows& rows_;
  bool recorded_ = false;
  std::unordered_map<uint16_t, std::pair<size_t, size_t>> runs_by_cpu_;   // [begin, end)
  std::unordered_map<uint32_t, std::pair<size_t, size_t>> moves_by_tid_;  // [begin, end)
};

}  // namespace gpuwhy::analysis
