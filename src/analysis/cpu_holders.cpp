// SPDX-License-Identifier: Apache-2.0
#include "analysis/cpu_holders.hpp"

#include <algorithm>

namespace gpuwhy::analysis {
namespace {

// Adds ns to the task's entry among acc[first..] (a new one if it has none).
void add_time(std::vector<HolderTime>& acc, size_t first, uint32_t pid, uint32_t tid, uint32_t comm,
              int64_t ns) {
  if (ns <= 0) return;
  for (size_t i = first; i < acc.size(); ++i) {
    HolderTime& h = acc[i];
    if (h.pid == pid && h.tid == tid) {
      h.ns += ns;
      if (!h.comm) h.comm = comm;
      return;
    }
  }
  acc.push_back({pid, tid, comm, ns});
}

// Index ranges of rows sorted by `key`: [begin, end) of each key's rows.
template <class Key, class Row, class A, class Fn>
std::unordered_map<Key, std::pair<size_t, size_t>> ranges(const std::vector<Row, A>& v, Fn key) {
  std::unordered_map<Key, std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i + 1;
    while (j < v.size() && key(v[j]) == key(v[i])) ++j;
    out[key(v[i])] = {i, j};
    i = j;
  }
  return out;
}

}  // namespace

CpuHolders::CpuHolders(const TraceRows& rows) : rows_(rows) {
  recorded_ = rows.session.abi_version >= 5 && !rows.family_off("sched");
  runs_by_cpu_ = ranges<uint16_t>(rows.cpu_runs, [](const CpuRunRow& r) { return r.cpu; });
  moves_by_tid_ =
      ranges<uint32_t>(rows.wait_migrations, [](const WaitMigrationRow& m) { return m.tid; });
}

void CpuHolders::add_cpu(uint16_t cpu, int64_t a, int64_t b, std::vector<HolderTime>& acc,
                         size_t first) const {
  if (b <= a) return;
  int64_t covered = 0;
  if (auto it = runs_by_cpu_.find(cpu); it != runs_by_cpu_.end()) {
    const auto runs = rows_.cpu_runs.begin() + static_cast<ptrdiff_t>(it->second.first);
    const auto last = rows_.cpu_runs.begin() + static_cast<ptrdiff_t>(it->second.second);
    // A CPU's runs do not overlap: the one holding `a`, if any, is the last to start at or
    // before it.
    auto r =
        std::upper_bound(runs, last, a, [](int64_t t, const CpuRunRow& run) { return t < run.ts; });
    if (r != runs) --r;
    for (; r != last && r->ts < b; ++r) {
      const int64_t lo = std::max(a, r->ts), hi = std::min(b, r->end());
      if (hi <= lo) continue;
      add_time(acc, first, r->pid, r->tid, r->comm, hi - lo);
      covered += hi - lo;
    }
  }
  add_time(acc, first, kUnknownHolder, kUnknownHolder, 0, (b - a) - covered);
}

void CpuHolders::holders(const OffCpuRow& o, int64_t from, int64_t to,
                         std::vector<HolderTime>& out) const {
  const int64_t wait_start = o.end() - std::clamp<int64_t>(o.runq, 0, o.dur);
  const int64_t lo = std::max(from, wait_start), hi = std::min(to, o.end());
  if (hi <= lo) return;
  // Appended to `out` and sorted there: no allocation per wait once `out` has grown.
  const size_t first = out.size();
  std::vector<HolderTime>& acc = out;
  if (o.wait_cpu < 0) {
    add_time(acc, first, kUnknownHolder, kUnknownHolder, 0, hi - lo);
  } else {
    // The wait as pieces, one per run queue: from wait_cpu, through each recorded move, to the
    // CPU it got back. A move that does not start where the last one ended means one was lost:
    // from there on the queue is not known.
    int64_t at = wait_start;
    int cpu = o.wait_cpu;
    if (auto it = moves_by_tid_.find(o.tid); it != moves_by_tid_.end()) {
      // A thread's moves are sorted by time: start at the first one of this wait.
      const auto begin = rows_.wait_migrations.begin();
      size_t i = static_cast<size_t>(
          std::lower_bound(begin + static_cast<ptrdiff_t>(it->second.first),
                           begin + static_cast<ptrdiff_t>(it->second.second), wait_start,
                           [](const WaitMigrationRow& m, int64_t t) { return m.ts < t; }) -
          begin);
      for (; i < it->second.second && cpu >= 0; ++i) {
        const WaitMigrationRow& m = rows_.wait_migrations[i];
        if (m.ts > o.end()) break;
        if (m.from_cpu != cpu) {
          cpu = -1;
          break;
        }
        add_cpu(static_cast<uint16_t>(cpu), std::max(at, lo), std::min(m.ts, hi), acc, first);
        at = std::max(at, m.ts);
        cpu = m.to_cpu;
      }
    }
    // It gets the CPU back where it waited last; anything else means a move went unrecorded.
    if (cpu >= 0 && cpu == o.cpu)
      add_cpu(static_cast<uint16_t>(cpu), std::max(at, lo), hi, acc, first);
    else
      add_time(acc, first, kUnknownHolder, kUnknownHolder, 0, hi - std::max(at, lo));
  }
  // Most time first, ties in the order first seen: an insertion sort, stable and without the
  // buffer std::stable_sort allocates (a wait has a handful of holders, and there are millions).
  for (size_t i = first + 1; i < out.size(); ++i) {
    const HolderTime h = out[i];
    size_t k = i;
    for (; k > first && out[k - 1].ns < h.ns; --k) out[k] = out[k - 1];
    out[k] = h;
  }
}

}  // namespace gpuwhy::analysis
