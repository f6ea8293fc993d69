// SPDX-License-Identifier: Apache-2.0
// Lock waits: the GPU dispatch thread went to sleep and the thread that woke it belongs to the
// same process. A futex wake from a sibling is what a mutex or condition variable release looks
// like; the sibling is the one holding the dispatch thread back. Sleeps inside GPU calls are
// excluded unless the waker calls GPU APIs itself: there the waker is the driver, the GPU
// completion thread or the runtime's queue, and waiting is the point of the call.
#include <algorithm>
#include <map>

#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

struct SiblingWaits {
  const ThreadSummary* t = nullptr;
  int64_t ns = 0;
  std::vector<Culprit> siblings;
};

// The thread's BlockedLock bucket: asleep in a futex (or, in traces without the syscall, any
// sleep) until another task woke it. Sleeps in read() or poll() on a producer's pipe are the
// Handoff bucket (io_stall), waits inside GPU calls the runtime's own unless a GPU-calling
// thread woke it: budget.cpp decides once, so no time is counted here and there.
SiblingWaits sibling_waits(const Context& ctx, const ThreadSummary& t) {
  SiblingWaits s;
  s.t = &t;
  for (const Culprit& c : ctx.budget(t).tasks(Bucket::BlockedLock)) {
    if (c.tid == t.tid || c.tid == 0) continue;
    s.ns += c.ns;
    s.siblings.push_back(c);
  }
  return s;
}

// What the sibling spent in slow syscalls meanwhile, by name: "write 1.20 s, fsync 300 ms".
std::string sibling_activity(const Context& ctx, uint32_t tid, int64_t from, int64_t to) {
  auto [b, e] = Joins::range(ctx.joins.syscalls, tid);
  std::map<uint32_t, int64_t> by_nr;
  for (size_t k = b; k < e; ++k) {
    const SyscallRow& s = ctx.rows.syscalls[k];
    by_nr[s.nr] += overlap_ns(s.ts, s.end(), from, to);
  }
  std::vector<std::pair<int64_t, uint32_t>> v;
  for (auto [nr, ns] : by_nr)
    if (ns > 0) v.emplace_back(ns, nr);
  std::sort(v.rbegin(), v.rend());
  std::string out;
  for (size_t i = 0; i < v.size() && i < 3; ++i) {
    if (!out.empty()) out += ", ";
    out += ctx.rows.syscall_name(v[i].second) + " " + fmt_duration(v[i].first);
  }
  return out;
}

void one_thread(const Context& ctx, const SiblingWaits& w, std::vector<Chain>& out) {
  const ThreadSummary& t = *w.t;
  const Culprit& top = w.siblings.front();
  const bool own = top.pid == t.pid;
  const Task sibling = ctx.other(top.pid, top.tid, top.comm, /*as_thread=*/own);
  const bool dominant = top.ns >= ctx.th.dominant * static_cast<double>(w.ns);

  Chain ch = ctx.thread_chain(t, "lock_wait",
                              own ? "Dispatch thread blocked by a sibling thread"
                                  : "Dispatch thread blocked by another process",
                              w.ns);
  if (dominant) ch.culprit = sibling;
  const Task& victim = ch.thread;

  // The individual sleeps behind the total, by the rule of ThreadSummary::blocked_by_app_ns.
  CallUnion calls(ctx.rows, ctx.joins, t);
  auto [ob, oe] = Joins::range(ctx.joins.offcpu, t.tid);
  int64_t first = -1, last = -1, longest = 0, longest_at = 0;
  uint32_t longest_waker = 0, longest_comm = 0;
  uint32_t wakes = 0;
  for (const Culprit& c : w.siblings) wakes += c.count;
  for (size_t k = ob; k < oe; ++k) {
    const OffCpuRow& o = ctx.rows.offcpu[k];
    if (o.preempted || o.other_pid != t.pid || o.other_tid == t.tid) continue;
    const int64_t from = std::max(o.ts, t.first_ns);
    const int64_t to = std::min(o.end() - o.runq, t.last_ns);
    // A GPU-calling sibling's wake-up is a runtime lock inside GPU calls and a hand-over of
    // dispatch outside them (Bucket::Delegated); another sibling's, a lock outside GPU calls.
    const bool app_waker = ctx.joins.thread(o.other_tid) != nullptr;
    const int64_t inside = calls.covered(from, to);
    const int64_t ns = app_waker ? inside : std::max<int64_t>(0, to - from) - inside;
    if (ns <= 0) continue;
    if (first < 0) first = o.ts;
    last = o.end();
    if (ns > longest) {
      longest = ns;
      longest_at = o.ts;
      longest_waker = o.other_tid;
      longest_comm = o.other_comm;
    }
  }
  ch.first_ns = ctx.rel(std::max(first, t.first_ns));
  ch.last_ns = ctx.rel(std::min(last, t.last_ns));
  ch.summary = ctx.who(victim) + " waits for " +
               (dominant ? sibling.label() : std::string(own ? "sibling threads" : "other tasks")) +
               " (lock / condition variable): " + fmt_percent(ch.share()) + " of its time lost";

  ch.evidence.push_back({victim.label() + " slept " + fmt_duration(w.ns) + " (" +
                         fmt_percent(ch.share()) + " of its " + fmt_duration(t.span_ns()) +
                         ") until " + (own ? "a thread of its own process" : "another task") +
                         " woke it, " + fmt_count(wakes) + " times"});
  ch.evidence.push_back({"woken by: " + culprit_list(ctx, w.siblings, w.ns, true)});

  // The lock itself: the futex sleeps in that time (not the futex waits inside GPU calls, which
  // are the runtime waiting for the GPU).
  const uint32_t futex = futex_nr(ctx.rows);
  int64_t futex_ns = 0;
  for (const auto& [nr, ns] : ctx.budget(t).by_syscall[static_cast<size_t>(Bucket::BlockedLock)])
    if (nr == futex) futex_ns += ns;
  if (futex_ns == 0) {
    // Sleeps that do not name their syscall (the syscall family's rows do): futex time outside
    // GPU calls.
    CallUnion in_calls(ctx.rows, ctx.joins, t);
    auto [sb, se] = Joins::range(ctx.joins.syscalls, t.tid);
    for (size_t k = sb; k < se; ++k) {
      const SyscallRow& s = ctx.rows.syscalls[k];
      const int64_t from = std::max(s.ts, t.first_ns), to = std::min(s.end(), t.last_ns);
      if (s.nr != futex || to <= from) continue;
      futex_ns += (to - from) - in_calls.covered(from, to);
    }
  }
  const uint64_t futex_calls = futex_ns > 0 ? wakes : 0;
  if (futex_ns > 0) {
    ch.evidence.push_back({fmt_duration(futex_ns) +
                           " of it asleep in futex waits outside GPU calls: a lock or condition "
                           "variable"});
  }
  if (longest > 0) {
    ch.evidence.push_back({"longest at " + fmt_rel(ctx.rel(longest_at)) + ": asleep " +
                               fmt_duration(longest) + ", woken by " +
                               ctx.other(t.pid, longest_waker, longest_comm, true).label(),
                           ctx.rel(longest_at)});
  }
  if (std::string act = sibling_activity(ctx, top.tid, t.first_ns, t.last_ns); !act.empty()) {
    ch.evidence.push_back({"meanwhile " + sibling.label() + " was in slow syscalls: " + act +
                           " (work it likely does while holding the lock)"});
  }
  // What the sibling ran in Python meanwhile: the work it likely does while holding the lock.
  if (dominant) {
    if (std::string py = culprit_python_line(ctx, sibling, t.first_ns, t.last_ns); !py.empty())
      ch.evidence.push_back({py});
  }
  ch.fix = lock_fix(sibling);
  ch.metrics = {{"blocked_by_siblings_ns", static_cast<double>(w.ns)},
                {"wakeups", static_cast<double>(wakes)},
                {"futex_waits", static_cast<double>(futex_calls)},
                {"futex_ns", static_cast<double>(futex_ns)},
                {"culprit_share", static_cast<double>(top.ns) / static_cast<double>(w.ns)}};
  out.push_back(std::move(ch));
}

}  // namespace

void detect_lock_wait(const Context& ctx, std::vector<Chain>& out) {
  std::map<uint32_t, SiblingWaits> worst;  // per process, its most affected thread
  for (const ThreadSummary& t : ctx.joins.threads) {
    SiblingWaits w = sibling_waits(ctx, t);
    if (w.ns <= 0) continue;
    if (ctx.window_part) {  // the most affected thread is decided once the windows are added up
      one_thread(ctx, w, out);
      continue;
    }
    SiblingWaits& cur = worst[t.pid];
    if (w.ns > cur.ns) cur = std::move(w);
  }
  for (const auto& [pid, w] : worst) one_thread(ctx, w, out);
}

}  // namespace gpuwhy::analysis
