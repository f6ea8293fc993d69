// SPDX-License-Identifier: Apache-2.0
// The causal joins: for every GPU API call, what happened to ITS thread during [ts, ts + dur]
// (off-CPU time clipped to the call, split into preempted / blocked / waiting for a CPU after the
// wake-up; slow syscalls; block I/O), and how much GPU work that thread had queued ahead of each
// wait. Done per thread with merge sweeps over rows sorted by (tid, ts): O(calls + intervals),
// no query per call. Counting events inside a time window would blame whatever happened nearby;
// joining by thread and time blames only what the calling thread itself went through.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/percentile.hpp"
#include "analysis/rows.hpp"

namespace gpuwhy::analysis {

// One off-CPU interval cut to [from, to), split by what the thread was doing. The three parts
// never overlap: preempted (runnable, another task held the CPU), blocked (asleep until woken),
// wakeup (woken, runnable, waiting for a CPU: the runq tail of a blocked interval).
struct OffCpuParts {
  int64_t preempted = 0, blocked = 0, wakeup = 0;
  int64_t total() const { return preempted + blocked + wakeup; }
};
OffCpuParts clip_offcpu(const OffCpuRow& o, int64_t from, int64_t to);

// Length of [a0, a1) ∩ [b0, b1), 0 when disjoint.
inline int64_t overlap_ns(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  const int64_t lo = a0 > b0 ? a0 : b0;
  const int64_t hi = a1 < b1 ? a1 : b1;
  return hi > lo ? hi - lo : 0;
}

// Merges [start, end) intervals fed in order of start into disjoint segments: add() hands back
// the segment it closed, if any, and flush() the last one. Empty intervals are skipped.
class SegmentMerger {
 public:
  using Segment = std::pair<int64_t, int64_t>;
  // Inline: called for every call of every thread.
  std::optional<Segment> add(int64_t start, int64_t end) {
    if (end <= start) return std::nullopt;
    if (open_ && start <= cur_.second) {
      cur_.second = std::max(cur_.second, end);
      return std::nullopt;
    }
    std::optional<Segment> closed;
    if (open_) closed = cur_;
    cur_ = {start, end};
    open_ = true;
    return closed;
  }
  std::optional<Segment> flush();

 private:
  Segment cur_{0, 0};
  bool open_ = false;
};

// Total length of the union of intervals fed in order of start.
class UnionLength {
 public:
  void add(int64_t start, int64_t end) {
    if (auto s = merger_.add(start, end)) total_ += s->second - s->first;
  }
  int64_t total() {
    if (auto s = merger_.flush()) total_ += s->second - s->first;
    return total_;
  }

 private:
  SegmentMerger merger_;
  int64_t total_ = 0;
};

// What one call's thread went through during the call. Kept only for calls where something did
// happen: a 5 µs launch is almost never descheduled, and ten million empty records would cost
// more than the join.
struct CallOverlap {
  uint32_t call = 0;  // index into TraceRows::calls
  int64_t preempted_ns = 0, blocked_ns = 0, wakeup_ns = 0;
  int64_t syscall_ns = 0;  // slow syscalls of the thread, clipped to the call
  int64_t io_ns = 0;       // block I/O the thread issued, clipped (capped at the call's length)
  uint32_t main_offcpu = std::numeric_limits<uint32_t>::max();  // offcpu row overlapping most
  int64_t offcpu_ns() const { return preempted_ns + blocked_ns + wakeup_ns; }
};

// Time a thread lost to one other task: a preempting process (by pid; a thread of the victim's
// own process by tid, so the runtime's helper threads stand apart) or a waking thread (by tid).
struct Culprit {
  uint32_t pid = 0, tid = 0;
  uint32_t comm = 0;        // strings.id
  int64_t ns = 0;           // preempted / asleep, inside the thread's active span
  int64_t in_calls_ns = 0;  // the part inside the thread's GPU API calls
  // Preemptors only: run-queue waits after wake-ups while this task held the CPU (RunqBlame).
  int64_t wait_ns = 0;
  uint32_t count = 0;  // intervals it preempted / woke the thread
};

// The key a culprit is counted under: a thread of the victim's own process by tid (the runtime's
// helper threads stand apart), any other task by pid.
inline uint64_t culprit_key(uint32_t pid, uint32_t tid, uint32_t own_pid) {
  return pid == own_pid ? (uint64_t{1} << 32) | tid : uint64_t{pid};
}

// Who kept one thread waiting for a CPU after its wake-ups: the task it took the CPU back from,
// recorded at switch-in (none when that was the idle task: nothing was in the way). Traces from
// before ABI 2 did not record it; for them, a guess: on a CPU where the thread was preempted, its
// main preemptor there, elsewhere the task that took the CPU when it went to sleep. Feed it the
// thread's preemptions (used only for the guess), then ask for each blocked interval.
class RunqBlame {
 public:
  // Kept as they come and summed only if a guess is needed: recorded holders (every trace since
  // ABI 2) need none, and a hash update per preemption was a percent of explain.
  void preempted(uint16_t cpu, uint64_t key, int64_t ns) { preemptions_.push_back({key, ns, cpu}); }
  struct Blame {
    uint64_t key = 0;
    bool preemptor = false;  // true: a preemptor already counted; false: o.holder_* is the culprit
  };
  // Nothing for an interval after which no one is to blame (the CPU was idle: wake-up latency).
  std::optional<Blame> culprit_of(const OffCpuRow& o, uint32_t own_pid) {
    if (!o.holder_recorded) {
      if (!ranked_) rank();
      if (auto it = top_.find(o.cpu); it != top_.end()) return Blame{it->second, true};
    }
    if (o.holder_pid == 0) return std::nullopt;
    return Blame{culprit_key(o.holder_pid, o.holder_tid, own_pid), false};
  }

 private:
  void rank() {
    std::unordered_map<uint16_t, std::unordered_map<uint64_t, int64_t>> by_cpu;  // cpu -> key -> ns
    for (const Preemption& p : preemptions_) by_cpu[p.cpu][p.key] += p.ns;
    for (const auto& [cpu, m] : by_cpu) {
      // Ties go to the smaller key, so the answer never depends on hash order.
      auto best = std::max_element(m.begin(), m.end(), [](auto& a, auto& b) {
        return a.second != b.second ? a.second < b.second : a.first > b.first;
      });
      top_[cpu] = best->first;
    }
    ranked_ = true;
  }
  struct Preemption {
    uint64_t key;
    int64_t ns;
    uint16_t cpu;
  };
  std::vector<Preemption> preemptions_;
  std::unordered_map<uint16_t, uint64_t> top_;
  bool ranked_ = false;
};

// Joins::bits of one call. kOuter is set for every call that is not nested, so 0 means nested.
namespace call_bits {
inline constexpr uint8_t kOuter = 1;
inline constexpr uint8_t kEnqueues = 2;     // enqueues_work(): puts work in the GPU queue
inline constexpr uint8_t kDrains = 4;       // drains_queue(): returns when earlier work is done
inline constexpr uint8_t kAllocFree = 8;    // category Alloc or Free
inline constexpr uint8_t kCopy = 16;        // category Copy
inline constexpr uint8_t kCollective = 32;  // category Collective
inline constexpr uint8_t kSync = 64;        // category Sync
}  // namespace call_bits

// A copy below this many bytes is a read-back, i.e. a sync (Thresholds::small_copy_bytes).
inline constexpr uint64_t kSmallCopyBytes = 64 * 1024;

// What an outermost call's own time is in the time budget (budget.hpp's buckets of the same
// names): waiting for the GPU, a transfer, allocation, or API overhead.
enum class CallTime : uint8_t { Api, GpuWait, Transfer, Alloc };
inline constexpr size_t kCallTimes = 4;
inline CallTime call_time(uint8_t bits, uint64_t copy_bytes, uint64_t small_copy_bytes) {
  using namespace call_bits;
  if (bits & kAllocFree) return CallTime::Alloc;
  if ((bits & kCopy) && copy_bytes >= small_copy_bytes) return CallTime::Transfer;
  if (bits & kCollective) return CallTime::GpuWait;  // waits for its peers, as a sync for the GPU
  return bits & kDrains ? CallTime::GpuWait : CallTime::Api;
}

// One thread that made GPU API calls, over its active span in the window (first call's start to
// last call's end): the denominator of every "share of wall time" about it.
// One thread's calls of one API, counted in the joins' pass over its calls (the statistics'
// first pass: compute_stats): durations by bucket, errors, bytes moved, and how many were nested
// in another call of the thread.
struct OpCount {
  uint16_t api = 0;
  DurHistogram hist;
  uint64_t errors = 0, bytes = 0, nested = 0;
  uint64_t imputed = 0;  // launches whose duration was estimated (launch_timing.hpp)
};

struct ThreadSummary {
  uint32_t pid = 0, tid = 0;
  size_t call_begin = 0, call_end = 0;  // its calls: TraceRows::calls[call_begin, call_end)
  int64_t first_ns = 0, last_ns = 0;
  uint64_t launches = 0;
  int64_t api_ns = 0;          // union of its calls (nested runtime -> driver calls count once)
  int64_t waiting_api_ns = 0;  // union of its calls that can wait for the GPU (syncs, copies, …)
  OffCpuParts off;             // off-CPU inside the span
  int64_t preempted_in_calls_ns = 0, blocked_in_calls_ns = 0;
  // Asleep waiting for the application rather than the runtime: outside GPU calls, or woken by
  // another GPU-calling thread (see summarize_offcpu in joins.cpp).
  int64_t blocked_by_app_ns = 0;
  uint32_t preemptions = 0, sleeps = 0;
  std::vector<Culprit> preemptors;  // by pid, most time first
  std::vector<Culprit> wakers;      // by tid, of blocked_by_app_ns, most time first
  // Its outermost calls' own time, each cut to the span and to the end of the call before it
  // (so they add up to api_ns), by CallTime: the time budget's share of its calls, summed here
  // because this pass reads every call anyway.
  std::array<int64_t, kCallTimes> own_ns{};
  int64_t span_ns() const { return last_ns - first_ns; }
  uint64_t calls() const { return call_end - call_begin; }
};

// A set of ids asked about once per off-CPU row (the GPU threads' tids, the ids of task names
// that are not the kernel's): a sorted vector, read with a binary search over a few cache lines
// where a hash set's buckets were a percent of explain.
class IdSet {
 public:
  void insert(uint32_t id) { ids_.push_back(id); }
  // After the inserts, before count().
  void seal() {
    std::sort(ids_.begin(), ids_.end());
    ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
  }
  size_t count(uint32_t id) const { return std::binary_search(ids_.begin(), ids_.end(), id); }

 private:
  std::vector<uint32_t> ids_;
};

// [begin, end) of one thread's rows in a (tid, ts)-sorted vector.
using TidRanges = std::unordered_map<uint32_t, std::pair<size_t, size_t>>;

struct Joins {
  std::vector<CallOverlap> overlaps;  // sorted by call index
  std::vector<uint32_t>
      queued_ahead;  // per call: async work queued on its thread since its last wait
  // per call: what the GPU-queue model, the time budget and the detectors ask of it
  // (call_bits), 0 when nested: those passes read a byte per launch instead of its 32-byte row,
  // API metadata and category
  std::vector<uint8_t> bits;
  // per off-CPU row (TraceRows::offcpu): 1 when a call of its thread may overlap it (0: none
  // does), so the time budget looks for calls only there
  std::vector<uint8_t> offcpu_meets_call;
  std::vector<ThreadSummary> threads;  // sorted by tid
  // per thread (as `threads`): its calls counted by API, ascending api
  std::vector<std::vector<OpCount>> op_counts;
  TidRanges offcpu, syscalls, block_io, reclaim, cpu_samples;

  const CallOverlap* overlap(uint32_t call) const;
  // The overlaps of one thread's calls (contiguous: overlaps are sorted by call index).
  std::span<const CallOverlap> overlaps_of(const ThreadSummary& t) const;
  const ThreadSummary* thread(uint32_t tid) const;
  // What a pass over a thread's off-CPU rows and the calls around them costs, to order the
  // threads' work (parallel_for_largest_first): its rows, and a little per call.
  size_t offcpu_work(const ThreadSummary& t) const {
    const auto [ob, oe] = range(offcpu, t.tid);
    return oe - ob + t.calls() / 16;
  }
  // Whether call i runs inside an earlier call of its thread (a runtime call's own driver call,
  // when both libraries are probed): totals skip these so time is not counted twice.
  bool nested(size_t i) const { return bits[i] == 0; }
  // Time of [from, to) that `tid` spent off the CPU, in slow syscalls, in direct reclaim or in
  // the `extra` intervals (the union: a thread blocked in read() is both): time with a cause of
  // its own. (StallWalk asks it of many intervals in time order.)
  int64_t stalled_ns(const TraceRows& rows, uint32_t tid, int64_t from, int64_t to,
                     const std::vector<std::pair<int64_t, int64_t>>& extra = {}) const;
  static std::pair<size_t, size_t> range(const TidRanges& r, uint32_t tid) {
    auto it = r.find(tid);
    return it == r.end() ? std::pair<size_t, size_t>{0, 0} : it->second;
  }
};

// Inline, these three: asked of every call, several times.
// Can this call wait for the GPU (or the driver) by design? Sleeping inside one is expected and is
// not blamed on whoever woke the thread.
inline bool waits_for_gpu(const ApiMeta& m) {
  return !(m.cat == Category::Launch || m.cat == Category::Graph || m.cat == Category::StreamWait);
}
// Does it put work in the GPU queue without waiting for it?
inline bool enqueues_work(const ApiMeta& m) {
  switch (m.cat) {
    case Category::Launch:
    case Category::Graph:
    case Category::Collective:
      return true;
    case Category::Copy:
    case Category::Memset:
      return m.async;
    default:
      return false;
  }
}
// Does it drain the thread's queue (returns only when earlier work is done)?
inline bool drains_queue(const ApiMeta& m) {
  switch (m.cat) {
    case Category::Sync:
      return true;
    case Category::Free:  // cudaFree synchronises the device first; cudaFreeAsync is stream-ordered
      return !m.async;
    case Category::Copy:
    case Category::Memset:
      return !m.async;
    default:
      return false;
  }
}

// Joins::stalled_ns() of one thread for intervals asked in time order (`from` never smaller
// than before, as a thread's gaps after its syncs): each table's rows are walked forward from
// where the last question left them instead of searched again (an earlier `from` searches).
class StallWalk {
 public:
  StallWalk(const TraceRows& rows, const Joins& j, uint32_t tid);
  int64_t stalled_ns(int64_t from, int64_t to,
                     const std::vector<std::pair<int64_t, int64_t>>& extra = {});

 private:
  struct Table {
    size_t first = 0, at = 0, end = 0;  // the thread's rows; `at`: the first ending after from
  };
  template <class Row, class A>
  void add(const std::vector<Row, A>& v, Table& tb, int64_t from, int64_t to);
  const TraceRows& rows_;
  Table off_, sys_, rec_;
  int64_t last_from_ = std::numeric_limits<int64_t>::min();
  std::vector<std::pair<int64_t, int64_t>> parts_;
};

// `rows` must be prepared (sorted by (tid, ts)). `small_copy_bytes` divides copies between
// transfers and read-backs in ThreadSummary::own_ns.
Joins compute_joins(const TraceRows& rows, uint64_t small_copy_bytes = kSmallCopyBytes);

// The first index in [from, end) whose call starts at or after t (calls sorted by ts), searched
// from `from` outwards: the next time asked is usually a few calls on, so this reads a handful of
// rows where a binary search over a thread's millions would miss the cache a dozen times.
inline size_t gallop_ts(const CallRows& calls, size_t from, size_t end, int64_t t) {
  if (from == end || calls[from].ts >= t) return from;  // most often: nothing to skip
  size_t lo = from, step = 1;
  while (lo + step < end && calls[lo + step].ts < t) {
    lo += step;
    step *= 2;
  }
  // calls[lo] starts before t; the answer lies in (lo, min(lo + step, end)].
  const auto first = calls.begin() + static_cast<std::ptrdiff_t>(lo + 1);
  const auto last = calls.begin() + static_cast<std::ptrdiff_t>(std::min(lo + step, end));
  return static_cast<size_t>(
      std::lower_bound(first, last, t, [](const CallRow& c, int64_t x) { return c.ts < x; }) -
      calls.begin());
}

// Of calls [lo, g), all starting before t, the first still running at t; g when none is. Walked
// back from g: an outermost call (bits non-zero) that ended by t ends the walk, since a call
// before it running past t would have held it, and made it nested.
inline size_t first_running_at(const CallRow* calls, const uint8_t* bits, size_t lo, size_t g,
                               int64_t t) {
  size_t first = g;
  for (size_t k = g; k > lo;) {
    --k;
    if (calls[k].end() > t) {
      first = k;
    } else if (bits[k]) {
      break;
    }
  }
  return first;
}

// One thread's outermost calls (a runtime call's own driver call is inside it) as disjoint
// pieces in time order, each cut to the span and to the end of the piece before it: together
// they are the union of its calls over its span. Made one at a time, as a forward walk asks;
// jump() skips the millions of launches between the times a sparse walk asks about.
// Needs j.bits of the thread's calls (compute_joins sets them before anything reads this).
class OuterCalls {
 public:
  struct Piece {
    int64_t s = 0, e = 0;
    uint32_t idx = 0;  // the call: TraceRows::calls[idx]
  };
  OuterCalls(const TraceRows& rows, const Joins& j, const ThreadSummary& t)
      : calls_(rows.calls.data()),
        all_(&rows.calls),
        bits_(j.bits.data()),
        i_(t.call_begin),
        end_(t.call_end),
        last_ns_(t.last_ns),
        last_end_(t.first_ns) {}
  // The next piece; false after the last.
  bool next(Piece& p) {
    while (i_ < end_) {
      const size_t i = i_++;
      if (!bits_[i]) continue;  // nested
      const CallRow& c = calls_[i];
      const int64_t s = std::max(c.ts, last_end_);
      const int64_t e = std::min(c.end(), last_ns_);
      if (e <= s) continue;
      p = {s, e, static_cast<uint32_t>(i)};
      last_end_ = e;
      return true;
    }
    return false;
  }
  // A call index at or before the first call starting at or after the next time jump() is
  // given: its search starts there (a caller that found the time in the calls knows one).
  void hint(size_t first) { hint_ = first; }
  // Skips to t: the next piece made is the one covering t, or the first after it, as walking
  // would make it. Only when every piece made so far ends by t.
  void jump(int64_t t) {
    // Most often the next call covers t or starts after it: nothing to skip.
    if (i_ == end_ || calls_[i_].end() > t) return;
    // The search starts at the hint when the call before it starts before t (else it is no
    // lower bound after all: from where the walk is).
    size_t from = std::min(std::max(i_, hint_), end_);
    if (from > i_ && calls_[from - 1].ts >= t) from = i_;
    const size_t g = gallop_ts(*all_, from, end_, t);  // calls before g start before t
    // The piece covering t is the first call before g still running at t.
    const size_t owner = first_running_at(calls_, bits_, i_, g, t);
    // The pieces of the calls before the owner (or before g) all end by t; the owner's starts
    // at or before t either way, so cutting it from t changes nothing a later walk sees.
    if (owner > i_) {
      i_ = owner;
      if (owner < end_) last_end_ = std::max(last_end_, std::min(t, calls_[owner].ts));
    }
  }

 private:
  const CallRow* calls_;
  const CallRows* all_;
  const uint8_t* bits_;
  size_t i_, end_;
  int64_t last_ns_, last_end_;
  size_t hint_ = 0;
};

// The union of one thread's GPU API calls over its active span, walked forward: covered() for
// queries in time order (a thread's off-CPU intervals) without materialising the union, which
// for a dispatch thread is millions of segments, and without reading the calls between queries.
class CallUnion {
 public:
  CallUnion(const TraceRows& rows, const Joins& j, const ThreadSummary& t) : calls_(rows, j, t) {}
  // Time of [from, to) inside the thread's calls. `from` must never be less than in the
  // previous query: pieces that end before it are dropped for good.
  int64_t covered(int64_t from, int64_t to);

 private:
  OuterCalls calls_;
  bool done_ = false;                   // every piece made
  std::deque<OuterCalls::Piece> kept_;  // may still overlap a later query, by start
};

// [begin, end) of each thread's rows in a (tid, ts)-sorted vector, in tid order: one binary
// search per thread, not a look at each of millions of rows.
template <class Row, class A>
std::vector<std::pair<size_t, size_t>> tid_runs(const std::vector<Row, A>& v) {
  std::vector<std::pair<size_t, size_t>> runs;
  for (auto it = v.begin(); it != v.end();) {
    const uint32_t tid = it->tid;
    const auto end = std::partition_point(it, v.end(), [&](const Row& r) { return r.tid == tid; });
    runs.emplace_back(static_cast<size_t>(it - v.begin()), static_cast<size_t>(end - v.begin()));
    it = end;
  }
  return runs;
}

// (tid -> [begin, end)) of a (tid, ts)-sorted vector.
template <class Row, class A>
TidRanges tid_ranges(const std::vector<Row, A>& v) {
  TidRanges r;
  for (const auto& [b, e] : tid_runs(v)) r[v[b].tid] = {b, e};
  return r;
}

}  // namespace gpuwhy::analysis
