// SPDX-License-Identifier: Apache-2.0
#include "analysis/rank_budget.hpp"

#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

enum class Group { Host, Runnable, Asleep, Waiting };

Group group_of(Bucket b) {
  switch (b) {
    case Bucket::HostWork:
    case Bucket::RefillGap:
    case Bucket::ApiOverhead:
    case Bucket::Transfer:
    case Bucket::Alloc:
      return Group::Host;
    case Bucket::Runnable:
    case Bucket::WakeLatency:
      return Group::Runnable;
    case Bucket::GpuWait:
      return Group::Waiting;
    default:
      return Group::Asleep;
  }
}

}  // namespace

const BudgetReport* dispatch_budget(const Report& r, uint32_t pid) {
  const BudgetReport* best = nullptr;
  for (const BudgetReport& b : r.budgets)
    if (b.process.pid == pid && (best == nullptr || b.span_ns > best->span_ns)) best = &b;
  return best;
}

PerCollective per_collective(const Report& r, const RankMember& m) {
  PerCollective p;
  const BudgetReport* b = dispatch_budget(r, m.pid);
  if (b == nullptr || m.collectives.empty()) return p;
  p.known = true;
  const double n = static_cast<double>(m.collectives.size());
  int64_t slept = 0;
  for (const BudgetLine& l : b->lines) {
    const double v = static_cast<double>(l.ns) / n;
    switch (group_of(l.bucket)) {
      case Group::Host:
        p.host += v;
        break;
      case Group::Runnable:
        p.runnable += v;
        break;
      case Group::Waiting:
        p.waiting += v;
        break;
      case Group::Asleep:
        p.asleep += v;
        if (!l.syscalls.empty() && l.ns > slept) {
          slept = l.ns;
          p.syscall = l.syscalls.front().first;
        }
        break;
    }
    if (l.bucket == Bucket::Runnable && !l.tasks.empty()) p.holder = l.tasks.front().first.label();
  }
  return p;
}

std::string per_collective_text(const PerCollective& p) {
  auto d = [](double ns) { return fmt_duration(static_cast<int64_t>(ns)); };
  return d(p.host) + " on the CPU in its own work, " + d(p.runnable) + " runnable without a CPU, " +
         d(p.asleep) + " asleep or in I/O, " + d(p.waiting) + " waiting on the GPU and its peers";
}

}  // namespace gpuwhy::analysis
