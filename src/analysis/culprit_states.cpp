// SPDX-License-Identifier: Apache-2.0
#include "analysis/culprit_states.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

// The culprit's off-CPU rows, in time order: a GPU process's through the joins, a worker's (a
// process that made no GPU call) from worker_offcpu.
std::pair<const OffCpuRow*, const OffCpuRow*> offcpu_of(const Context& ctx, uint32_t tid) {
  if (auto it = ctx.joins.offcpu.find(tid); it != ctx.joins.offcpu.end()) {
    const OffCpuRow* base = ctx.rows.offcpu.data();
    return {base + it->second.first, base + it->second.second};
  }
  const auto& w = ctx.rows.worker_offcpu;
  const auto lo = std::lower_bound(w.begin(), w.end(), tid,
                                   [](const OffCpuRow& o, uint32_t t) { return o.tid < t; });
  const auto hi =
      std::upper_bound(lo, w.end(), tid, [](uint32_t t, const OffCpuRow& o) { return t < o.tid; });
  return {w.data() + (lo - w.begin()), w.data() + (hi - w.begin())};
}

bool sampled(const Context& ctx, uint32_t tid) {
  if (auto it = ctx.joins.cpu_samples.find(tid); it != ctx.joins.cpu_samples.end())
    return it->second.second > it->second.first;
  return std::any_of(ctx.rows.worker_samples.begin(), ctx.rows.worker_samples.end(),
                     [&](const CpuSampleRow& s) { return s.tid == tid; });
}

int64_t overlap(int64_t s, int64_t e, int64_t lo, int64_t hi) {
  return std::max<int64_t>(0, std::min(e, hi) - std::max(s, lo));
}

}  // namespace

int64_t CulpritStates::ns(State s) const {
  switch (s) {
    case State::OnCpu:
      return on_cpu_ns;
    case State::Throttled:
      return throttled_ns;
    case State::Runnable:
      return runnable_ns;
    case State::Asleep:
      return asleep_ns;
  }
  return 0;
}

CulpritStates::State CulpritStates::dominant() const {
  State best = State::OnCpu;
  for (State s : {State::Throttled, State::Runnable, State::Asleep})
    if (ns(s) > ns(best)) best = s;
  return best;
}

namespace {

// The states over `waits`, and the pieces of them the thread slept through until a sibling
// thread of its own process woke it (by that sibling).
CulpritStates states_over(
    const Context& ctx, uint32_t tid, const std::vector<std::pair<int64_t, int64_t>>& waits,
    std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>>* by_sibling) {
  CulpritStates out;
  const auto [first, last] = offcpu_of(ctx, tid);
  out.recorded = first != last || sampled(ctx, tid);
  if (!out.recorded) return out;
  std::map<uint32_t, int64_t> asleep_in;
  const OffCpuRow* o = first;
  int64_t off = 0;
  for (const auto& [s, e] : waits) {
    out.wait_ns += e - s;
    while (o != last && o->end() <= s) ++o;  // rows end in order: they do not overlap
    for (const OffCpuRow* r = o; r != last && r->ts < e; ++r) {
      const int64_t whole = overlap(r->ts, r->end(), s, e);
      off += whole;
      // A throttled wait is the quota's whole (as the budget counts it); a preemption is a wait
      // for a CPU; a sleep is asleep until its wake-up, then waiting for a CPU.
      if (r->throttled) {
        out.throttled_ns += whole;
      } else if (r->preempted) {
        out.runnable_ns += whole;
      } else {
        const int64_t woke = r->end() - r->runq;
        const int64_t asleep = overlap(r->ts, woke, s, e);
        out.asleep_ns += asleep;
        out.runnable_ns += whole - asleep;
        if (r->syscall >= 0 && asleep > 0) asleep_in[static_cast<uint32_t>(r->syscall)] += asleep;
        // Woken by a sibling thread: it waited for that thread. Woken by nobody it knows of (a
        // timed-out wait: the GIL's, a polled condition): for whichever sibling ran meanwhile.
        const bool sibling = r->other_pid == r->pid && r->other_tid != r->tid && r->other_tid != 0;
        if (by_sibling && asleep > 0 && (sibling || r->other_pid == 0))
          (*by_sibling)[sibling ? r->other_tid : 0].emplace_back(std::max(r->ts, s),
                                                                 std::min(woke, e));
      }
    }
  }
  out.on_cpu_ns = std::max<int64_t>(0, out.wait_ns - off);
  out.asleep_in.assign(asleep_in.begin(), asleep_in.end());
  std::sort(out.asleep_in.begin(), out.asleep_in.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return out;
}

// The CPU samples of process `pid`'s threads other than `tid`, as (tid, ts), sorted.
std::vector<std::pair<uint32_t, int64_t>> sibling_samples(const Context& ctx, uint32_t pid,
                                                          uint32_t tid) {
  std::vector<std::pair<uint32_t, int64_t>> v;
  for (const CpuSampleRow& x : ctx.rows.worker_samples)
    if (x.pid == pid && x.tid != tid) v.emplace_back(x.tid, x.ts);
  for (const CpuSampleRow& x : ctx.rows.cpu_samples)
    if (x.pid == pid && x.tid != tid) v.emplace_back(x.tid, x.ts);
  std::sort(v.begin(), v.end());
  return v;
}

bool sampled_in(const std::vector<std::pair<uint32_t, int64_t>>& samples, uint32_t tid, int64_t s,
                int64_t e) {
  const auto it = std::lower_bound(samples.begin(), samples.end(), std::make_pair(tid, s));
  return it != samples.end() && it->first == tid && it->second < e;
}

}  // namespace

CulpritStates culprit_states(const Context& ctx, uint32_t culprit_tid,
                             const std::vector<std::pair<int64_t, int64_t>>& waits) {
  std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> by_sibling;
  CulpritStates out = states_over(ctx, culprit_tid, waits, &by_sibling);
  // One level further where a sibling made it wait: that thread's states in those pieces. The
  // sleeps no one was seen to end go to the sibling that woke it most, or else to the sibling
  // the CPU samples found running the most during them, where it was sampled running.
  std::vector<std::pair<int64_t, int64_t>> unknown = std::move(by_sibling[0]);
  by_sibling.erase(0);
  std::vector<std::pair<uint32_t, int64_t>> samples;
  const auto [first, last] = offcpu_of(ctx, culprit_tid);
  if (!unknown.empty() && first != last) samples = sibling_samples(ctx, first->pid, culprit_tid);
  uint32_t sibling = 0;
  int64_t most = 0;
  for (const auto& [tid, pieces] : by_sibling) {
    int64_t ns = 0;
    for (const auto& [s, e] : pieces) ns += e - s;
    if (ns > most) {
      most = ns;
      sibling = tid;
    }
  }
  if (sibling == 0) {
    // Per sibling (samples are by tid, then time), its samples inside the pieces.
    int64_t best = 0;
    for (auto b = samples.begin(); b != samples.end();) {
      const uint32_t tid = b->first;
      const auto e = std::upper_bound(b, samples.end(), std::make_pair(tid, INT64_MAX));
      int64_t n = 0;
      for (const auto& [ps, pe] : unknown)
        n += std::lower_bound(b, e, std::make_pair(tid, pe)) -
             std::lower_bound(b, e, std::make_pair(tid, ps));
      if (n > best) {
        best = n;
        sibling = tid;
      }
      b = e;
    }
  }
  if (sibling == 0) return out;
  std::vector<std::pair<int64_t, int64_t>>& pieces = by_sibling[sibling];
  for (const auto& [s, e] : unknown)
    if (sampled_in(samples, sibling, s, e)) pieces.emplace_back(s, e);
  int64_t through = 0;
  for (const auto& [s, e] : pieces) through += e - s;
  if (2 * through < out.asleep_ns) return out;
  std::sort(pieces.begin(), pieces.end());
  const CulpritStates via = states_over(ctx, sibling, pieces, nullptr);
  if (!via.recorded) return out;
  out.through_tid = sibling;
  out.through_ns = via.wait_ns;
  out.asleep_ns += via.asleep_ns - via.wait_ns;
  out.on_cpu_ns += via.on_cpu_ns;
  out.throttled_ns += via.throttled_ns;
  out.runnable_ns += via.runnable_ns;
  return out;
}

std::string fmt_cpus(double cpus) {
  char buf[32];
  std::snprintf(buf, sizeof buf, cpus < 10 ? "%.2f" : "%.1f", cpus);
  return buf;
}

std::string quota_text(const TraceRows::CpuLimit& l) {
  return "cgroup " + l.cgroup + " (" + fmt_cpus(l.cpus()) + " CPUs: " +
         (l.version == 2
              ? "cpu.max " + std::to_string(l.quota_us) + " " + std::to_string(l.period_us)
              : "cpu.cfs_quota_us " + std::to_string(l.quota_us) + ", cpu.cfs_period_us " +
                    std::to_string(l.period_us)) +
         ")";
}

std::string culprit_states_line(const Context& ctx, const Task& culprit, const CulpritStates& s) {
  if (!s.recorded || s.wait_ns <= 0) return {};
  using State = CulpritStates::State;
  const double total = static_cast<double>(s.wait_ns);
  std::vector<std::pair<int64_t, std::string>> parts;
  std::string throttled = "throttled by its cgroup's CPU quota";
  if (auto l = ctx.rows.cpu_limits.find(culprit.pid); l != ctx.rows.cpu_limits.end())
    throttled += " (" + quota_text(l->second) + ")";
  std::string asleep = "asleep";
  if (!s.asleep_in.empty()) asleep += " (" + ctx.rows.syscall_name(s.asleep_in.front().first) + ")";
  const std::pair<State, std::string> names[] = {{State::OnCpu, "on the CPU"},
                                                 {State::Throttled, throttled},
                                                 {State::Runnable, "waiting for a CPU"},
                                                 {State::Asleep, asleep}};
  for (const auto& [state, name] : names)
    if (s.ns(state) > 0) parts.emplace_back(s.ns(state), name);
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string line = "why " + culprit.label() + " was late, over the " + fmt_duration(s.wait_ns) +
                     " it was waited for: ";
  for (size_t i = 0; i < parts.size(); ++i)
    line += (i ? ", " : "") + parts[i].second + " " +
            fmt_percent(static_cast<double>(parts[i].first) / total);
  if (s.through_tid != 0)
    line += " (its thread that hands the data over waited " + fmt_duration(s.through_ns) +
            " of it for its thread tid " + std::to_string(s.through_tid) +
            ", which makes the data: counted as that thread's)";
  return line;
}

}  // namespace gpuwhy::analysis
