// SPDX-License-Identifier: Apache-2.0
// The time half of the audit: each GPU process's regime from its threads' time budgets, the
// GPU's busy time bounded from the host side, explain's fixes as levers, and their cost.
#include "analysis/audit.hpp"

#include <algorithm>
#include <map>

#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

constexpr double kNsPerHour = 3.6e12;
// Sync-bound: the syncs cost at least this share of the span.
constexpr double kSyncShare = 0.25;

// What the process's budgets say, summed over its GPU threads.
struct Sums {
  RegimeTimes t;
  int64_t first = INT64_MAX, last = INT64_MIN;
  Task process;
};

int64_t line_ns(const BudgetReport& b, Bucket k) {
  for (const BudgetLine& l : b.lines)
    if (l.bucket == k) return l.ns;
  return 0;
}

double metric(const Chain& c, std::string_view name) {
  for (const auto& [k, v] : c.metrics)
    if (k == name) return v;
  return 0;
}

// A chain as a lever; the transfer chain's pinning estimate comes with it.
Lever lever_of(const Chain& c, double price_per_ns) {
  Lever l{c.kind, c.title, c.fix, c.lost_ns, price_per_ns * static_cast<double>(c.lost_ns)};
  if (c.kind == "transfer_bound") {
    PinningEstimate p;
    p.pageable_bytes = static_cast<uint64_t>(metric(c, "pageable_bytes"));
    p.pageable_ns = static_cast<int64_t>(metric(c, "pageable_ns"));
    p.returns_ns = static_cast<int64_t>(metric(c, "pinning_returns_ns"));
    p.at_pinned_ns = static_cast<int64_t>(metric(c, "pinned_at_ns"));
    p.pinned_bytes_per_s = metric(c, "pinned_bytes_per_s");
    p.rate_observed = metric(c, "pinned_rate_observed") > 0;
    l.pinning = p;
    l.async_returns_ns = static_cast<int64_t>(metric(c, "async_returns_ns"));
  }
  return l;
}

// The lost time of the chains of one kind that name the process.
int64_t chain_lost_ns(const Report& r, uint32_t pid, std::string_view kind) {
  int64_t ns = 0;
  for (const Chain& c : r.chains)
    if (c.kind == kind && c.process.pid == pid) ns += c.lost_ns;
  return ns;
}

void classify(ProcessAudit& p) {
  const RegimeTimes& t = p.times;
  const double span = static_cast<double>(std::max<int64_t>(1, t.span_ns));
  auto pct = [&](int64_t ns) { return fmt_percent(static_cast<double>(ns) / span); };
  const std::string split = "GPU wait " + pct(t.gpu_ns) + ", syncs " + pct(t.sync_ns) +
                            ", transfers " + pct(t.transfer_ns) + ", peers " + pct(t.peer_ns) +
                            ", host " + pct(t.host_ns + t.refill_ns) + " of " +
                            fmt_duration(t.span_ns);
  // Syncs first: time they cost comes back by taking them out, without faster code or
  // hardware. Otherwise the largest share decides: each is time one kind of change returns.
  const std::pair<Regime, int64_t> by_time[] = {{Regime::GpuBound, t.gpu_ns},
                                                {Regime::TransferBound, t.transfer_ns},
                                                {Regime::PeerBound, t.peer_ns},
                                                {Regime::HostBound, t.host_ns + t.refill_ns}};
  const auto top = *std::max_element(std::begin(by_time), std::end(by_time),
                                     [](auto& a, auto& b) { return a.second < b.second; });
  p.regime = static_cast<double>(t.sync_ns) >= kSyncShare * span ? Regime::SyncBound : top.first;
  switch (p.regime) {
    case Regime::GpuBound:
      p.evidence = "the host mostly waits for its GPU work to finish: " + split;
      p.move =
          "the GPU is the limit: faster kernels (mixed precision, fused ops, larger "
          "batches per launch) or more GPUs; host-side fixes return little";
      break;
    case Regime::SyncBound:
      p.evidence =
          "the host waits in syncs and read-backs the loop does not need, and the GPU "
          "idles while it refills the queue: " +
          split;
      p.move =
          "take the syncs and read-backs explain names out of the loop (async copies to "
          "pinned memory, read results a step later)";
      break;
    case Regime::TransferBound:
      p.evidence = "host<->device copies take the most time: " + split;
      p.move =
          "copy from pinned memory with async copies that overlap compute, copy less, or "
          "keep data on the device";
      break;
    case Regime::PeerBound:
      p.evidence = "waiting for other ranks in collectives takes the most time: " + split;
      p.move = "find why the late rank is late (explain names it) and balance the ranks' work";
      break;
    case Regime::HostBound:
      p.evidence = "the host cannot keep the GPU fed: " + split;
      p.move =
          "the host is the limit: take the host work and stalls explain names off the "
          "dispatch thread (data loading in workers, fewer small launches, CUDA graphs)";
      break;
  }
}

// A sync that waited at least this share of its episode (from the first work queued after the
// previous drain to its own end), and this long, found the GPU still busy.
constexpr double kBlockedShare = 0.1;
constexpr int64_t kBlockedMinNs = 20'000;

// The GPU's busy time from one thread's calls ((tid, ts) order), episode by episode: work queued
// after a drain, then the drain, less the time the thread waited for a CPU in it (a late wake-up
// is the host's delay). The GPU ran at most the episode (and at least while the thread
// waited for it: the budget's GPU-wait time, which leaves out waiting for a CPU). The estimate
// takes a drain that waited as a GPU that was fed the whole episode (it still had work when the
// host asked), and one that returned at once as a GPU that finished somewhere in the episode: half
// of it, the estimate with the smallest worst-case error.
struct BusySums {
  int64_t upper = 0, estimate = 0;
};
// The time of [from, to) the thread spent runnable, waiting for a CPU (its off-CPU rows at
// [k, k_end), (tid, ts) order; k moves forward): the host's delay, not the GPU's work.
int64_t runnable_ns(const TraceRows& rows, size_t& k, size_t k_end, int64_t from, int64_t to) {
  while (k < k_end && rows.offcpu[k].end() <= from) ++k;
  int64_t ns = 0;
  for (size_t j = k; j < k_end && rows.offcpu[j].ts < to; ++j) {
    const OffCpuRow& o = rows.offcpu[j];
    const int64_t runq = o.preempted ? o.dur : std::clamp<int64_t>(o.runq, 0, o.dur);
    ns += std::max<int64_t>(0, std::min(to, o.end()) - std::max(from, o.end() - runq));
  }
  return ns;
}

void thread_busy(const TraceRows& rows, size_t begin, size_t end, std::pair<size_t, size_t> off,
                 BusySums& b) {
  int64_t start = -1, outer_end = INT64_MIN;
  size_t k = off.first;
  for (size_t i = begin; i < end; ++i) {
    const CallRow& c = rows.calls[i];
    if (c.end() <= outer_end) continue;  // inside an earlier call (a runtime call's driver call)
    outer_end = c.end();
    const ApiMeta& m = rows.api(c.api);
    if (start < 0 && enqueues_work(m)) start = c.ts;
    if (!drains_queue(m)) continue;
    // A synchronous copy or memset is GPU work of its own (the copy engine) even with nothing
    // queued before it; its time is not a certain wait, though (a pageable copy stages on the
    // CPU first), so only a wait behind queued work counts towards the lower bound.
    const bool own_work = c.cat == Category::Copy || c.cat == Category::Memset;
    if (start < 0 && !own_work) continue;  // a sync with nothing queued
    const int64_t from = start >= 0 ? start : c.ts;
    const int64_t episode = c.end() - from - runnable_ns(rows, k, off.second, from, c.end());
    const bool waited = c.dur >= kBlockedMinNs &&
                        static_cast<double>(c.dur) >= kBlockedShare * static_cast<double>(episode);
    b.upper += episode;
    // Waited: fed the whole episode. Returned at once: it finished somewhere in the episode,
    // and the middle is the estimate whose error (half the episode) is smallest.
    b.estimate += waited ? episode : episode / 2;
    start = -1;
  }
  if (start >= 0) b.upper += rows.calls[end - 1].end() - start;  // queued at the end
}

std::map<uint32_t, BusySums> busy_by_pid(const TraceRows& rows) {
  std::map<uint32_t, BusySums> out;
  const TidRanges off = tid_ranges(rows.offcpu);
  for (const auto& [begin, end] : tid_runs(rows.calls)) {
    const CallRow& first = rows.calls[begin];
    thread_busy(rows, begin, end, Joins::range(off, first.tid), out[first.pid]);
  }
  return out;
}

}  // namespace

std::string_view regime_name(Regime r) {
  switch (r) {
    case Regime::HostBound:
      return "host_bound";
    case Regime::TransferBound:
      return "transfer_bound";
    case Regime::SyncBound:
      return "sync_bound";
    case Regime::PeerBound:
      return "peer_bound";
    case Regime::GpuBound:
      return "gpu_bound";
  }
  return "?";
}

AuditReport audit(TraceRows rows, const AuditOptions& opt) {
  prepare_rows(rows);
  std::vector<std::pair<uint32_t, ProcessMemory>> memory = audit_memory(rows);
  // Time inside collective calls, per process: waits for peers, not for the process's own work.
  std::map<uint32_t, int64_t> collective_ns;
  for (const CallRow& c : rows.calls)
    if (c.cat == Category::Collective) collective_ns[c.pid] += c.dur;
  const std::map<uint32_t, BusySums> busy = busy_by_pid(rows);
  AuditReport out;
  out.explain = analyze(std::move(rows), opt.thresholds);
  const Report& r = out.explain;
  out.trace = r.trace;
  out.caveats = r.caveats;
  out.caveats.push_back({"per_process",
                         "figures are per process: the trace does not record "
                         "which device a process used, so one GPU per process "
                         "is assumed"});
  out.price_per_gpu_hour = opt.price_per_gpu_hour;
  std::map<uint32_t, Sums> by_pid;
  for (const BudgetReport& b : r.budgets) {
    Sums& s = by_pid[b.process.pid];
    s.process = b.process;
    s.first = std::min(s.first, b.first_ns);
    s.last = std::max(s.last, b.first_ns + b.span_ns);
    s.t.span_ns += b.span_ns;
    s.t.gpu_ns += line_ns(b, Bucket::GpuWait);
    s.t.transfer_ns += line_ns(b, Bucket::Transfer);
    s.t.refill_ns += line_ns(b, Bucket::RefillGap);
  }
  for (auto& [pid, s] : by_pid) {
    ProcessAudit p;
    p.process = s.process;
    p.first_ns = s.first;
    p.last_ns = s.last;
    p.times = s.t;
    // Of the GPU waits: the collectives' own time and the late ranks' share of the syncs after
    // them is waiting for peers; what explain blames on needless syncs is the syncs' own.
    RegimeTimes& t = p.times;
    t.peer_ns = std::min(t.gpu_ns, collective_ns[pid] + chain_lost_ns(r, pid, "nccl_straggler"));
    t.gpu_ns -= t.peer_ns;
    // Syncs: what explain blames on them, or, where the host's refills after syncs and its
    // waits for the GPU alternate, the smaller of the two (neither overlaps the other; without
    // the syncs they would).
    t.sync_ns = std::min(
        t.gpu_ns, std::max(chain_lost_ns(r, pid, "hidden_sync"), std::min(t.refill_ns, t.gpu_ns)));
    t.gpu_ns -= t.sync_ns;
    t.host_ns = std::max<int64_t>(
        0, t.span_ns - t.gpu_ns - t.sync_ns - t.peer_ns - t.transfer_ns - t.refill_ns);
    // Busy, per thread summed (threads of one process may share the GPU: capped at its span).
    const int64_t process_span = s.last - s.first;
    if (auto it = busy.find(pid); it != busy.end()) {
      p.busy.upper_ns = std::min(process_span, it->second.upper);
      p.busy.lower_ns = std::min(p.busy.upper_ns, t.gpu_ns + t.sync_ns);
      p.busy.estimate_ns = std::clamp(it->second.estimate, p.busy.lower_ns, p.busy.upper_ns);
    }
    classify(p);
    const double per_ns = opt.price_per_gpu_hour / kNsPerHour;
    p.cost = per_ns * static_cast<double>(process_span);
    for (const Chain& c : r.chains) {
      if (c.process.pid != pid) continue;
      Lever l = lever_of(c, per_ns);
      p.lost_cost += l.cost;
      p.levers.push_back(std::move(l));
    }
    // By the time each fix returns (for the transfer lever: what pinning and async copies
    // return, not the copies' whole time).
    std::sort(p.levers.begin(), p.levers.end(),
              [](const Lever& a, const Lever& b) { return a.lost_ns > b.lost_ns; });
    for (auto& [mpid, m] : memory)
      if (mpid == pid) p.memory = std::move(m);
    out.processes.push_back(std::move(p));
  }
  std::sort(out.processes.begin(), out.processes.end(),
            [](const ProcessAudit& a, const ProcessAudit& b) {
              const int64_t sa = a.last_ns - a.first_ns, sb = b.last_ns - b.first_ns;
              return sa != sb ? sa > sb : a.process.pid < b.process.pid;
            });
  out.window_cost = opt.price_per_gpu_hour / kNsPerHour *
                    static_cast<double>(r.trace.window.duration()) *
                    static_cast<double>(out.processes.size());
  return out;
}

}  // namespace gpuwhy::analysis
