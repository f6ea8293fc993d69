// SPDX-License-Identifier: Apache-2.0
// GPU idle that nothing else explains. After a call that drained its queue (a sync, a synchronous
// copy, a free) and until it queues work again, a dispatch thread leaves the GPU with nothing of
// its own to run. Other chains claim the parts of that time they explain (a preemption, a lock, a
// read from a producer, the host work after a per-step sync); what is left is reported here, by
// what the thread was doing meanwhile: a sleep between steps, a slow syscall, its own host work.
// Without this chain a trace whose GPU idled a fifth of the time could read CLEAN.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

constexpr Bucket kContention[] = {Bucket::Runnable};
constexpr Bucket kLock[] = {Bucket::BlockedLock};
constexpr Bucket kIo[] = {Bucket::Io, Bucket::Handoff};
constexpr Bucket kRefill[] = {Bucket::RefillGap};
constexpr Bucket kTransfer[] = {Bucket::Transfer};
constexpr Bucket kAlloc[] = {Bucket::Alloc};
constexpr Bucket kReclaim[] = {Bucket::Reclaim};
constexpr Bucket kThrottled[] = {Bucket::Throttled};
constexpr Bucket kKernelWork[] = {Bucket::KernelWork};
constexpr Bucket kGil[] = {Bucket::Gil};
constexpr Bucket kPolling[] = {Bucket::Polling};

std::string fix_for(Bucket top, const std::string& syscall) {
  switch (top) {
    case Bucket::Sleep:
      return "the dispatch thread sleeps (" + syscall +
             ") while the GPU has nothing queued: drop the sleep or timed wait between steps "
             "(time.sleep, queue.get(timeout=...), polling loops), or queue the next step's work "
             "before waiting so the GPU stays busy";
    case Bucket::HostWork:
    case Bucket::RefillGap:
    case Bucket::ApiOverhead:
      return "the host prepares each step only after the previous one finished: overlap it "
             "with GPU work (no per-step sync, prefetch inputs, CUDA graphs / torch.compile to "
             "cut launch overhead)";
    case Bucket::Syscall:
      return "a slow " + syscall +
             " on the dispatch thread while the GPU has nothing queued: move it to a helper "
             "thread or batch it";
    case Bucket::Throttled:
      return "its cgroup's CPU quota holds the dispatch thread off the CPU while the GPU has "
             "nothing queued: raise the container's CPU limit (resources.limits.cpu, cpu.max)";
    case Bucket::Gil:
      return "the dispatch thread waits for the Python GIL while the GPU has nothing queued: "
             "move the other threads' pure-Python work out of the process";
    case Bucket::KernelWork:
      return "the kernel works for the dispatch thread (page faults) while the GPU has nothing "
             "queued: reuse buffers instead of touching fresh memory every step";
    case Bucket::WakeLatency:
      return "the thread waits for an idle CPU to pick it up after each wake-up: disable deep "
             "CPU idle states (cpupower idle-set -D 10) or keep the dispatch thread busy-polling";
    case Bucket::GpuWait:
      return "syncs wait with nothing of this thread queued: they wait on other streams, "
             "threads or processes; sync only on the events the host needs";
    default:
      return "find what the dispatch thread does between a sync and its next launch (trace "
             "--stacks, --with syscalls) and overlap it with GPU work";
  }
}

// A --from value for a time since the trace start: seconds, rounded up to a tenth (the report
// then starts inside the steps); a --to value, rounded down.
std::string from_arg(int64_t rel_ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", std::ceil(static_cast<double>(rel_ns) / 1e8) / 10);
  return buf;
}
std::string to_arg(int64_t rel_ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", std::floor(static_cast<double>(rel_ns) / 1e8) / 10);
  return buf;
}

// What the process's steps run at, for the phases' evidence.
std::string steady_rate_text(const ThreadBudget& b) {
  return b.steady_rate > 0 ? " (its steps queue GPU work at " + fmt_rate(b.steady_rate) + ")"
                           : std::string();
}

// What the chains of one thread took: the buckets they claim, and of the refill gap (all of it
// GPU-idle time) how much hidden_sync drew, which is less than the bucket when the thread's
// start-up or tail is in it: the gaps after its syncs, not the seconds before the first step.
struct Claims {
  std::set<Bucket> buckets;
  int64_t refill_drawn = 0;
};

// The start-up phase of a process traced from its start (phases.hpp): the thread's GPU-idle time
// before its process's steps begin. Graded LOW at most: what a job does before its first step is
// summarised, the steady state is what the report is about (explain_steady.hpp).
void start_up_chain(const Context& ctx, const ThreadSummary& t, const ThreadBudget& b, int64_t lost,
                    std::vector<Chain>& out) {
  Chain ch = ctx.thread_chain(t, "start_up", "GPU idle during start-up", lost);
  ch.cap = Severity::Low;
  const int64_t at = ctx.rel(b.steady_from);
  ch.first_ns = ctx.rel(t.first_ns);
  ch.last_ns = at;
  ch.summary = ctx.who(ch.thread) + " starts: the GPU has nothing of it to run for " +
               fmt_duration(lost) + " before its steps begin at " + fmt_rel(at);
  ch.evidence.push_back({fmt_duration(b.start_up_idle_ns + b.start_up_unqueued_ns) +
                             " at start-up, before " + fmt_rel(at) +
                             ", where its GPU work reaches its steady rate" + steady_rate_text(b) +
                             ": loading libraries and data, building the model, the first "
                             "kernels",
                         at});
  ch.fix =
      "this is the program starting (the trace began with it), shown apart from the steady "
      "state: explain the steady state alone with --from " +
      from_arg(at) +
      ", or trace the job once it runs (gpuwhy trace -p PID); if start-up itself is the "
      "problem, load data and compile kernels ahead (torch.compile cache, lazy loading "
      "off) and keep the process alive between jobs";
  ch.metrics = {
      {"start_up_idle_ns", static_cast<double>(b.start_up_idle_ns + b.start_up_unqueued_ns)},
      {"steady_from_rel_ns", static_cast<double>(at)}};
  out.push_back(std::move(ch));
}

// The tail of a process that exited in the trace: the thread's GPU-idle time after its
// process's last step (saving a checkpoint, a final evaluation on the CPU, tearing down).
// Summarised like the start-up.
void tail_chain(const Context& ctx, const ThreadSummary& t, const ThreadBudget& b, int64_t lost,
                std::vector<Chain>& out) {
  Chain ch = ctx.thread_chain(t, "tail", "GPU idle after the last step", lost);
  ch.cap = Severity::Low;
  const int64_t at = ctx.rel(b.steady_to);
  ch.first_ns = at;
  ch.last_ns = ctx.rel(t.last_ns);
  ch.summary = ctx.who(ch.thread) + " ends: the GPU has nothing of it to run for " +
               fmt_duration(lost) + " after its steps end at " + fmt_rel(at);
  ch.evidence.push_back({fmt_duration(b.tail_idle_ns) + " after " + fmt_rel(at) +
                             ", where its GPU work falls from its steady rate" +
                             steady_rate_text(b) + ", until its last GPU call at " +
                             fmt_rel(ctx.rel(t.last_ns)) + "; the process exited in the trace",
                         at});
  ch.fix =
      "this is the program ending (saving, evaluating, tearing down), shown apart from the "
      "steady state: explain the steady state alone with --to " +
      to_arg(at) +
      "; if the tail itself is the problem, save checkpoints from a background thread "
      "(asynchronous checkpointing) or less often, and evaluate on the GPU";
  ch.metrics = {{"tail_idle_ns", static_cast<double>(b.tail_idle_ns)},
                {"steady_to_rel_ns", static_cast<double>(at)}};
  out.push_back(std::move(ch));
}

void one_thread(const Context& ctx, const ThreadSummary& t, const Claims& claims,
                std::vector<Chain>& out) {
  const ThreadBudget& b = ctx.budget(t);
  const int64_t phases_idle = b.start_up_idle_ns + b.tail_idle_ns;
  int64_t lost = 0;
  std::vector<std::pair<int64_t, Bucket>> parts;
  for (size_t k = 0; k < kBuckets; ++k) {
    const auto bk = static_cast<Bucket>(k);
    // While it waits on a sibling that dispatches, the GPU is that sibling's to keep fed.
    if (bk == Bucket::Delegated || b.idle_ns[k] <= 0) continue;
    int64_t left = b.idle_ns[k];
    if (bk == Bucket::RefillGap && claims.buckets.count(bk)) {
      // hidden_sync draws on the gaps after its syncs; the start-up's and the tail's seconds
      // it leaves here.
      left = std::min(left - claims.refill_drawn, phases_idle);
    } else if (claims.buckets.count(bk)) {
      continue;
    }
    if (left <= 0) continue;
    lost += left;
    parts.emplace_back(left, bk);
  }
  // The start-up and the tail are phases of their own: their idle seconds become start_up and
  // tail chains, ranked after the steady state's causes (rank_chains), and the gpu_idle chain
  // keeps the steady state's.
  const int64_t start_up_lost = std::min(b.start_up_idle_ns, lost);
  if (start_up_lost + b.start_up_unqueued_ns > 0)
    start_up_chain(ctx, t, b, start_up_lost + b.start_up_unqueued_ns, out);
  lost -= start_up_lost;
  const int64_t tail_lost = std::min(b.tail_idle_ns, lost);
  if (tail_lost > 0) tail_chain(ctx, t, b, tail_lost, out);
  lost -= tail_lost;
  if (lost <= 0) return;
  std::sort(parts.rbegin(), parts.rend());
  const Bucket top = parts.front().second;
  const auto& sys = b.by_syscall[static_cast<size_t>(top)];
  const std::string top_syscall =
      sys.empty() ? std::string("") : ctx.rows.syscall_name(sys[0].first);
  Chain ch = ctx.thread_chain(
      t, "gpu_idle",
      top == Bucket::Sleep ? "GPU idle while the dispatch thread sleeps" : "GPU idle between steps",
      lost);
  ch.first_ns = ctx.rel(t.first_ns);
  ch.last_ns = ctx.rel(t.last_ns);
  ch.summary = ctx.who(ch.thread) + " left the GPU without queued work for " +
               fmt_percent(ch.share()) + " of its time, mostly " + std::string(bucket_label(top)) +
               (top_syscall.empty() ? "" : " (" + top_syscall + ")");
  std::string split;
  for (size_t i = 0; i < parts.size() && i < 4; ++i) {
    if (!split.empty()) split += ", ";
    split += std::string(bucket_label(parts[i].second)) + " " + fmt_duration(parts[i].first);
  }
  ch.evidence.push_back(
      {(b.idle_measured ? "the device ran nothing of its process for "
                        : "no GPU work queued by it for ") +
       fmt_duration(b.idle_total()) + " of " + fmt_duration(t.span_ns()) + " (" +
       fmt_percent(static_cast<double>(b.idle_total()) / t.span_ns()) +
       (b.idle_measured ? ", measured on the device (trace --gpu-activity); its calls estimated " +
                              fmt_duration(b.host_idle_ns)
                        : std::string(", after a sync until its next launch")) +
       "); not explained by another finding: " + fmt_duration(lost)});
  ch.evidence.push_back({"what it did meanwhile: " + split});
  if (!sys.empty()) {
    std::string names;
    for (size_t i = 0; i < sys.size() && i < 3; ++i) {
      if (!names.empty()) names += ", ";
      names += ctx.rows.syscall_name(sys[i].first) + " " + fmt_duration(sys[i].second);
    }
    ch.evidence.push_back({"in syscalls: " + names});
  }
  if (start_up_lost > 0) {
    ch.evidence.push_back({"besides " + fmt_duration(start_up_lost) + " at start-up, before " +
                               fmt_rel(ctx.rel(b.steady_from)) + " (the start_up finding)",
                           ctx.rel(b.steady_from)});
  }
  if (tail_lost > 0) {
    ch.evidence.push_back({"besides " + fmt_duration(tail_lost) + " after the last step, from " +
                               fmt_rel(ctx.rel(b.steady_to)) + " (the tail finding)",
                           ctx.rel(b.steady_to)});
  }
  int64_t pauses = 0;
  size_t n_pauses = 0;
  for (auto [s, e] : b.long_idle) {
    if (e <= b.steady_from || s >= b.steady_to) continue;
    pauses += e - s;
    ++n_pauses;
  }
  if (n_pauses > 0) {
    ch.evidence.push_back({fmt_count(n_pauses) + " pause(s) of a second or more later on, " +
                           fmt_duration(pauses) +
                           " in all (a checkpoint, an evaluation, waiting for input?)"});
  }
  ch.fix = fix_for(top, top_syscall.empty() ? "sleep" : top_syscall);
  ch.metrics = {{"gpu_idle_ns", static_cast<double>(b.idle_total())},
                {"start_up_idle_ns", static_cast<double>(b.start_up_idle_ns)},
                {"tail_idle_ns", static_cast<double>(b.tail_idle_ns)},
                {"unexplained_idle_ns", static_cast<double>(lost)},
                {"sleep_idle_ns", static_cast<double>(b.idle(Bucket::Sleep))},
                {"idle_measured", b.idle_measured ? 1.0 : 0.0}};
  out.push_back(std::move(ch));
}

}  // namespace

std::span<const Bucket> claimed_buckets(std::string_view kind) {
  if (kind == "cpu_contention") return kContention;
  if (kind == "lock_wait") return kLock;
  if (kind == "io_stall") return kIo;
  if (kind == "hidden_sync") return kRefill;
  if (kind == "transfer_bound") return kTransfer;
  if (kind == "alloc_churn") return kAlloc;
  if (kind == "memory_reclaim") return kReclaim;
  if (kind == "cpu_quota") return kThrottled;
  if (kind == "page_faults") return kKernelWork;
  if (kind == "gil_contention") return kGil;
  if (kind == "gpu_polling") return kPolling;
  return {};
}

void detect_gpu_idle(const Context& ctx, std::vector<Chain>& chains) {
  // Buckets claimed per thread by the chains found so far.
  std::map<uint32_t, Claims> claimed;
  // A window's cpu_contention names every thread (Context::window_part): only the most
  // preempted one of each process would have a chain in one analysis.
  // So does lock_wait: only the one that lost the most would.
  std::map<uint32_t, const ThreadSummary*> worst;
  std::map<uint32_t, const Chain*> most_blocked;
  if (ctx.window_part) {
    for (const ThreadSummary& t : ctx.joins.threads) {
      const ThreadSummary*& w = worst[t.pid];
      if (!w || ctx.budget(t)[Bucket::Runnable] > ctx.budget(*w)[Bucket::Runnable]) w = &t;
    }
    for (const Chain& c : chains) {
      const Chain*& m = most_blocked[c.process.pid];
      if (c.kind == "lock_wait" && (!m || c.lost_ns > m->lost_ns)) m = &c;
    }
  }
  for (const Chain& c : chains) {
    if (ctx.window_part && c.kind == "cpu_contention" && worst[c.process.pid] &&
        worst[c.process.pid]->tid != c.thread.tid)
      continue;
    if (ctx.window_part && c.kind == "lock_wait" && most_blocked[c.process.pid] != &c) continue;
    Claims& cl = claimed[c.thread.tid];
    for (Bucket b : claimed_buckets(c.kind)) cl.buckets.insert(b);
    if (c.kind == "hidden_sync") cl.refill_drawn += c.lost_ns;
  }
  // One chain per process: the GPU-idle time is the process's (budget.cpp), seen by each of its
  // GPU threads over its own span. The thread that leaves most of it unexplained is the one to
  // name: the one that syncs and refills, not a worker that waits for it (PyTorch's autograd
  // thread launches more kernels than the main thread but never drains the queue). A window of
  // a longer analysis names every thread: the merge keeps the one with the most in all.
  // So are its start-up and its tail (a chain each, of the thread with the most).
  std::map<std::pair<uint32_t, std::string>, Chain> best;  // (pid, kind)
  for (const ThreadSummary& t : ctx.joins.threads) {
    if (t.span_ns() <= 0) continue;
    std::vector<Chain> one;
    one_thread(ctx, t, claimed[t.tid], one);
    for (Chain& c : one) {
      if (ctx.window_part) {
        chains.push_back(std::move(c));
        continue;
      }
      auto [it, fresh] = best.try_emplace({t.pid, c.kind}, std::move(c));
      if (!fresh && c.lost_ns > it->second.lost_ns) it->second = std::move(c);
    }
  }
  for (auto& [key, ch] : best) chains.push_back(std::move(ch));
}

}  // namespace gpuwhy::analysis
