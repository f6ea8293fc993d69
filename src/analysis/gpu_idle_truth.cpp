// SPDX-License-Identifier: Apache-2.0
#include "analysis/gpu_idle_truth.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "analysis/detectors.hpp"

namespace gpuwhy::analysis {
namespace {

constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
constexpr size_t kMaxBack = 256;

// The process's launches (outermost calls that give the device work), over all its GPU threads:
// the latest one to start before a time, found by a search in each thread's (ts-sorted) calls.
class Launches {
 public:
  Launches(const Context& ctx, uint32_t pid) : ctx_(ctx) {
    for (const ThreadSummary& t : ctx.joins.threads)
      if (t.pid == pid) threads_.push_back(&t);
  }
  struct Hit {
    int64_t ts = kNone, end = kNone;
    uint32_t tid = 0;
  };
  Hit latest_before(int64_t at) const {
    Hit best;
    const auto& calls = ctx_.rows.calls;
    for (const ThreadSummary* t : threads_) {
      const auto b = calls.begin();
      size_t i =
          static_cast<size_t>(std::partition_point(b + static_cast<std::ptrdiff_t>(t->call_begin),
                                                   b + static_cast<std::ptrdiff_t>(t->call_end),
                                                   [&](const CallRow& c) { return c.ts < at; }) -
                              b);
      // Back over the calls that queue nothing (queries, syncs, nested driver calls): a few
      // between two launches; a thread that launches nothing near `at` is given up on.
      for (size_t back = 0; i > t->call_begin && back < kMaxBack; ++back) {
        --i;
        if (!gives_work(i)) continue;
        if (calls[i].ts > best.ts) best = {calls[i].ts, calls[i].end(), t->tid};
        break;
      }
    }
    return best;
  }

 private:
  // An outermost call that hands the device work: a launch or an asynchronous copy or memset
  // (enqueues), and a synchronous copy or memset too (it drains, but its copy is work of its
  // own: a pageable upload's device copy waits on the host's staging).
  bool gives_work(size_t i) const {
    const uint8_t bits = ctx_.joins.bits[i];
    if (!(bits & call_bits::kOuter)) return false;
    return (bits & (call_bits::kEnqueues | call_bits::kCopy)) ||
           ctx_.rows.calls[i].cat == Category::Memset;
  }
  const Context& ctx_;
  std::vector<const ThreadSummary*> threads_;
};

// Classifies the gap [g0, g1) before the work starting at g1: host wait when the latest launch
// before g1 still ran at g0 or began after it. A gap no work ends (the span's last) is host
// wait too: the device had nothing, and the host gave it nothing more. Returns the launching
// thread of a host wait (0 otherwise, or for the last gap).
uint32_t classify(const Launches& l, int64_t g0, int64_t g1, bool last, IdleSplit& into) {
  const int64_t n = g1 - g0;
  if (n <= 0) return 0;
  ++into.gaps;
  if (last) {
    into.host_wait_ns += n;
    return 0;
  }
  const Launches::Hit h = l.latest_before(g1);
  if (h.ts != kNone && h.end > g0) {
    into.host_wait_ns += n;
    return h.tid;
  }
  (n < kKernelWaitNs ? into.kernel_wait_ns : into.other_ns) += n;
  return 0;
}

// The idle split of the gaps of merged `busy` inside [lo, hi).
IdleSplit split_gaps(const Launches& l, const std::vector<Interval>& busy, int64_t lo, int64_t hi,
                     std::map<uint32_t, int64_t>* host_wait_by_tid = nullptr) {
  IdleSplit out;
  const int64_t last_work = busy.empty() ? lo : busy.back().second;
  for (const auto& [s, e] : gaps_of(busy, lo, hi)) {
    const int64_t before = out.host_wait_ns;
    const uint32_t tid = classify(l, s, e, s >= last_work, out);
    if (host_wait_by_tid && tid) (*host_wait_by_tid)[tid] += out.host_wait_ns - before;
  }
  return out;
}

std::vector<StreamIdle> streams_of(const Context& ctx, const Launches& l, uint32_t pid, int device,
                                   int64_t lo, int64_t hi) {
  std::map<int64_t, std::vector<Interval>> by_stream;
  const auto [b, e] = device_rows(ctx.rows, pid);
  for (size_t i = b; i < e; ++i) {
    const DeviceActivityRow& r = ctx.rows.device_activity[i];
    if (r.device != device) continue;
    const int64_t s = std::max(r.ts, lo), t = std::min(r.end(), hi);
    if (t > s) by_stream[r.stream].emplace_back(s, t);
  }
  std::vector<StreamIdle> out;
  for (auto& [stream, iv] : by_stream) {
    merge_intervals(iv);
    if (iv.empty()) continue;
    StreamIdle si;
    si.device = device;
    si.stream = stream;
    si.first_ns = ctx.rel(iv.front().first);
    si.last_ns = ctx.rel(iv.back().second);
    si.busy_ns = covered_ns(iv, lo, hi);
    std::map<uint32_t, int64_t> waited_on;
    si.idle = split_gaps(l, iv, iv.front().first, iv.back().second, &waited_on);
    uint32_t tid = 0;
    int64_t most = 0;
    for (const auto& [t, ns] : waited_on)
      if (ns > most) most = ns, tid = t;
    if (!tid) tid = l.latest_before(iv.front().first + 1).tid;
    if (tid) si.thread = ctx.thread(pid, tid);
    out.push_back(std::move(si));
  }
  std::stable_sort(out.begin(), out.end(), [](const StreamIdle& a, const StreamIdle& c) {
    return a.idle.total() > c.idle.total();
  });
  return out;
}

DeviceTime device_time(const Context& ctx, const Launches& l, uint32_t pid, int device, int64_t lo,
                       int64_t hi) {
  DeviceTime d;
  d.device = device;
  std::vector<Interval> all, kernels;
  const auto [b, e] = device_rows(ctx.rows, pid);
  for (size_t i = b; i < e; ++i) {
    const DeviceActivityRow& r = ctx.rows.device_activity[i];
    if (r.device != device) continue;
    all.emplace_back(r.ts, r.end());
    if (r.kind == DeviceWork::Kernel) kernels.emplace_back(r.ts, r.end());
  }
  merge_intervals(all);
  merge_intervals(kernels);
  d.busy_ns = covered_ns(all, lo, hi);
  d.kernel_ns = covered_ns(kernels, lo, hi);
  d.copy_stall_ns = d.busy_ns - d.kernel_ns;  // kernels are inside the union of all work
  d.idle = split_gaps(l, all, lo, hi);
  d.streams = streams_of(ctx, l, pid, device, lo, hi);
  return d;
}

void add_stream(std::vector<StreamIdle>& into, const StreamIdle& s) {
  auto it = std::find_if(into.begin(), into.end(), [&](const StreamIdle& x) {
    return x.device == s.device && x.stream == s.stream;
  });
  if (it == into.end()) {
    into.push_back(s);
    return;
  }
  // The thread named is the one of the part that waited on the host longest.
  if (s.idle.host_wait_ns > it->idle.host_wait_ns || it->thread.tid == 0) it->thread = s.thread;
  it->first_ns = std::min(it->first_ns, s.first_ns);
  it->last_ns = std::max(it->last_ns, s.last_ns);
  it->busy_ns += s.busy_ns;
  it->idle.add(s.idle);
}

}  // namespace

void IdleSplit::add(const IdleSplit& o) {
  host_wait_ns += o.host_wait_ns;
  kernel_wait_ns += o.kernel_wait_ns;
  other_ns += o.other_ns;
  gaps += o.gaps;
}

double DeviceTime::compute_stall_ratio() const {
  const int64_t stall = copy_stall_ns + idle.host_wait_ns;
  return stall > 0 ? static_cast<double>(kernel_ns) / static_cast<double>(stall) : -1.0;
}

GpuTimeReport gpu_time_report(const Context& ctx) {
  GpuTimeReport r;
  // Per process, its longest GPU thread: the span every figure of the process is over.
  std::map<uint32_t, size_t> longest;
  for (size_t k = 0; k < ctx.joins.threads.size(); ++k) {
    const ThreadSummary& t = ctx.joins.threads[k];
    auto [it, fresh] = longest.try_emplace(t.pid, k);
    if (!fresh && t.span_ns() > ctx.joins.threads[it->second].span_ns()) it->second = k;
  }
  size_t measured = 0;
  for (const auto& [pid, k] : longest) {
    const ThreadSummary& t = ctx.joins.threads[k];
    const ThreadBudget& b = ctx.budgets[k];
    ProcessGpuTime p;
    p.process = ctx.process(pid);
    p.thread = ctx.thread(pid, t.tid);
    p.span_ns = t.span_ns();
    p.host_busy_ns = std::max<int64_t>(0, p.span_ns - b.host_idle_ns);
    p.busy_ns = p.host_busy_ns;
    if (b.idle_measured) {
      ++measured;
      p.measured = true;
      p.busy_ns =
          covered_ns(device_busy(ctx.rows, pid, t.first_ns, t.last_ns), t.first_ns, t.last_ns);
      const Launches l(ctx, pid);
      std::vector<int> devices;
      const auto [rb, re] = device_rows(ctx.rows, pid);
      for (size_t i = rb; i < re; ++i) devices.push_back(ctx.rows.device_activity[i].device);
      std::sort(devices.begin(), devices.end());
      devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
      for (int d : devices) p.devices.push_back(device_time(ctx, l, pid, d, t.first_ns, t.last_ns));
    }
    r.processes.push_back(std::move(p));
  }
  r.source = measured == 0 ? "host" : measured == r.processes.size() ? "device" : "mixed";
  return r;
}

GpuTimeReport merge_gpu_time(const std::vector<const GpuTimeReport*>& parts) {
  GpuTimeReport r;
  std::map<uint32_t, ProcessGpuTime> by_pid;
  for (const GpuTimeReport* part : parts) {
    for (const ProcessGpuTime& p : part->processes) {
      auto [it, fresh] = by_pid.try_emplace(p.process.pid, p);
      if (fresh) continue;
      ProcessGpuTime& m = it->second;
      m.span_ns += p.span_ns;
      m.busy_ns += p.busy_ns;
      m.host_busy_ns += p.host_busy_ns;
      m.measured = m.measured || p.measured;
      for (const DeviceTime& d : p.devices) {
        auto dt = std::find_if(m.devices.begin(), m.devices.end(),
                               [&](const DeviceTime& x) { return x.device == d.device; });
        if (dt == m.devices.end()) {
          m.devices.push_back(d);
          continue;
        }
        dt->busy_ns += d.busy_ns;
        dt->kernel_ns += d.kernel_ns;
        dt->copy_stall_ns += d.copy_stall_ns;
        dt->idle.add(d.idle);
        for (const StreamIdle& s : d.streams) add_stream(dt->streams, s);
      }
    }
  }
  size_t measured = 0;
  for (auto& [pid, p] : by_pid) {
    std::sort(p.devices.begin(), p.devices.end(),
              [](const DeviceTime& a, const DeviceTime& c) { return a.device < c.device; });
    for (DeviceTime& d : p.devices)
      std::stable_sort(
          d.streams.begin(), d.streams.end(),
          [](const StreamIdle& a, const StreamIdle& c) { return a.idle.total() > c.idle.total(); });
    measured += p.measured ? 1 : 0;
    r.processes.push_back(std::move(p));
  }
  r.source = measured == 0 ? "host" : measured == r.processes.size() ? "device" : "mixed";
  return r;
}

}  // namespace gpuwhy::analysis
