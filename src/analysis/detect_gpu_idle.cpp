// SPDX-License-Identifier: Apache-2.0
// GPU idle that nothing else explains. After a call that drained its queue (a sync, a synchronous
// copy, a free) and until it queues work again, a dispatch thread leaves the GPU with nothing of
// its own to run. Other chains claim the parts of that time they explain (a preemption, a lock, a
// read from a producer, the host work after a per-step sync); what is left is reported here, by
// what the thread was doing meanwhile: a sleep between steps, a slow syscall, its own host work.
// Without this chain a trace whose GPU idled a fifth of the time could read CLEAN.
#include <algorithm>
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

void one_thread(const Context& ctx, const ThreadSummary& t, const std::set<Bucket>& claimed,
                std::vector<Chain>& out) {
  const ThreadBudget& b = ctx.budget(t);
  int64_t lost = 0;
  std::vector<std::pair<int64_t, Bucket>> parts;
  for (size_t k = 0; k < kBuckets; ++k) {
    const auto bk = static_cast<Bucket>(k);
    if (claimed.count(bk) || b.idle_ns[k] <= 0) continue;
    lost += b.idle_ns[k];
    parts.emplace_back(b.idle_ns[k], bk);
  }
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
  ch.evidence.push_back({"no GPU work queued by it for " + fmt_duration(b.idle_total()) + " of " +
                         fmt_duration(t.span_ns()) + " (" +
                         fmt_percent(static_cast<double>(b.idle_total()) / t.span_ns()) +
                         ", after a sync until its next launch); not explained by another "
                         "finding: " +
                         fmt_duration(lost)});
  ch.evidence.push_back({"what it did meanwhile: " + split});
  if (!sys.empty()) {
    std::string names;
    for (size_t i = 0; i < sys.size() && i < 3; ++i) {
      if (!names.empty()) names += ", ";
      names += ctx.rows.syscall_name(sys[i].first) + " " + fmt_duration(sys[i].second);
    }
    ch.evidence.push_back({"in syscalls: " + names});
  }
  ch.fix = fix_for(top, top_syscall.empty() ? "sleep" : top_syscall);
  ch.metrics = {{"gpu_idle_ns", static_cast<double>(b.idle_total())},
                {"unexplained_idle_ns", static_cast<double>(lost)},
                {"sleep_idle_ns", static_cast<double>(b.idle(Bucket::Sleep))}};
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
  return {};
}

void detect_gpu_idle(const Context& ctx, std::vector<Chain>& chains) {
  // Buckets claimed per thread by the chains found so far.
  std::map<uint32_t, std::set<Bucket>> claimed;
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
    for (Bucket b : claimed_buckets(c.kind)) claimed[c.thread.tid].insert(b);
  }
  std::vector<Chain> found;
  // Only the thread that queues a process's GPU work knows when that queue is empty.
  std::set<uint32_t> pids;
  for (const ThreadSummary& t : ctx.joins.threads) pids.insert(t.pid);
  if (ctx.window_part) {
    for (const ThreadSummary& t : ctx.joins.threads) {
      if (t.launches > 0 && t.span_ns() > 0) one_thread(ctx, t, claimed[t.tid], found);
    }
    pids.clear();
  }
  for (uint32_t pid : pids) {
    const ThreadSummary* t = ctx.dispatch_thread(pid);
    if (!t || t->launches == 0 || t->span_ns() <= 0) continue;
    one_thread(ctx, *t, claimed[t->tid], found);
  }
  std::move(found.begin(), found.end(), std::back_inserter(chains));
}

}  // namespace gpuwhy::analysis
