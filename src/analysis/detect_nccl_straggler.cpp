// SPDX-License-Identifier: Apache-2.0
// NCCL straggler: in a collective every rank waits until the last one arrives; that rank is the
// straggler the others wait for. Which rank arrived last is read from the scheduler first: the
// waiting ranks sleep in the collective and the last arrival's thread is what wakes them (the
// waker of their final sleep). Without scheduler data, the rank that entered the call last is
// taken (its call starts latest). Instances of one collective are found without trusting
// communicator pointers (they differ per process) or sequence numbers (a window can cut through
// them): the waits of all ranks in one instance share a common moment, the straggler's arrival,
// so calls of the same API from distinct processes whose wait intervals all intersect form one
// instance.
#include <algorithm>
#include <map>
#include <set>

#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

struct Instance {
  std::vector<const CollectiveWait*> members;
  int64_t lo = 0, hi = 0;  // the common part of the members' waits
};

std::vector<Instance> instances(const std::vector<CollectiveWait>& waits) {
  std::vector<Instance> out;
  std::map<uint16_t, Instance> open;  // per API, the instance being built
  std::map<uint16_t, std::set<uint32_t>> pids;
  auto close = [&](uint16_t api) {
    if (open[api].members.size() >= 2) out.push_back(std::move(open[api]));
    open.erase(api);
    pids.erase(api);
  };
  for (const CollectiveWait& w : waits) {
    auto it = open.find(w.api);
    if (it != open.end() && (pids[w.api].count(w.pid) || w.ts >= it->second.hi)) close(w.api);
    Instance& in = open[w.api];
    if (in.members.empty()) {
      in.lo = w.ts;
      in.hi = w.end;
    }
    in.members.push_back(&w);
    in.lo = std::max(in.lo, w.ts);
    in.hi = std::min(in.hi, w.end);
    pids[w.api].insert(w.pid);
  }
  while (!open.empty()) close(open.begin()->first);
  std::sort(out.begin(), out.end(),
            [](const Instance& a, const Instance& b) { return a.lo < b.lo; });
  return out;
}

// The waker of m's last sleep inside its wait, and when it woke m; {0, 0} when m did not sleep.
std::pair<uint32_t, int64_t> woken_by(const Context& ctx, const CollectiveWait& m) {
  const uint32_t tid = ctx.rows.calls[m.call].tid;
  auto [b, e] = Joins::range(ctx.joins.offcpu, tid);
  const auto first = ctx.rows.offcpu.begin() + static_cast<ptrdiff_t>(b);
  const auto last = ctx.rows.offcpu.begin() + static_cast<ptrdiff_t>(e);
  auto it = std::upper_bound(first, last, m.ts,
                             [](int64_t x, const OffCpuRow& o) { return x < o.end(); });
  std::pair<uint32_t, int64_t> got{0, 0};
  for (; it != last && it->ts < m.end; ++it)
    if (!it->preempted) got = {it->other_pid, it->end() - it->runq};
  return got;
}

struct Verdict {
  uint32_t straggler = 0;
  std::vector<std::pair<uint32_t, int64_t>> waits;  // (pid, how long it waited for the straggler)
};

Verdict judge(const Context& ctx, const Instance& in) {
  Verdict v;
  std::set<uint32_t> pids;
  for (const CollectiveWait* m : in.members) pids.insert(m->pid);
  std::map<uint32_t, std::vector<std::pair<uint32_t, int64_t>>> votes;  // waker -> (pid, wait)
  for (const CollectiveWait* m : in.members) {
    const auto [waker, at] = woken_by(ctx, *m);
    if (waker != 0 && waker != m->pid && pids.count(waker))
      votes[waker].emplace_back(m->pid, at - m->ts);
  }
  const auto top = std::max_element(votes.begin(), votes.end(), [](auto& a, auto& b) {
    return a.second.size() < b.second.size();
  });
  if (top != votes.end() && 2 * top->second.size() >= in.members.size() - 1) {
    v.straggler = top->first;
    v.waits = top->second;
    return v;
  }
  const CollectiveWait* late = *std::max_element(
      in.members.begin(), in.members.end(),
      [](const CollectiveWait* a, const CollectiveWait* b) { return a->ts < b->ts; });
  v.straggler = late->pid;
  for (const CollectiveWait* m : in.members)
    if (m != late) v.waits.emplace_back(m->pid, late->ts - m->ts);
  return v;
}

struct RankWaits {
  uint64_t last_arrivals = 0;
  int64_t waited_ns = 0;     // this rank waiting for the straggler
  int64_t made_wait_ns = 0;  // others waiting for this rank (mean over them per instance)
};

// "preempted 31.0%, asleep 2.0%" for a thread over its span, with its top preemptor.
std::string thread_profile(const Context& ctx, const ThreadSummary& t) {
  const double span = static_cast<double>(std::max<int64_t>(t.span_ns(), 1));
  std::string s = "preempted " + fmt_percent(t.off.preempted / span) + ", asleep " +
                  fmt_percent(t.off.blocked / span);
  const auto& holders = ctx.budget(t).tasks(Bucket::Runnable);
  if (!holders.empty() && t.off.preempted > 0) {
    const Culprit& c = holders.front();
    s += " (CPU mostly held by " + ctx.other(c.pid, c.tid, c.comm, c.pid == t.pid).label() + ")";
  }
  return s;
}

// What a rank's dispatch thread did per collective, from its time budget: the level below "it
// arrives late". Own host work, runnable without a CPU, asleep or in I/O, waiting on the GPU and
// its peers.
struct PerStep {
  double host = 0, runnable = 0, asleep = 0, waiting = 0;
  uint64_t collectives = 0;
};

PerStep per_step(const Context& ctx, const ThreadSummary& t) {
  PerStep p;
  for (size_t i = t.call_begin; i < t.call_end; ++i)
    if (ctx.joins.bits[i] & call_bits::kCollective) ++p.collectives;  // outermost ones
  if (p.collectives == 0) return p;
  const ThreadBudget& b = ctx.budget(t);
  const double n = static_cast<double>(p.collectives);
  p.host = static_cast<double>(b[Bucket::HostWork] + b[Bucket::RefillGap] + b[Bucket::ApiOverhead] +
                               b[Bucket::Transfer] + b[Bucket::Alloc]) /
           n;
  p.runnable =
      static_cast<double>(b[Bucket::Runnable] + b[Bucket::WakeLatency] + b[Bucket::Throttled]) / n;
  p.asleep = static_cast<double>(b[Bucket::BlockedLock] + b[Bucket::Handoff] + b[Bucket::Io] +
                                 b[Bucket::Syscall] + b[Bucket::Sleep] + b[Bucket::Reclaim] +
                                 b[Bucket::Unexplained]) /
             n;
  p.waiting = static_cast<double>(b[Bucket::GpuWait]) / n;
  return p;
}

std::string per_step_text(const PerStep& p) {
  auto d = [](double ns) { return fmt_duration(static_cast<int64_t>(ns)); };
  return d(p.host) + " on the CPU in its own work, " + d(p.runnable) + " runnable without a CPU, " +
         d(p.asleep) + " asleep or in I/O, " + d(p.waiting) + " waiting on the GPU and its peers";
}

// "rank 1 of 2, trainer (pid 7002)", or the process alone without a known rank.
std::string rank_and_label(const Context& ctx, const Task& t) {
  const std::string rank = ctx.rows.rank_label(t.pid);
  return rank.empty() ? t.label() : rank + ", " + t.label();
}

// CPU samples of the thread outside GPU calls: where its own host work runs (with --stacks).
std::string host_sites(const Context& ctx, const ThreadSummary& t) {
  auto [b, e] = Joins::range(ctx.joins.cpu_samples, t.tid);
  std::vector<int32_t> ids;
  for (size_t k = b; k < e; ++k)
    if (ctx.rows.cpu_samples[k].syscall < 0) ids.push_back(ctx.rows.cpu_samples[k].stack_id);
  return call_sites_line(ctx, ids);
}

}  // namespace

void detect_nccl_straggler(const Context& ctx, std::vector<Chain>& out) {
  const std::vector<CollectiveWait> waits = collective_waits(ctx);
  const std::vector<Instance> all = instances(waits);
  std::map<uint32_t, RankWaits> ranks;
  uint64_t counted = 0;
  int64_t first = -1, last = -1;
  for (const Instance& in : all) {
    const Verdict v = judge(ctx, in);
    if (v.waits.empty()) continue;
    int64_t imposed = 0;
    for (const auto& [pid, wait] : v.waits) {
      ranks[pid].waited_ns += std::max<int64_t>(wait, 0);
      imposed += std::max<int64_t>(wait, 0);
    }
    imposed /= static_cast<int64_t>(v.waits.size());
    // Balanced instances (everyone arrived within 100 µs) name nobody.
    if (imposed < 100'000) continue;
    ++counted;
    ++ranks[v.straggler].last_arrivals;
    ranks[v.straggler].made_wait_ns += imposed;
    if (first < 0) first = in.lo;
    last = in.lo;
  }
  if (counted < ctx.th.min_collectives) return;
  const auto top = std::max_element(ranks.begin(), ranks.end(), [](auto& a, auto& b) {
    return a.second.last_arrivals < b.second.last_arrivals;
  });
  if (top->second.last_arrivals < ctx.th.straggler_majority * static_cast<double>(counted)) return;
  const uint32_t straggler = top->first;
  // The victim: the rank that waited longest for it.
  uint32_t victim = 0;
  int64_t victim_wait = 0;
  for (const auto& [pid, r] : ranks) {
    if (pid != straggler && r.waited_ns > victim_wait) {
      victim = pid;
      victim_wait = r.waited_ns;
    }
  }
  if (victim == 0) return;

  Chain ch;
  ch.kind = "nccl_straggler";
  ch.title = "NCCL straggler rank";
  ch.process = ctx.process(victim);
  if (const ThreadSummary* t = ctx.dispatch_thread(victim)) ch.thread = ctx.thread(t->pid, t->tid);
  ch.culprit = ctx.process(straggler);
  const auto [ps, pe] = ctx.process_span(victim);
  ch.span_ns = pe - ps;
  ch.lost_ns = top->second.made_wait_ns;
  ch.first_ns = ctx.rel(first);
  ch.last_ns = ctx.rel(last);
  const Task& s = *ch.culprit;
  ch.summary = rank_and_label(ctx, s) + " arrives last at " +
               fmt_percent(top->second.last_arrivals / static_cast<double>(counted)) +
               " of collectives; the other ranks wait for it (" + fmt_percent(ch.share()) +
               " of their time)";
  ch.evidence.push_back({rank_and_label(ctx, s) + " was the last to arrive in " +
                         fmt_count(top->second.last_arrivals) + " of " + fmt_count(counted) +
                         " unbalanced collectives (" + fmt_count(all.size()) + " matched across " +
                         fmt_count(ranks.size()) + " ranks)"});
  ch.evidence.push_back(
      {"the others waited for it a mean " +
       fmt_duration(top->second.made_wait_ns / static_cast<int64_t>(top->second.last_arrivals)) +
       " per collective, " + fmt_duration(top->second.made_wait_ns) + " in all; " +
       rank_and_label(ctx, ch.process) + " waited " + fmt_duration(victim_wait)});
  const ThreadSummary* st = ctx.dispatch_thread(straggler);
  const ThreadSummary* vt = ctx.dispatch_thread(victim);
  if (st && vt) {
    ch.evidence.push_back({"straggler's GPU thread: " + thread_profile(ctx, *st) +
                           "; a waiting rank's: " + thread_profile(ctx, *vt)});
  }
  // One level deeper: what the straggler does with its time, per collective, against a rank
  // that waits for it.
  PerStep sp, vp;
  if (st && vt) {
    sp = per_step(ctx, *st);
    vp = per_step(ctx, *vt);
  }
  if (sp.collectives > 0 && vp.collectives > 0) {
    ch.evidence.push_back({"per collective, " + rank_and_label(ctx, s) + " spent " +
                           per_step_text(sp) + "; " + rank_and_label(ctx, ch.process) + " " +
                           per_step_text(vp)});
    if (std::string sites = host_sites(ctx, *st); !sites.empty())
      ch.evidence.push_back({"the straggler's CPU samples outside GPU calls, " + sites});
  }
  ch.fix = "find why " + s.label() + " is slow";
  const double host_excess = sp.host - vp.host;
  const bool host_bound = sp.collectives > 0 && host_excess > 2 * (sp.runnable - vp.runnable) &&
                          host_excess > 2 * (sp.asleep - vp.asleep) && host_excess > 100'000;
  // The straggler loses its CPU (over 5% of its time, and over twice the share a waiting rank
  // does): name the task that takes it.
  auto preempted_share = [](const ThreadSummary& t) {
    return static_cast<double>(t.off.preempted) /
           static_cast<double>(std::max<int64_t>(t.span_ns(), 1));
  };
  if (host_bound) {
    ch.fix = rank_and_label(ctx, s) + " spends " + fmt_duration(static_cast<int64_t>(host_excess)) +
             " more per collective on the CPU in its own code before it enqueues the "
             "collective: balance the work per rank (uneven batches, sequence lengths or data "
             "shards), move that rank's extra host work (data loading, logging, checkpointing) "
             "off the step, or overlap it with GPU work";
  } else if (st && vt && !ctx.budget(*st).tasks(Bucket::Runnable).empty() &&
             preempted_share(*st) > 0.05 && preempted_share(*st) > 2 * preempted_share(*vt)) {
    const Culprit& c = ctx.budget(*st).tasks(Bucket::Runnable).front();
    const Task culprit = ctx.other(c.pid, 0, c.comm, false);
    ch.fix += ": its dispatch thread loses the CPU to " + culprit.label() + "; " +
              contention_fix(s, culprit, c.pid == straggler);
  } else {
    ch.fix +=
        " (more work per step: uneven batches or sequence lengths, a slower GPU or link, "
        "extra host work on that rank) and balance it";
  }
  ch.metrics = {{"collectives_matched", static_cast<double>(all.size())},
                {"unbalanced", static_cast<double>(counted)},
                {"straggler_last", static_cast<double>(top->second.last_arrivals)},
                {"imposed_wait_ns", static_cast<double>(top->second.made_wait_ns)},
                {"straggler_host_per_collective_ns", sp.host},
                {"waiting_rank_host_per_collective_ns", vp.host}};
  if (auto r = ctx.rows.nccl_ranks.find(straggler); r != ctx.rows.nccl_ranks.end()) {
    ch.metrics.emplace_back("straggler_rank", r->second.first);
    ch.metrics.emplace_back("ranks", r->second.second);
  }
  out.push_back(std::move(ch));
}

}  // namespace gpuwhy::analysis
