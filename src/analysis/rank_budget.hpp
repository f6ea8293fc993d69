// SPDX-License-Identifier: Apache-2.0
// An NCCL rank's time per collective, from its dispatch thread's time budget (budget.hpp) in its
// own file's report, in the four groups the straggler chains compare: its own work on the CPU,
// runnable without a CPU, asleep or in I/O, waiting on the GPU and its peers. Shared by the
// cross-host explain and the fleet export, so both tell the same "why".
#pragma once

#include <cstdint>
#include <string>

#include "analysis/explain.hpp"
#include "analysis/multihost.hpp"

namespace gpuwhy::analysis {

struct PerCollective {
  double host = 0, runnable = 0, asleep = 0, waiting = 0;  // ns per collective
  bool known = false;   // the rank's thread has a budget in the report
  std::string holder;   // who held its CPU most while it was runnable
  std::string syscall;  // what it slept in most
};

// The budget of the process's GPU thread with the longest span (its dispatch thread).
const BudgetReport* dispatch_budget(const Report& r, uint32_t pid);

// `m`'s budget divided by its collectives on the job's communicator.
PerCollective per_collective(const Report& r, const RankMember& m);

// "1.2 ms on the CPU in its own work, 40 µs runnable without a CPU, ..."
std::string per_collective_text(const PerCollective& p);

}  // namespace gpuwhy::analysis
