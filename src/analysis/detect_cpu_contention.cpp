// SPDX-License-Identifier: Apache-2.0
// CPU contention: a thread that issues GPU work was runnable but another task held its CPU
// (preempted, or woken but waiting in the run queue). Every such nanosecond delays the next launch
// or the return of a sync, whatever the GPU was doing. The culprit is the task that held the CPU:
// the one the scheduler switched to at a preemption, the one the thread took the CPU back from
// after a run-queue wait; aggregated by process over the victim thread's active span.
#include <algorithm>
#include <map>

#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

// Slow calls of the thread's most preempted operation, and how many of them the scheduler made
// slow: the link from "calls got slow" to "because the thread was not running".
std::string slow_call_line(const Context& ctx, const ThreadSummary& t) {
  const std::span<const CallOverlap> overlaps = ctx.joins.overlaps_of(t);
  std::map<uint16_t, int64_t> preempted_by_op;
  for (const CallOverlap& o : overlaps)
    if (o.preempted_ns) preempted_by_op[ctx.rows.calls[o.call].api] += o.preempted_ns;
  if (preempted_by_op.empty()) return {};
  const uint16_t api =
      std::max_element(preempted_by_op.begin(), preempted_by_op.end(), [](auto& a, auto& b) {
        return a.second < b.second;
      })->first;
  std::vector<int64_t> durs;
  for (size_t i = t.call_begin; i < t.call_end; ++i)
    if (ctx.rows.calls[i].api == api) durs.push_back(ctx.rows.calls[i].dur);
  std::vector<int64_t> tmp = durs;
  const int64_t p50 = percentile(tmp, 50);
  const int64_t p99 = percentile(tmp, 99);
  uint64_t slow = 0, slow_preempted = 0;
  for (size_t i = t.call_begin; i < t.call_end; ++i) {
    const CallRow& c = ctx.rows.calls[i];
    if (c.api == api && c.dur >= p99) ++slow;
  }
  for (const CallOverlap& o : overlaps) {
    const CallRow& c = ctx.rows.calls[o.call];
    if (c.api == api && c.dur >= p99 && o.preempted_ns * 2 > c.dur) ++slow_preempted;
  }
  return fmt_count(slow_preempted) + " of the " + fmt_count(slow) + " slowest " +
         std::string(ctx.rows.api_name(api)) + " calls (>= p99 " + fmt_duration(p99) + "; p50 " +
         fmt_duration(p50) + ") were preempted for more than half their time";
}

// The CPU holders that count: everything but the GPU runtime's own helper threads inside the
// victim's process (their CPU time is the runtime working) and the tracer itself (its cost is
// the price of the trace, not a cause to fix in the job). Holders come from the thread's time
// budget: by time they really held the CPU while it waited, when the trace recorded CPU run
// segments; else the preemptor, and the task it took the CPU back from after a wake-up.
struct Split {
  std::vector<Culprit> counted, helpers;
  int64_t lost = 0;
  uint32_t preemptions = 0;
};

Split split_holders(const Context& ctx, const ThreadSummary& t) {
  Split s;
  for (const Culprit& c : ctx.budget(t).tasks(Bucket::Runnable)) {
    const std::string_view comm = ctx.rows.string(c.comm);
    const bool helper =
        is_tracer(comm) || (c.pid == t.pid && !ctx.joins.thread(c.tid) && is_runtime_helper(comm));
    (helper ? s.helpers : s.counted).push_back(c);
    if (helper) continue;
    s.lost += c.ns;
    s.preemptions += c.count;
  }
  return s;
}

void one_thread(const Context& ctx, const ThreadSummary& t, std::vector<Chain>& out) {
  const Split sp = split_holders(ctx, t);
  // Waiting to run after a wake-up, behind a busy CPU, is contention too, preempted or not.
  // In a window of a longer analysis every share counts: the windows are added up first.
  if (sp.counted.empty() || (!ctx.window_part && sp.lost < ctx.th.low_share * t.span_ns())) return;
  const int64_t lost = sp.lost;
  const Culprit& top = sp.counted.front();
  const bool dominant = top.ns >= ctx.th.dominant * static_cast<double>(lost);
  const bool same_process = top.pid == t.pid;
  const Task culprit = ctx.other(top.pid, top.tid, top.comm, /*as_thread=*/same_process);

  Chain ch = ctx.thread_chain(t, "cpu_contention",
                              same_process ? "CPU oversubscription" : "CPU contention", lost);
  if (dominant) ch.culprit = culprit;
  const Task& victim_proc = ch.process;
  const Task& victim = ch.thread;
  const int64_t runnable = ctx.budget(t)[Bucket::Runnable];
  const int64_t waits = std::max<int64_t>(0, runnable - t.off.preempted);

  // When it lost the CPU to another task (preempted, or woken and kept waiting by a task, not
  // by an idle CPU's wake-up latency), and the longest single preemption.
  auto [ob, oe] = Joins::range(ctx.joins.offcpu, t.tid);
  int64_t first = -1, last = -1, first_pre = -1, longest = 0, longest_at = 0;
  for (size_t k = ob; k < oe; ++k) {
    const OffCpuRow& o = ctx.rows.offcpu[k];
    const OffCpuParts p = clip_offcpu(o, t.first_ns, t.last_ns);
    const bool held = !o.holder_recorded || o.holder_pid != 0;
    if (p.preempted + (held ? p.wakeup : 0) <= 0) continue;
    if (first < 0) first = o.ts;
    last = o.end();
    if (p.preempted <= 0) continue;
    if (first_pre < 0) first_pre = o.ts;
    if (p.preempted > longest) {
      longest = p.preempted;
      longest_at = o.ts;
    }
  }
  ch.first_ns = ctx.rel(first < 0 ? t.first_ns : std::max(first, t.first_ns));
  ch.last_ns = ctx.rel(last < 0 ? t.last_ns : std::min(last, t.last_ns));

  const std::string who = dominant ? culprit.label() : "other tasks";
  ch.summary = who + " took the CPU from " + ctx.who(victim) + ": " + fmt_percent(ch.share()) +
               " of its GPU thread's time lost";

  const double span = static_cast<double>(t.span_ns());
  if (first_pre < 0) {
    ch.evidence.push_back({victim.label() + " was never preempted in its " +
                           fmt_duration(t.span_ns()) + " active time: it lost it waiting for a "
                           "CPU after wake-ups"});
  } else {
    ch.evidence.push_back({victim.label() + " was preempted for " +
                           fmt_duration(t.off.preempted) + " of its " +
                           fmt_duration(t.span_ns()) + " active time (" +
                           fmt_percent(t.off.preempted / span) + "), " +
                           fmt_count(t.preemptions) +
                           " times; it lost the CPU to other tasks from " + fmt_rel(ch.first_ns) +
                           " to " + fmt_rel(ch.last_ns)});
  }
  ch.evidence.push_back({std::string(ctx.budget(t).exact_holders
                                         ? "CPU held meanwhile by (from the CPU's run segments): "
                                         : "CPU taken by: ") +
                         culprit_list(ctx, sp.counted, lost, false, 3, t.pid)});
  if (waits > 0) {
    ch.evidence.push_back({"after wake-ups it waited another " + fmt_duration(waits) +
                           " for a CPU another task held (counted above and in the time lost)"});
  }
  if (!sp.helpers.empty()) {
    ch.evidence.push_back({"not counted (the GPU runtime's own threads, the tracer): " +
                           culprit_list(ctx, sp.helpers, 0, false, 3, t.pid)});
  }
  ch.evidence.push_back({"of all its preemptions (" + fmt_duration(t.off.preempted) + "), " +
                         fmt_duration(t.preempted_in_calls_ns) + " fell inside GPU API calls and " +
                         fmt_duration(t.off.preempted - t.preempted_in_calls_ns) +
                         " between calls, delaying the next launch"});
  if (std::string slow = slow_call_line(ctx, t); !slow.empty()) ch.evidence.push_back({slow});

  // The call that lost the most to preemption, with whoever held the CPU then.
  const CallOverlap* worst = nullptr;
  for (const CallOverlap& o : ctx.joins.overlaps_of(t))
    if (o.preempted_ns > 0 && (!worst || o.preempted_ns > worst->preempted_ns)) worst = &o;
  if (worst) {
    const CallRow& c = ctx.rows.calls[worst->call];
    std::string line = "worst call at " + fmt_rel(ctx.rel(c.ts)) + ": " +
                       std::string(ctx.rows.api_name(c.api)) + " took " + fmt_duration(c.dur) +
                       ", " + fmt_duration(worst->preempted_ns) + " of it preempted";
    if (worst->main_offcpu < ctx.rows.offcpu.size()) {
      const OffCpuRow& o = ctx.rows.offcpu[worst->main_offcpu];
      if (o.preempted) {
        line += " (CPU taken by " +
                ctx.other(o.other_pid, o.other_tid, o.other_comm, o.other_pid == t.pid).label() +
                ")";
      }
    }
    ch.evidence.push_back({line, ctx.rel(c.ts)});
  } else if (longest > 0) {
    ch.evidence.push_back(
        {"longest preemption at " + fmt_rel(ctx.rel(longest_at)) + ": " + fmt_duration(longest),
         ctx.rel(longest_at)});
  }
  // What the culprit ran in Python while it held the CPU (a thread or process of the job).
  if (dominant) {
    if (std::string py = culprit_python_line(ctx, culprit, t.first_ns, t.last_ns); !py.empty())
      ch.evidence.push_back({py});
  }
  // A thread pinned to fewer CPUs than the host has queues behind whatever shares them, while
  // other CPUs may sit idle: its affinity is a cause of its own.
  uint32_t allowed = 0;
  for (const ThreadRow& tr : ctx.rows.threads)
    if (tr.tid == t.tid && tr.cpus_allowed > 0) allowed = tr.cpus_allowed;
  const uint32_t online = ctx.rows.session.online_cpus;
  const bool pinned = allowed > 0 && online > 0 && allowed < online;
  if (pinned) {
    ch.evidence.push_back({victim.label() + " may run on only " + std::to_string(allowed) +
                           " of the host's " + std::to_string(online) +
                           " CPUs (its affinity): it waits for those while others may be free"});
  }
  ch.fix = dominant
               ? contention_fix(victim_proc, culprit, same_process)
               : "several tasks compete for " + victim_proc.label() +
                     "'s CPUs: give the GPU dispatch thread a dedicated core (taskset / "
                     "cpuset) and move the others (" +
                     culprit_list(ctx, sp.counted, lost, false, 2, t.pid) + ") elsewhere";
  if (pinned) {
    ch.fix += "; " + victim_proc.label() + " is pinned to " + std::to_string(allowed) + " of " +
              std::to_string(online) +
              " CPUs: widen its affinity (taskset -a -p -c, the job's cpuset) so it can use "
              "the idle ones";
  }
  ch.metrics = {{"preempted_ns", static_cast<double>(t.off.preempted)},
                {"runqueue_wait_ns", static_cast<double>(waits)},
                {"preempted_in_calls_ns", static_cast<double>(t.preempted_in_calls_ns)},
                {"preemptions", static_cast<double>(sp.preemptions)},
                {"culprit_share", static_cast<double>(top.ns) / lost}};
  if (pinned) ch.metrics.emplace_back("cpus_allowed", allowed);
  out.push_back(std::move(ch));
}

}  // namespace

void detect_cpu_contention(const Context& ctx, std::vector<Chain>& out) {
  // One chain per process: its most preempted GPU thread (threads lose time in parallel, so
  // adding them up would overstate the wall time lost).
  std::map<uint32_t, const ThreadSummary*> worst;
  if (ctx.window_part) {  // which thread is the worst is decided once the windows are added up
    for (const ThreadSummary& t : ctx.joins.threads) one_thread(ctx, t, out);
    return;
  }
  for (const ThreadSummary& t : ctx.joins.threads) {
    const ThreadSummary*& w = worst[t.pid];
    if (!w || ctx.budget(t)[Bucket::Runnable] > ctx.budget(*w)[Bucket::Runnable]) w = &t;
  }
  for (const auto& [pid, t] : worst) one_thread(ctx, *t, out);
}

}  // namespace gpuwhy::analysis
