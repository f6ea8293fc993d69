// SPDX-License-Identifier: Apache-2.0
// The time half of the audit: each GPU process's regime from its threads' time budgets, the
// GPU's busy time bounded from the host side, explain's fixes as levers, and their cost.
#include "analysis/audit.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "analysis/devices.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

constexpr double kNsPerHour = 3.6e12;
// Sync-bound: the syncs cost at least this share of the span.
constexpr double kSyncShare = 0.25;

// A process's GPU: (pid, device ordinal).
using DevKey = std::pair<uint32_t, int>;

// What the budgets of a set of GPU threads say, summed.
struct Sums {
  RegimeTimes t;
  int64_t first = INT64_MAX, last = INT64_MIN;
  Task process;
  std::vector<uint32_t> tids;
  void add(const BudgetReport& b);
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

void Sums::add(const BudgetReport& b) {
  process = b.process;
  tids.push_back(b.thread.tid);
  first = std::min(first, b.first_ns);
  last = std::max(last, b.first_ns + b.span_ns);
  const int64_t delegated = line_ns(b, Bucket::Delegated);
  t.span_ns += b.span_ns - delegated;
  t.delegated_ns += delegated;
  t.gpu_ns += line_ns(b, Bucket::GpuWait);
  t.transfer_ns += line_ns(b, Bucket::Transfer);
  t.refill_ns += line_ns(b, Bucket::RefillGap);
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
  int64_t fed = 0;  // the episodes whose drain waited
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

// The first of `tid`'s off-CPU rows at [first, last) that ends after `from` (they are sorted
// and do not overlap, so their ends ascend too).
size_t first_offcpu_after(const TraceRows& rows, std::pair<size_t, size_t> off, int64_t from) {
  const auto b = rows.offcpu.begin();
  return static_cast<size_t>(
      std::partition_point(b + static_cast<std::ptrdiff_t>(off.first),
                           b + static_cast<std::ptrdiff_t>(off.second),
                           [&](const OffCpuRow& o) { return o.end() <= from; }) -
      b);
}

// One thread's episodes, per device: work queued on a device is drained by a drain made on that
// device (the thread's current one), not by a sync after the thread moved to another.
void thread_busy(const TraceRows& rows, const DeviceMap& devices, size_t begin, size_t end,
                 std::pair<size_t, size_t> off, std::map<DevKey, BusySums>& out) {
  std::map<int, int64_t> start;  // per device: the first work queued since its last drain
  int64_t outer_end = INT64_MIN;
  const uint32_t pid = rows.calls[begin].pid, tid = rows.calls[begin].tid;
  for (size_t i = begin; i < end; ++i) {
    const CallRow& c = rows.calls[i];
    if (c.end() <= outer_end) continue;  // inside an earlier call (a runtime call's driver call)
    outer_end = c.end();
    const ApiMeta& m = rows.api(c.api);
    const int dev = devices.device_of(tid, c.ts);
    auto open = start.find(dev);
    if (open == start.end() && enqueues_work(m)) open = start.emplace(dev, c.ts).first;
    if (!drains_queue(m)) continue;
    // A synchronous copy or memset is GPU work of its own (the copy engine) even with nothing
    // queued before it; its time is not a certain wait, though (a pageable copy stages on the
    // CPU first), so only a wait behind queued work counts towards the lower bound.
    const bool own_work = c.cat == Category::Copy || c.cat == Category::Memset;
    if (open == start.end() && !own_work) continue;  // a sync with nothing queued
    const int64_t from = open != start.end() ? open->second : c.ts;
    size_t k = first_offcpu_after(rows, off, from);
    const int64_t episode = c.end() - from - runnable_ns(rows, k, off.second, from, c.end());
    const bool waited = c.dur >= kBlockedMinNs &&
                        static_cast<double>(c.dur) >= kBlockedShare * static_cast<double>(episode);
    BusySums& b = out[{pid, dev}];
    b.upper += episode;
    // Waited: fed the whole episode. Returned at once: it finished somewhere in the episode,
    // and the middle is the estimate whose error (half the episode) is smallest.
    b.estimate += waited ? episode : episode / 2;
    if (waited) b.fed += episode;
    if (open != start.end()) start.erase(open);
  }
  for (const auto& [dev, from] : start)  // queued at the end
    out[{pid, dev}].upper += rows.calls[end - 1].end() - from;
}

std::map<DevKey, BusySums> busy_by_device(const TraceRows& rows, const DeviceMap& devices) {
  std::map<DevKey, BusySums> out;
  const TidRanges off = tid_ranges(rows.offcpu);
  for (const auto& [begin, end] : tid_runs(rows.calls)) {
    const CallRow& first = rows.calls[begin];
    thread_busy(rows, devices, begin, end, Joins::range(off, first.tid), out);
  }
  return out;
}

// Per process, its threads' ioctls on the driver's files, and how much of each lies inside a
// probed API call of the same thread: one sweep per thread over both, in time order, with the
// latest end of the calls begun so far (nested calls included).
std::map<uint32_t, DriverIoctls> driver_by_pid(const TraceRows& rows) {
  std::map<uint32_t, DriverIoctls> out;
  const TidRanges calls = tid_ranges(rows.calls);
  for (const auto& [begin, end] : tid_runs(rows.driver_ioctls)) {
    const SyscallRow& first = rows.driver_ioctls[begin];
    DriverIoctls& d = out[first.pid];
    ++d.threads;
    const auto [cb, ce] = Joins::range(calls, first.tid);
    size_t c = cb;
    int64_t covered_to = INT64_MIN;
    for (size_t i = begin; i < end; ++i) {
      const SyscallRow& s = rows.driver_ioctls[i];
      for (; c < ce && rows.calls[c].ts <= s.ts; ++c)
        covered_to = std::max(covered_to, rows.calls[c].end());
      ++d.count;
      d.ns += s.dur;
      if (covered_to > s.ts) d.inside_calls_ns += std::min(covered_to - s.ts, s.dur);
    }
  }
  return out;
}

// Where each GPU thread counts its time budget: the device it spent most of its calls' time on.
struct ThreadDevices {
  std::map<uint32_t, int> device;    // tid -> device
  std::map<uint32_t, size_t> moved;  // pid -> threads that used more than one device
};
ThreadDevices thread_devices(const TraceRows& rows, const DeviceMap& devices) {
  ThreadDevices out;
  for (const auto& [begin, end] : tid_runs(rows.calls)) {
    if (!devices.any_selection()) {  // every thread on device 0: no pass over its calls
      out.device[rows.calls[begin].tid] = 0;
      continue;
    }
    std::map<int, int64_t> ns;
    for (size_t i = begin; i < end; ++i) {
      const CallRow& c = rows.calls[i];
      // A selection itself is made on the device it leaves: not a use of it.
      if (c.cat != Category::Device)
        ns[devices.device_of(c.tid, c.ts)] += std::max<int64_t>(1, c.dur);
    }
    if (ns.empty()) ns[devices.device_of(rows.calls[begin].tid, rows.calls[end - 1].end())] = 1;
    const auto top = std::max_element(
        ns.begin(), ns.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    out.device[rows.calls[begin].tid] = top->first;
    if (ns.size() > 1) ++out.moved[rows.calls[begin].pid];
  }
  return out;
}

// The memory pass per device. audit_memory groups by pid, so it is handed the calls with each
// pid replaced by the index of its (pid, device) pair in `keys`: an allocation goes to the
// device current when it was made, a free to its allocation's device (cudaFree works from any
// device), a copy or memset to the device current when it was issued. Of the other calls it
// needs only each pair's first start and last end (its window), so two stand-ins each suffice.
std::map<DevKey, ProcessMemory> memory_by_device(TraceRows& rows, const DeviceMap& devices) {
  std::vector<DevKey> keys;
  std::map<DevKey, uint32_t> index;
  auto key_of = [&](uint32_t pid, int dev) {
    const auto [it, fresh] = index.emplace(DevKey{pid, dev}, static_cast<uint32_t>(keys.size()));
    if (fresh) keys.emplace_back(pid, dev);
    return it->second;
  };
  CallRows calls, memory;
  std::map<uint32_t, std::pair<CallRow, CallRow>> span;  // key -> (first start, last end)
  for (const CallRow& c : rows.calls) {
    if (c.cat == Category::Device) continue;
    const uint32_t k = key_of(c.pid, devices.device_of(c.tid, c.ts));
    CallRow x = c;
    x.pid = k;
    if (c.cat == Category::Copy || c.cat == Category::Memset) calls.push_back(x);
    CallRow mark = x;
    mark.cat = kUnknownCategory;
    mark.ext = kNoExt;
    auto [it, fresh] = span.try_emplace(k, mark, mark);
    if (c.ts < it->second.first.ts) it->second.first = mark;
    if (c.end() > it->second.second.end()) it->second.second = mark;
  }
  for (const auto& [k, marks] : span) {
    calls.push_back(marks.first);
    calls.push_back(marks.second);
  }
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> live;  // (pid, address) -> key
  for (const CallRow& c : rows.memory_calls) {
    if (c.cat != Category::Alloc && c.cat != Category::Free) continue;
    const CallExt& e = rows.ext(c);
    uint32_t k = key_of(c.pid, devices.device_of(c.tid, c.ts));
    if (c.cat == Category::Alloc && e.ret == 0) {
      live[{c.pid, e.addr}] = k;
    } else if (auto it = live.find({c.pid, e.addr}); it != live.end()) {
      k = it->second;
      live.erase(it);
    }
    CallRow x = c;
    x.pid = k;
    memory.push_back(x);
  }
  std::swap(rows.calls, calls);
  std::swap(rows.memory_calls, memory);
  auto per_key = audit_memory(rows);
  std::swap(rows.calls, calls);
  std::swap(rows.memory_calls, memory);
  std::map<DevKey, ProcessMemory> out;
  for (auto& [k, m] : per_key) out[keys[k]] = std::move(m);
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

namespace {

void classify(AuditFigures& p) {
  const RegimeTimes& t = p.times;
  const double span = static_cast<double>(std::max<int64_t>(1, t.span_ns));
  auto pct = [&](int64_t ns) { return fmt_percent(static_cast<double>(ns) / span); };
  std::string split = "GPU wait " + pct(t.gpu_ns) + ", syncs " + pct(t.sync_ns) + ", transfers " +
                      pct(t.transfer_ns) + ", peers " + pct(t.peer_ns) + ", host " +
                      pct(t.host_ns + t.refill_ns) + " of " + fmt_duration(t.span_ns);
  if (t.delegated_ns > 0)
    split += " (waits while a sibling GPU thread dispatched, " + fmt_duration(t.delegated_ns) +
             ", left out)";
  // Host work only costs while it leaves the GPU idle: the GPU's fed time (episodes whose drain
  // found it still busy, or its measured busy time) caps what the host can have cost at the rest
  // of the span, and counts for the GPU beside the host's own waits for it. A host that is busy
  // while its GPU is fed is ahead of the GPU, not holding it back.
  const int64_t gpu_span = p.gpu_span_ns > 0 ? p.gpu_span_ns : t.span_ns;
  const int64_t fed = std::min(p.busy.fed_ns, gpu_span);
  const int64_t host = t.host_ns + t.refill_ns;
  const int64_t host_cost = fed > 0 ? std::min(host, gpu_span - fed) : host;
  const int64_t gpu_cost = std::max(t.gpu_ns, fed - t.sync_ns - t.transfer_ns - t.peer_ns);
  if (host_cost < host)
    split += "; the GPU was fed for " + fmt_duration(fed) + " (" +
             fmt_percent(static_cast<double>(fed) /
                         static_cast<double>(std::max<int64_t>(1, gpu_span))) +
             (p.busy.fed_measured ? ", measured on the device" : ", its drains waited") +
             "), so host work left it idle for at most " + fmt_duration(host_cost);
  // Syncs first: time they cost comes back by taking them out, without faster code or
  // hardware. Otherwise the largest share decides: each is time one kind of change returns.
  const std::pair<Regime, int64_t> by_time[] = {{Regime::GpuBound, gpu_cost},
                                                {Regime::TransferBound, t.transfer_ns},
                                                {Regime::PeerBound, t.peer_ns},
                                                {Regime::HostBound, host_cost}};
  const auto top = *std::max_element(std::begin(by_time), std::end(by_time),
                                     [](auto& a, auto& b) { return a.second < b.second; });
  p.regime = static_cast<double>(t.sync_ns) >= kSyncShare * span ? Regime::SyncBound : top.first;
  switch (p.regime) {
    case Regime::GpuBound:
      p.evidence =
          "the GPU had work most of the time (the host waited for it or ran ahead): " + split;
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

// The lost time of the chains of one kind among `chains`.
int64_t lost_ns(const std::vector<const Chain*>& chains, std::string_view kind) {
  int64_t ns = 0;
  for (const Chain* c : chains)
    if (c->kind == kind) ns += c->lost_ns;
  return ns;
}

// The figures of a set of GPU threads (a process's, or one device's) from their summed budgets,
// their collectives' time, their busy episodes and the chains that name them.
void fill_figures(AuditFigures& p, const Sums& s, int64_t collective_ns, const BusySums* busy,
                  const std::vector<const Chain*>& chains, double price_per_gpu_hour) {
  p.first_ns = s.first;
  p.last_ns = s.last;
  p.times = s.t;
  // Of the GPU waits: the collectives' own time and the late ranks' share of the syncs after
  // them is waiting for peers; what explain blames on needless syncs is the syncs' own.
  RegimeTimes& t = p.times;
  t.peer_ns = std::min(t.gpu_ns, collective_ns + lost_ns(chains, "nccl_straggler"));
  t.gpu_ns -= t.peer_ns;
  // Syncs: what explain blames on them, or, where the host's refills after syncs and its
  // waits for the GPU alternate, the smaller of the two (neither overlaps the other; without
  // the syncs they would).
  t.sync_ns =
      std::min(t.gpu_ns, std::max(lost_ns(chains, "hidden_sync"), std::min(t.refill_ns, t.gpu_ns)));
  t.gpu_ns -= t.sync_ns;
  t.host_ns = std::max<int64_t>(
      0, t.span_ns - t.gpu_ns - t.sync_ns - t.peer_ns - t.transfer_ns - t.refill_ns);
  // Busy, per thread summed (threads on one GPU may overlap: capped at their span).
  const int64_t span = s.last - s.first;
  p.gpu_span_ns = span;
  if (busy != nullptr) {
    p.busy.upper_ns = std::min(span, busy->upper);
    p.busy.lower_ns = std::min(p.busy.upper_ns, t.gpu_ns + t.sync_ns);
    p.busy.estimate_ns = std::clamp(busy->estimate, p.busy.lower_ns, p.busy.upper_ns);
    p.busy.fed_ns = std::min(p.busy.upper_ns, busy->fed);
  }
  classify(p);
  const double per_ns = price_per_gpu_hour / kNsPerHour;
  p.cost = per_ns * static_cast<double>(span);
  for (const Chain* c : chains) {
    Lever l = lever_of(*c, per_ns);
    p.lost_cost += l.cost;
    p.levers.push_back(std::move(l));
  }
  // By the time each fix returns (for the transfer lever: what pinning and async copies
  // return, not the copies' whole time).
  std::sort(p.levers.begin(), p.levers.end(),
            [](const Lever& a, const Lever& b) { return a.lost_ns > b.lost_ns; });
}

// How the regime reads beside explain's causes for the same threads (chains in explain's rank
// order): its top cause, and where the two could seem to disagree, why they do not.
std::string agreement_of(const AuditFigures& p, const std::vector<const Chain*>& chains) {
  const double span = static_cast<double>(std::max<int64_t>(1, p.times.span_ns));
  int64_t named = 0;
  for (const Chain* c : chains) named += c->lost_ns;
  const int64_t host = p.times.host_ns + p.times.refill_ns;
  if (chains.empty())
    return p.regime == Regime::HostBound
               ? "explain names no single cause for it: the host time is spread over its own "
                 "code, its launches and short stalls (explain's time budget shows where)"
               : "explain names no cause for it";
  const Chain& top = *chains.front();
  std::string s = "explain's top cause for it: " + top.title + ", " + fmt_duration(top.lost_ns) +
                  " (" + fmt_percent(static_cast<double>(top.lost_ns) / span) + ")";
  if (p.regime == Regime::GpuBound)
    s += "; with the GPU the limit, host-side fixes return at most what explain names";
  else if (p.regime == Regime::HostBound && 4 * named < host)
    s += "; its causes together return " + fmt_duration(named) + " of the host's " +
         fmt_duration(host) + ": the rest is spread over its own code and launches";
  return s;
}

}  // namespace

AuditReport audit(TraceRows rows, const AuditOptions& opt) {
  prepare_rows(rows);
  std::vector<std::pair<uint32_t, ProcessMemory>> memory = audit_memory(rows);
  const DeviceMap devices(rows);
  const ThreadDevices on = thread_devices(rows, devices);
  // Per process, the devices its calls went to; with more than one, memory per device too.
  std::map<uint32_t, std::set<int>> used;
  // Time inside collective calls, per device: waits for peers, not for its own work.
  std::map<DevKey, int64_t> collective_ns;
  DevKey last{0, -1};  // a thread's calls are together: look up only where the pair changes
  for (const CallRow& c : rows.calls) {
    if (c.cat == Category::Device) continue;  // made on the device it leaves: not a use of it
    const int dev = devices.device_of(c.tid, c.ts);
    if (DevKey{c.pid, dev} != last) {
      last = {c.pid, dev};
      used[c.pid].insert(dev);
    }
    if (c.cat == Category::Collective) collective_ns[{c.pid, dev}] += c.dur;
  }
  const bool several =
      std::any_of(used.begin(), used.end(), [](const auto& u) { return u.second.size() > 1; });
  std::map<DevKey, ProcessMemory> device_memory;
  if (several) device_memory = memory_by_device(rows, devices);
  const std::map<DevKey, BusySums> busy = busy_by_device(rows, devices);
  const std::map<uint32_t, DriverIoctls> driver = driver_by_pid(rows);
  AuditReport out;
  out.explain = analyze(std::move(rows), opt.thresholds);
  const Report& r = out.explain;
  out.trace = r.trace;
  out.caveats = r.caveats;
  if (!devices.any_selection()) {
    out.caveats.push_back({"device_default",
                           "no thread selected a device (cudaSetDevice, hipSetDevice): every "
                           "call counts on device 0, the runtime's default (a process that "
                           "makes contexts current through the driver API, cuCtxSetCurrent, is "
                           "not followed)"});
  }
  out.price_per_gpu_hour = opt.price_per_gpu_hour;
  std::map<uint32_t, Sums> by_pid;
  std::map<DevKey, Sums> by_device;
  for (const BudgetReport& b : r.budgets) {
    by_pid[b.process.pid].add(b);
    const auto it = on.device.find(b.thread.tid);
    by_device[{b.process.pid, it == on.device.end() ? 0 : it->second}].add(b);
  }
  double gpus = 0;
  for (auto& [pid, s] : by_pid) {
    ProcessAudit p;
    p.process = s.process;
    std::vector<const Chain*> chains;
    for (const Chain& c : r.chains)
      if (c.process.pid == pid) chains.push_back(&c);
    std::map<int, std::vector<const Chain*>> device_chains;
    int64_t collectives = 0;
    BusySums busy_sum;
    bool any_busy = false;
    for (auto& [key, ds] : by_device) {
      if (key.first != pid) continue;
      DeviceAudit d;
      d.device = key.second;
      d.tids = ds.tids;
      std::sort(d.tids.begin(), d.tids.end());
      // A chain counts on the device of the thread it names; one that names no thread only
      // where the process has a single device.
      std::vector<const Chain*> mine;
      for (const Chain* c : chains) {
        const auto t = on.device.find(c->thread.tid);
        const bool here = t != on.device.end() ? t->second == d.device
                                               : std::count_if(by_device.begin(), by_device.end(),
                                                               [&, owner = pid](const auto& x) {
                                                                 return x.first.first == owner;
                                                               }) == 1;
        if (here) mine.push_back(c);
      }
      const auto b = busy.find(key);
      fill_figures(d, ds, collective_ns[key], b == busy.end() ? nullptr : &b->second, mine,
                   opt.price_per_gpu_hour);
      d.agreement = agreement_of(d, mine);
      if (b != busy.end()) {
        busy_sum.upper += d.busy.upper_ns;
        busy_sum.estimate += d.busy.estimate_ns;
        busy_sum.fed += d.busy.fed_ns;
        any_busy = true;
      }
      collectives += collective_ns[key];
      if (auto m = device_memory.find(key); m != device_memory.end())
        d.memory = std::move(m->second);
      p.devices.push_back(std::move(d));
    }
    // The process: its threads together, its busy time the sum of its devices' (each capped at
    // its own span, so two GPUs busy at once count twice).
    fill_figures(p, s, collectives, any_busy ? &busy_sum : nullptr, chains, opt.price_per_gpu_hour);
    if (p.devices.size() > 1) {
      // Bounds summed over the devices, not capped at the process's one span.
      p.busy = {};
      p.gpu_span_ns = 0;
      for (const DeviceAudit& d : p.devices) {
        p.gpu_span_ns += d.gpu_span_ns;
        p.busy.lower_ns += d.busy.lower_ns;
        p.busy.upper_ns += d.busy.upper_ns;
        p.busy.estimate_ns += d.busy.estimate_ns;
        p.busy.fed_ns += d.busy.fed_ns;
      }
      classify(p);  // against the devices' summed fed time and spans
    }
    p.agreement = agreement_of(p, chains);
    for (auto& [mpid, m] : memory)
      if (mpid == pid) p.memory = std::move(m);
    if (p.devices.size() == 1) p.devices[0].memory = p.memory;
    // Cost: every GPU it held, each for its own span.
    p.cost = 0;
    for (const DeviceAudit& d : p.devices) p.cost += d.cost;
    if (auto m = on.moved.find(pid); m != on.moved.end()) p.moved_threads = m->second;
    if (auto dr = driver.find(pid); dr != driver.end()) p.driver = dr->second;
    gpus += static_cast<double>(std::max<size_t>(1, p.devices.size()));
    out.processes.push_back(std::move(p));
  }
  std::sort(out.processes.begin(), out.processes.end(),
            [](const ProcessAudit& a, const ProcessAudit& b) {
              const int64_t sa = a.last_ns - a.first_ns, sb = b.last_ns - b.first_ns;
              return sa != sb ? sa > sb : a.process.pid < b.process.pid;
            });
  out.window_cost =
      opt.price_per_gpu_hour / kNsPerHour * static_cast<double>(r.trace.window.duration()) * gpus;
  return out;
}

void reclassify(const AuditReport& r, ProcessAudit& p) {
  std::vector<const Chain*> chains;
  for (const Chain& c : r.explain.chains)
    if (c.process.pid == p.process.pid) chains.push_back(&c);
  for (DeviceAudit& d : p.devices) {
    std::vector<const Chain*> mine;
    for (const Chain* c : chains)
      if (p.devices.size() == 1 ||
          std::find(d.tids.begin(), d.tids.end(), c->thread.tid) != d.tids.end())
        mine.push_back(c);
    classify(d);
    d.agreement = agreement_of(d, mine);
  }
  classify(p);
  p.agreement = agreement_of(p, chains);
}

}  // namespace gpuwhy::analysis
