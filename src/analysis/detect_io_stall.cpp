// SPDX-License-Identifier: Apache-2.0
// I/O stalls: a thread that issues GPU work spends time in slow file/pipe/socket syscalls (sleeps
// of 1 ms or more the scheduler saw in one, or with `trace --with syscalls` the syscalls over a
// threshold) and waits for the disk, or for the process at the other end of a pipe or socket.
// While it reads a batch or writes a checkpoint, nothing is launched.
#include <algorithm>
#include <map>

#include "analysis/culprit_states.hpp"
#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

struct Io {
  const ThreadSummary* t = nullptr;
  int64_t ns = 0;
  uint64_t calls = 0;
  std::map<uint32_t, std::pair<uint64_t, int64_t>> by_nr;  // nr -> (calls, ns)
  int64_t longest = 0, longest_at = 0, first = -1, last = -1;
  uint32_t longest_nr = 0;
  std::vector<std::pair<int64_t, int64_t>> spans;  // the I/O syscalls, in time order
  std::vector<int32_t> sample_stacks;  // stack ids of the CPU samples inside I/O syscalls
};

// A waker that is a program rather than the kernel's own I/O completion.
bool is_user_task(const Context& ctx, const Culprit& c) {
  const std::string_view comm = ctx.rows.string(c.comm);
  return !comm.empty() && !is_kernel_task(comm);
}

// The thread's CPU samples inside I/O syscalls: their stacks (where the I/O was issued, with
// --stacks) and, without the syscall family, the time of those no syscall row holds (one alone:
// prepare_rows does not place it, see derive_syscalls), which still stands for a sampling
// period spent in that syscall on the CPU: counted in the totals, never placed in time.
void add_io_samples(const Context& ctx, const ThreadSummary& t, Io& io) {
  const bool count_lone = ctx.rows.syscalls_from_scheduler();
  auto [b, e] = Joins::range(ctx.joins.cpu_samples, t.tid);
  size_t row = 0;  // io.spans is in time order, as are the samples
  for (size_t k = b; k < e; ++k) {
    const CpuSampleRow& s = ctx.rows.cpu_samples[k];
    if (s.ts < t.first_ns || s.ts >= t.last_ns || s.syscall < 0) continue;
    const auto nr = static_cast<uint32_t>(s.syscall);
    if (!is_io_syscall(ctx.rows, nr)) continue;
    io.sample_stacks.push_back(s.stack_id);
    if (!count_lone) continue;
    while (row < io.spans.size() && io.spans[row].second <= s.ts) ++row;
    if (row < io.spans.size() && io.spans[row].first <= s.ts) continue;  // in a row already
    io.ns += s.dur;
    ++io.calls;
    auto& [n, total] = io.by_nr[nr];
    ++n;
    total += s.dur;
  }
}

Io collect_io(const Context& ctx, const ThreadSummary& t) {
  Io io;
  io.t = &t;
  auto [b, e] = Joins::range(ctx.joins.syscalls, t.tid);
  for (size_t k = b; k < e; ++k) {
    const SyscallRow& s = ctx.rows.syscalls[k];
    if (!is_io_syscall(ctx.rows, s.nr)) continue;
    const int64_t ns = overlap_ns(s.ts, s.end(), t.first_ns, t.last_ns);
    if (ns <= 0) continue;
    io.ns += ns;
    ++io.calls;
    io.spans.emplace_back(s.ts, s.end());
    auto& [n, total] = io.by_nr[s.nr];
    ++n;
    total += ns;
    if (io.first < 0) io.first = s.ts;
    io.last = s.end();
    if (ns > io.longest) {
      io.longest = ns;
      io.longest_at = s.ts;
      io.longest_nr = s.nr;
    }
  }
  add_io_samples(ctx, t, io);
  return io;
}

// The thread's time in its budget's Io and Handoff buckets (file and device I/O; waiting for
// data a producer hands over through a pipe, socket or queue), by syscall, most first.
std::vector<std::pair<uint32_t, int64_t>> io_by_syscall(const ThreadBudget& b) {
  std::map<uint32_t, int64_t> m;
  for (Bucket bk : {Bucket::Io, Bucket::Handoff})
    for (const auto& [nr, ns] : b.by_syscall[static_cast<size_t>(bk)]) m[nr] += ns;
  std::vector<std::pair<uint32_t, int64_t>> v(m.begin(), m.end());
  std::sort(v.begin(), v.end(), [](auto& a, auto& b2) {
    return a.second != b2.second ? a.second > b2.second : a.first < b2.first;
  });
  return v;
}

// The thread's sleeps that `waker_tid` ended ([sleep, wake-up): the time it waited for that
// task), in time order.
std::vector<std::pair<int64_t, int64_t>> waits_woken_by(const Context& ctx, const ThreadSummary& t,
                                                        uint32_t waker_tid) {
  std::vector<std::pair<int64_t, int64_t>> v;
  auto [b, e] = Joins::range(ctx.joins.offcpu, t.tid);
  for (size_t k = b; k < e; ++k) {
    const OffCpuRow& o = ctx.rows.offcpu[k];
    if (o.preempted || o.other_tid != waker_tid) continue;
    const int64_t s = std::max(o.ts, t.first_ns), w = std::min(o.end() - o.runq, t.last_ns);
    if (w > s) v.emplace_back(s, w);
  }
  return v;
}

// The fix follows from why the producer was late: a quota to raise, CPUs to give it, what it
// waits for itself, or (on the CPU) its own code to make faster or to run more of.
std::string producer_fix(const Context& ctx, Task& producer, const CulpritStates& why) {
  using State = CulpritStates::State;
  const std::string who = producer.label();
  const double share = why.wait_ns > 0 ? static_cast<double>(why.ns(why.dominant())) /
                                             static_cast<double>(why.wait_ns)
                                       : 0;
  const bool decides = why.recorded && share >= ctx.th.dominant * 0.5;
  if (decides && why.dominant() == State::Throttled) {
    std::string limit = "its cgroup's CPU limit";
    if (auto l = ctx.rows.cpu_limits.find(producer.pid); l != ctx.rows.cpu_limits.end()) {
      producer.cgroup = l->second.cgroup;
      limit = "the CPU limit of " + quota_text(l->second);
    }
    return "the dispatch thread waits for " + who + ", and " + who +
           " is throttled by its cgroup's CPU quota for " + fmt_percent(share) +
           " of that wait: raise " + limit +
           " (Kubernetes resources.limits.cpu, docker --cpus, systemd CPUQuota=, cgroup cpu.max) "
           "or run the producer outside the limited group; faster producer code helps only as "
           "far as the quota allows";
  }
  if (decides && why.dominant() == State::Runnable)
    return "the dispatch thread waits for " + who + ", and " + who + " waits for a CPU for " +
           fmt_percent(share) +
           " of that wait: give the producer CPUs of its own (fewer co-located jobs or threads, "
           "a cpuset, a higher priority than the tasks that run instead)";
  if (decides && why.dominant() == State::Asleep)
    return "the dispatch thread waits for " + who + ", and " + who + " is itself asleep" +
           (why.asleep_in.empty() ? std::string()
                                  : " in " + ctx.rows.syscall_name(why.asleep_in.front().first)) +
           " for " + fmt_percent(share) +
           " of that wait: find what the producer waits for (its own input: storage, network, a "
           "lock) and prefetch it, or run more producers ahead of the step";
  return "the dispatch thread waits for " + who +
         " to hand it data: make that producer faster or run more of them ahead of the step "
         "(DataLoader num_workers, prefetch_factor, pin_memory), or overlap the wait with GPU "
         "work";
}

void add_state_metrics(Chain& ch, const CulpritStates& why) {
  if (!why.recorded) return;
  ch.metrics.emplace_back("producer_wait_ns", static_cast<double>(why.wait_ns));
  ch.metrics.emplace_back("producer_on_cpu_ns", static_cast<double>(why.on_cpu_ns));
  ch.metrics.emplace_back("producer_throttled_ns", static_cast<double>(why.throttled_ns));
  ch.metrics.emplace_back("producer_runnable_ns", static_cast<double>(why.runnable_ns));
  ch.metrics.emplace_back("producer_asleep_ns", static_cast<double>(why.asleep_ns));
}

void one_thread(const Context& ctx, const Io& io, std::vector<Chain>& out) {
  const ThreadSummary& t = *io.t;
  const ThreadBudget& b = ctx.budget(t);
  const int64_t lost = b[Bucket::Io] + b[Bucket::Handoff];
  // Mostly waiting for a producer: the step is starved of input, whatever syscall it waits in.
  const bool starved = b[Bucket::Handoff] * 2 >= lost && !b.tasks(Bucket::Handoff).empty();
  Chain ch = ctx.thread_chain(
      t, "io_stall",
      starved ? "Input starved: the step waits for its producer" : "I/O on the GPU dispatch thread",
      lost);
  ch.first_ns = ctx.rel(io.first < 0 ? t.first_ns : std::max(io.first, t.first_ns));
  ch.last_ns = ctx.rel(io.last < 0 ? t.last_ns : std::min(io.last, t.last_ns));
  ch.summary = ctx.who(ch.thread) + " spends " + fmt_percent(ch.share()) +
               (starved ? " of its time waiting for input data instead of launching GPU work"
                        : " of its time in slow I/O syscalls instead of launching GPU work");

  std::string top;
  const auto by_nr = io_by_syscall(b);
  for (size_t i = 0; i < by_nr.size() && i < 4; ++i) {
    if (!top.empty()) top += ", ";
    top += ctx.rows.syscall_name(by_nr[i].first) + " " + fmt_duration(by_nr[i].second);
  }
  ch.evidence.push_back({fmt_duration(lost) + " (" + fmt_percent(ch.share()) + " of " +
                         fmt_duration(t.span_ns()) + ") in " +
                         (starved ? "reads and waits for data" : "slow I/O syscalls") +
                         (top.empty() ? std::string() : ": " + top) + "; " + fmt_count(io.calls) +
                         " slow I/O syscalls recorded"});
  // Disk requests the thread itself issued (reads it waits for, direct or synchronous writes).
  auto [bb, be] = Joins::range(ctx.joins.block_io, t.tid);
  std::vector<int64_t> lat;
  uint64_t bytes = 0;
  for (size_t k = bb; k < be; ++k) {
    const BlockIoRow& r = ctx.rows.block_io[k];
    if (r.end() < t.first_ns || r.ts >= t.last_ns) continue;
    lat.push_back(r.dur);
    bytes += r.bytes;
  }
  if (!lat.empty()) {
    std::vector<int64_t> tmp = lat;
    ch.evidence.push_back({"block I/O it issued: " + fmt_count(lat.size()) + " requests, " +
                           fmt_bytes(bytes) + ", latency p50 " + fmt_duration(percentile(tmp, 50)) +
                           ", p99 " + fmt_duration(percentile(tmp, 99))});
  }
  if (io.longest > 0) {
    ch.evidence.push_back({"longest at " + fmt_rel(ctx.rel(io.longest_at)) + ": " +
                               ctx.rows.syscall_name(io.longest_nr) + " " +
                               fmt_duration(io.longest),
                           ctx.rel(io.longest_at)});
  }
  // With stacks: where the I/O was issued, from the CPU samples inside those syscalls.
  if (std::string sites = call_sites_line(ctx, io.sample_stacks); !sites.empty())
    ch.evidence.push_back({"sampled in those syscalls, " + sites});
  // Who woke it from those sleeps: the producer at the other end of a pipe or socket, or the
  // disk's completion (an interrupt, a kworker), from the budget's own attribution.
  std::vector<Culprit> wakers = b.tasks(Bucket::Handoff);
  for (const Culprit& c : b.tasks(Bucket::Io)) wakers.push_back(c);
  std::stable_sort(wakers.begin(), wakers.end(),
                   [](const Culprit& a, const Culprit& c) { return a.ns > c.ns; });
  int64_t woken_ns = 0;
  for (const Culprit& c : wakers) woken_ns += c.ns;
  if (!wakers.empty()) {
    ch.evidence.push_back({"woken by: " + culprit_list(ctx, wakers, woken_ns, false, 3, t.pid)});
  }
  // One program at the other end of the pipe or socket: the step waits for its producer.
  const bool producer = starved && is_user_task(ctx, wakers.front()) &&
                        wakers.front().ns >= ctx.th.dominant * static_cast<double>(woken_ns);
  if (producer) {
    const Culprit& p = wakers.front();
    ch.culprit = ctx.other(p.pid, p.tid, p.comm, p.pid == t.pid);
    // One level down: why the producer was late, from its own scheduler records.
    const CulpritStates why = culprit_states(ctx, p.tid, waits_woken_by(ctx, t, p.tid));
    if (std::string line = culprit_states_line(ctx, *ch.culprit, why); !line.empty())
      ch.evidence.push_back({line});
    // What the producer ran meanwhile, in Python: the line to make faster.
    if (std::string py = culprit_python_line(ctx, *ch.culprit, t.first_ns, t.last_ns); !py.empty())
      ch.evidence.push_back({py});
    ch.fix = producer_fix(ctx, *ch.culprit, why);
    add_state_metrics(ch, why);
  } else {
    ch.fix =
        "move file I/O off the GPU dispatch thread: checkpoints and logs from a background "
        "thread or process (async checkpointing), input through DataLoader workers with "
        "prefetch; keep datasets on fast local storage";
  }
  ch.metrics.insert(ch.metrics.begin(), {{"io_syscall_ns", static_cast<double>(b[Bucket::Io])},
                                         {"handoff_ns", static_cast<double>(b[Bucket::Handoff])},
                                         {"io_syscalls", static_cast<double>(io.calls)},
                                         {"block_io_bytes", static_cast<double>(bytes)}});
  out.push_back(std::move(ch));
}

}  // namespace

void detect_io_stall(const Context& ctx, std::vector<Chain>& out) {
  std::map<uint32_t, Io> worst;
  for (const ThreadSummary& t : ctx.joins.threads) {
    const ThreadBudget& b = ctx.budget(t);
    const int64_t ns = b[Bucket::Io] + b[Bucket::Handoff];
    if (ns <= 0) continue;
    Io& cur = worst[t.pid];
    if (ns > cur.ns) {
      cur = collect_io(ctx, t);
      cur.ns = ns;
    }
  }
  for (const auto& [pid, io] : worst) one_thread(ctx, io, out);
}

}  // namespace gpuwhy::analysis
