// SPDX-License-Identifier: Apache-2.0
// Launch-rate drop: the process's launches per interval fell by more than 30% from some point on
// and stayed down (stats.cpp finds the point). To say why, the dispatch thread's time before and
// after that point is split the same way (runnable without a CPU, asleep outside GPU calls,
// waiting on the GPU, in file I/O); the part that grew the most, by at least 5 points of wall
// time, is the cause, with its culprit.
#include <algorithm>
#include <map>

#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

struct TimeSplit {
  int64_t len = 0;
  int64_t no_cpu = 0;    // runnable without a CPU: preempted, or woken and waiting
  int64_t asleep = 0;    // asleep outside GPU calls (waiting for the application)
  int64_t gpu_wait = 0;  // inside calls that drain the GPU queue, on the CPU or asleep
  int64_t io = 0;        // slow file I/O syscalls
  std::map<uint64_t, Culprit> preemptors;  // by pid, threads of the own process by tid
  std::map<uint32_t, Culprit> wakers;      // by tid
};

TimeSplit measure(const Context& ctx, const ThreadSummary& t, int64_t from, int64_t to) {
  TimeSplit s;
  s.len = std::max<int64_t>(to - from, 1);
  CallUnion calls(ctx.rows, ctx.joins, t);
  RunqBlame runq;
  auto [ob, oe] = Joins::range(ctx.joins.offcpu, t.tid);
  for (size_t k = ob; k < oe; ++k) {
    const OffCpuRow& o = ctx.rows.offcpu[k];
    const OffCpuParts p = clip_offcpu(o, from, to);
    if (p.total() == 0) continue;
    s.no_cpu += p.preempted + p.wakeup;
    if (o.preempted) {
      const uint64_t key = culprit_key(o.other_pid, o.other_tid, t.pid);
      Culprit& c = s.preemptors[key];
      c.pid = o.other_pid;
      c.tid = o.other_tid;
      if (o.other_comm) c.comm = o.other_comm;  // latest name: a forked child is renamed by exec
      c.ns += p.preempted;
      ++c.count;
      runq.preempted(o.cpu, key, p.preempted);
    } else if (p.blocked > 0) {
      const int64_t b = std::max(o.ts, from), e = std::min(o.end() - o.runq, to);
      const int64_t outside = p.blocked - calls.covered(b, e);
      if (outside <= 0) continue;
      s.asleep += outside;
      Culprit& c = s.wakers[o.other_tid];
      c.pid = o.other_pid;
      c.tid = o.other_tid;
      if (!c.comm) c.comm = o.other_comm;
      c.ns += outside;
      ++c.count;
    }
  }
  // Run-queue waits, blamed as in the thread summary.
  for (size_t k = ob; k < oe; ++k) {
    const OffCpuRow& o = ctx.rows.offcpu[k];
    const int64_t wait = o.preempted ? 0 : clip_offcpu(o, from, to).wakeup;
    if (wait <= 0) continue;
    const auto blame = runq.culprit_of(o, t.pid);
    if (!blame) continue;
    Culprit& c = s.preemptors[blame->key];
    if (!blame->preemptor) {
      c.pid = o.holder_pid;
      c.tid = o.holder_tid;
      if (o.holder_comm) c.comm = o.holder_comm;  // latest name: a forked child is renamed by exec
    }
    c.wait_ns += wait;
  }
  for (const CallOverlap& o : ctx.joins.overlaps_of(t)) {
    const CallRow& c = ctx.rows.calls[o.call];
    if (c.ts >= from && c.ts < to && drains_queue(ctx.rows.api(c.api)))
      s.gpu_wait -= o.preempted_ns + o.wakeup_ns;  // the CPU's part, counted above
  }
  for (size_t i = t.call_begin; i < t.call_end; ++i) {
    if (!(ctx.joins.bits[i] & call_bits::kDrains)) continue;  // outermost drains, from a byte
    const CallRow& c = ctx.rows.calls[i];
    if (c.ts >= from && c.ts < to) s.gpu_wait += c.dur;
  }
  s.gpu_wait = std::max<int64_t>(s.gpu_wait, 0);
  auto [sb, se] = Joins::range(ctx.joins.syscalls, t.tid);
  for (size_t k = sb; k < se; ++k) {
    const SyscallRow& r = ctx.rows.syscalls[k];
    if (is_io_syscall(ctx.rows, r.nr)) s.io += overlap_ns(r.ts, r.end(), from, to);
  }
  return s;
}

// The culprit that explains the most, runtime helper threads of the victim's process aside.
const Culprit* top_preemptor(const Context& ctx, const TimeSplit& s, uint32_t pid) {
  const Culprit* best = nullptr;
  for (const auto& [k, c] : s.preemptors) {
    if (c.pid == pid && !ctx.joins.thread(c.tid) && is_runtime_helper(ctx.rows.string(c.comm)))
      continue;
    if (!best || c.ns + c.wait_ns > best->ns + best->wait_ns) best = &c;
  }
  return best;
}

const Culprit* top_waker(const TimeSplit& s) {
  const Culprit* best = nullptr;
  for (const auto& [k, c] : s.wakers)
    if (!best || c.ns > best->ns) best = &c;
  return best;
}

double frac(int64_t ns, int64_t len) { return static_cast<double>(ns) / static_cast<double>(len); }

void one_series(const Context& ctx, const RateSeries& r, std::vector<Chain>& out) {
  const ThreadSummary* t = ctx.dispatch_thread(r.pid);
  if (!t) return;
  const auto [ps, pe] = ctx.process_span(r.pid);
  const int64_t at = std::clamp(r.drop.at_ns, ps, pe);
  if (at <= ps || at >= pe) return;
  const TimeSplit before = measure(ctx, *t, std::max(ps, t->first_ns), at);
  const TimeSplit after = measure(ctx, *t, at, std::min(pe, t->last_ns));

  struct Cause {
    const char* key;   // metrics name
    const char* name;  // as the evidence says it
    double b, a;
  };
  const Cause causes[] = {
      {"no_cpu", "runnable without a CPU", frac(before.no_cpu, before.len),
       frac(after.no_cpu, after.len)},
      {"asleep", "asleep outside GPU calls", frac(before.asleep, before.len),
       frac(after.asleep, after.len)},
      {"gpu_wait", "waiting on the GPU", frac(before.gpu_wait, before.len),
       frac(after.gpu_wait, after.len)},
      {"file_io", "in file I/O", frac(before.io, before.len), frac(after.io, after.len)},
  };
  const Cause* cause = nullptr;
  for (const Cause& c : causes)
    if (c.a - c.b >= ctx.th.cause_shift && (!cause || c.a - c.b > cause->a - cause->b)) cause = &c;

  Chain ch;
  ch.kind = "rate_drop";
  ch.title = "Launch rate dropped";
  ch.process = ctx.process(r.pid);
  ch.thread = ctx.thread(t->pid, t->tid);
  ch.span_ns = pe - ps;
  const double drop = r.drop.drop();
  ch.lost_ns = static_cast<int64_t>(static_cast<double>(pe - at) * drop);
  ch.first_ns = ctx.rel(at);
  ch.last_ns = ctx.rel(pe);
  const std::string what = r.what == "launches" ? "launch" : "GPU call";
  ch.evidence.push_back({what + " rate fell " + fmt_percent(drop) + " at about " +
                             fmt_rel(ctx.rel(at)) + ": " + fmt_rate(r.drop.before_per_s) +
                             " before, " + fmt_rate(r.drop.after_per_s) + " after (intervals of " +
                             fmt_duration(r.interval_ns) + ")",
                         ctx.rel(at)});
  std::string changed = "what changed on " + ch.thread.label() + " (before -> after):";
  for (const Cause& c : causes)
    changed += std::string(" ") + c.name + " " + fmt_percent(c.b) + " -> " + fmt_percent(c.a) + ";";
  changed.pop_back();
  ch.evidence.push_back({changed});

  std::string because = "cause not visible in the host data";
  const std::string key = cause ? cause->key : "";
  if (key == "no_cpu") {
    if (const Culprit* c = top_preemptor(ctx, after, r.pid)) {
      const bool own = c->pid == r.pid;
      const Task culprit = ctx.other(c->pid, c->tid, c->comm, own);
      ch.culprit = culprit;
      because = "CPU contention from " + culprit.label();
      std::string line = "after " + fmt_rel(ctx.rel(at)) + ", " + culprit.label() +
                         " preempted it for " + fmt_duration(c->ns);
      if (c->wait_ns > 0)
        line += " and kept it waiting " + fmt_duration(c->wait_ns) + " after wake-ups";
      ch.evidence.push_back({line});
      ch.fix = contention_fix(ch.process, culprit, own);
    }
  } else if (key == "asleep") {
    if (const Culprit* c = top_waker(after)) {
      const Task waker = ctx.other(c->pid, c->tid, c->comm, true);
      ch.culprit = waker;
      because = "the thread now sleeps until " + waker.label() + " wakes it";
      ch.evidence.push_back({"after " + fmt_rel(ctx.rel(at)) + ", " + waker.label() +
                             " woke it after " + fmt_duration(c->ns) + " of sleep, " +
                             fmt_count(c->count) + " times"});
      ch.fix = c->pid == r.pid ? lock_fix(waker)
                               : "find what " + waker.label() + " does from " +
                                     fmt_rel(ctx.rel(at)) + " on: the dispatch thread waits for it";
    }
  } else if (key == "gpu_wait") {
    because = "the GPU work itself got slower (the host waits longer on it)";
    ch.fix = "the host is not the bottleneck after " + fmt_rel(ctx.rel(at)) +
             ": check GPU clocks and throttling (nvidia-smi -q -d PERFORMANCE), other tenants "
             "of the GPU, and whether inputs got larger";
  } else if (key == "file_io") {
    because = "file I/O on the dispatch thread";
    ch.fix =
        "move file I/O off the GPU dispatch thread (background writer, DataLoader workers "
        "with prefetch, async checkpointing)";
  }
  if (!ch.culprit) ch.cap = Severity::Medium;  // a symptom with no host-side culprit
  if (ch.fix.empty()) {
    ch.fix = "no host-side cause visible: compare what the job does before and after " +
             fmt_rel(ctx.rel(at)) +
             " (a new phase, evaluation, larger inputs, another GPU "
             "tenant)";
  }
  ch.summary = ch.process.label() + "'s " + what + " rate fell " + fmt_percent(drop) + " at " +
               fmt_rel(ctx.rel(at)) + ": " + because;
  ch.evidence.push_back({"attributed to: " + because});
  ch.metrics = {{"at_rel_ns", static_cast<double>(ctx.rel(at))},
                {"before_per_s", r.drop.before_per_s},
                {"after_per_s", r.drop.after_per_s},
                {"drop", drop}};
  for (const Cause& c : causes) {
    ch.metrics.emplace_back(std::string(c.key) + "_before", c.b);
    ch.metrics.emplace_back(std::string(c.key) + "_after", c.a);
  }
  out.push_back(std::move(ch));
}

}  // namespace

void detect_rate_drop(const Context& ctx, std::vector<Chain>& out) {
  for (const RateSeries& r : ctx.stats.rates)
    if (r.drop.found) one_series(ctx, r, out);
}

}  // namespace gpuwhy::analysis
