// SPDX-License-Identifier: Apache-2.0
// CPU quota: the dispatch thread was runnable, but its cgroup had used its CFS bandwidth for the
// period (a container's CPU limit: Kubernetes resources.limits.cpu, cgroup cpu.max or
// cpu.cfs_quota_us), so the kernel kept it off the CPU until the next period. The scheduler says
// so itself (offcpu.throttled); nobody else ran in its place, so no neighbour is to blame, and
// the fix is the limit. Draws on the Throttled bucket.
#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/culprit_states.hpp"
#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

struct Throttling {
  int64_t ns = 0;
  uint64_t count = 0;
  int64_t longest = 0, longest_at = 0, first = -1, last = -1;
};

Throttling collect(const Context& ctx, const ThreadSummary& t) {
  Throttling r;
  auto [b, e] = Joins::range(ctx.joins.offcpu, t.tid);
  for (size_t k = b; k < e; ++k) {
    const OffCpuRow& o = ctx.rows.offcpu[k];
    if (!o.throttled) continue;
    const int64_t ns =
        overlap_ns(o.end() - (o.preempted ? o.dur : o.runq), o.end(), t.first_ns, t.last_ns);
    if (ns <= 0) continue;
    r.ns += ns;
    ++r.count;
    if (r.first < 0) r.first = o.ts;
    r.last = o.end();
    if (ns > r.longest) {
      r.longest = ns;
      r.longest_at = o.ts;
    }
  }
  return r;
}

// The CPU the process's traced threads used over the span, in CPUs: what it asked of the quota.
double cpus_used(const Context& ctx, uint32_t pid, int64_t span) {
  int64_t on_cpu = 0;
  for (const ThreadSummary& t : ctx.joins.threads) {
    if (t.pid != pid) continue;
    int64_t off = 0;
    auto [b, e] = Joins::range(ctx.joins.offcpu, t.tid);
    for (size_t k = b; k < e; ++k) {
      const OffCpuRow& o = ctx.rows.offcpu[k];
      off += overlap_ns(o.ts, o.end(), t.first_ns, t.last_ns);
    }
    on_cpu += std::max<int64_t>(0, t.span_ns() - off);
  }
  return span > 0 ? static_cast<double>(on_cpu) / static_cast<double>(span) : 0;
}

void one_thread(const Context& ctx, const ThreadSummary& t, const Throttling& r,
                std::vector<Chain>& out) {
  const ThreadBudget& b = ctx.budget(t);
  Chain ch = ctx.thread_chain(t, "cpu_quota", "CPU quota (cgroup throttling)",
                              std::min(r.ns, b[Bucket::Throttled]));
  ch.first_ns = ctx.rel(std::max(r.first, t.first_ns));
  ch.last_ns = ctx.rel(std::min(r.last, t.last_ns));
  const auto lim = ctx.rows.cpu_limits.find(t.pid);
  const bool known = lim != ctx.rows.cpu_limits.end();
  std::string limit = "its cgroup's CPU quota";
  if (known) {
    const auto& l = lim->second;
    limit = "the CPU quota of " + quota_text(l);
    ch.culprit = Task{t.pid, 0, ch.process.comm, l.cgroup};
  }
  ch.summary = ctx.who(ch.thread) + " is throttled by " + limit + ": runnable but held off the " +
               "CPU " + fmt_percent(ch.share()) + " of its time";
  ch.evidence.push_back({fmt_count(r.count) + " throttled waits on " + ch.thread.label() + ", " +
                         fmt_duration(r.ns) + " (" + fmt_percent(ch.share()) +
                         "): the scheduler held it off the CPU until its cgroup's next period, "
                         "with no other task in its place"});
  ch.evidence.push_back(
      {"longest at " + fmt_rel(ctx.rel(r.longest_at)) + ": " + fmt_duration(r.longest),
       ctx.rel(r.longest_at)});
  const double used = cpus_used(ctx, t.pid, t.span_ns());
  ch.evidence.push_back({ch.process.label() + "'s traced threads used " + fmt_cpus(used) +
                         " CPUs on average while throttled " + fmt_duration(r.ns)});
  // Running all the while it was held off would have needed that much more CPU.
  const double needed =
      used + static_cast<double>(r.ns) / static_cast<double>(std::max<int64_t>(1, t.span_ns()));
  ch.fix = "raise or remove the CPU limit" + std::string(known ? " of " + lim->second.cgroup : "") +
           " (Kubernetes resources.limits.cpu, docker --cpus, systemd CPUQuota=, cgroup cpu.max) "
           "to at least " +
           fmt_cpus(std::ceil(needed * 4) / 4) +
           " CPUs, or cut the CPU the job's other threads spend within it (data-loader workers, "
           "tokenizer threads, OMP/MKL thread pools: OMP_NUM_THREADS)";
  ch.metrics = {{"throttled_ns", static_cast<double>(r.ns)},
                {"throttled_waits", static_cast<double>(r.count)},
                {"cpus_used", used}};
  if (known) {
    ch.metrics.emplace_back("quota_us", static_cast<double>(lim->second.quota_us));
    ch.metrics.emplace_back("period_us", static_cast<double>(lim->second.period_us));
  }
  out.push_back(std::move(ch));
}

}  // namespace

void detect_cpu_quota(const Context& ctx, std::vector<Chain>& out) {
  for (const ThreadSummary& t : ctx.joins.threads) {
    if (ctx.budget(t)[Bucket::Throttled] <= 0) continue;
    const Throttling r = collect(ctx, t);
    if (r.ns > 0) one_thread(ctx, t, r, out);
  }
}

}  // namespace gpuwhy::analysis
