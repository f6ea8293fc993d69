// SPDX-License-Identifier: Apache-2.0
#include "analysis/joins.hpp"
#include "analysis/parallel.hpp"

#include <algorithm>
#include <unordered_set>

namespace gpuwhy::analysis {
namespace {

void add_culprit(std::vector<Culprit>& v, std::unordered_map<uint64_t, size_t>& index, uint64_t key,
                 const OffCpuRow& o, int64_t ns, int64_t in_calls) {
  auto [it, fresh] = index.try_emplace(key, v.size());
  if (fresh) v.push_back(Culprit{o.other_pid, o.other_tid, o.other_comm});
  Culprit& c = v[it->second];
  // Rows are in time order: the latest name wins (a forked child is renamed by its exec).
  if (o.other_comm != 0) c.comm = o.other_comm;
  c.ns += ns;
  c.in_calls_ns += in_calls;
  if (ns > 0) ++c.count;  // a run-queue holder only (ns 0) adds wait_ns, not an interval
}

// Most time taken first: preempted or asleep, plus run-queue waits behind it.
void sort_culprits(std::vector<Culprit>& v) {
  std::sort(v.begin(), v.end(), [](const Culprit& a, const Culprit& b) {
    const int64_t x = a.ns + a.wait_ns, y = b.ns + b.wait_ns;
    return x != y ? x > y : a.tid != b.tid ? a.tid < b.tid : a.pid < b.pid;
  });
}

// Off-CPU of one thread over its span: totals, the part inside calls, and who to blame. Asleep
// inside a GPU call is the runtime waiting (for the GPU, the driver, its own helper threads), so
// the waker is blamed there only when it is another thread that calls GPU APIs itself (holding a
// runtime lock, say). Asleep outside calls, whoever woke the thread is what it waited for.
void summarize_offcpu(const TraceRows& rows, CallUnion& calls,
                      const std::unordered_set<uint32_t>& gpu_tids, size_t ob, size_t oe,
                      ThreadSummary& t) {
  std::unordered_map<uint64_t, size_t> pre_index, wake_index;
  RunqBlame runq;
  auto preemptor_key = [&](const OffCpuRow& o) {
    return culprit_key(o.other_pid, o.other_tid, t.pid);
  };
  for (size_t k = ob; k < oe; ++k) {
    const OffCpuRow& o = rows.offcpu[k];
    const OffCpuParts p = clip_offcpu(o, t.first_ns, t.last_ns);
    if (p.total() == 0) continue;
    t.off.preempted += p.preempted;
    t.off.blocked += p.blocked;
    t.off.wakeup += p.wakeup;
    const int64_t s = std::max(o.ts, t.first_ns);
    if (o.preempted) {
      const int64_t in_calls = calls.covered(s, std::min(o.end(), t.last_ns));
      t.preempted_in_calls_ns += in_calls;
      ++t.preemptions;
      add_culprit(t.preemptors, pre_index, preemptor_key(o), o, p.preempted, in_calls);
      runq.preempted(o.cpu, preemptor_key(o), p.preempted);
    } else if (p.blocked > 0) {
      const int64_t in_calls = calls.covered(s, std::min(o.end() - o.runq, t.last_ns));
      t.blocked_in_calls_ns += in_calls;
      ++t.sleeps;
      const bool app_waker = o.other_tid != t.tid && gpu_tids.count(o.other_tid) > 0;
      const int64_t blamed = p.blocked - (app_waker ? 0 : in_calls);
      t.blocked_by_app_ns += blamed;
      if (blamed > 0) {
        add_culprit(t.wakers, wake_index, o.other_tid, o, blamed, app_waker ? in_calls : 0);
      }
    }
  }
  // Run-queue waits after wake-ups.
  for (size_t k = ob; k < oe; ++k) {
    const OffCpuRow& o = rows.offcpu[k];
    if (o.preempted) continue;
    const int64_t wait = clip_offcpu(o, t.first_ns, t.last_ns).wakeup;
    if (wait <= 0) continue;
    const auto blame = runq.culprit_of(o, t.pid);
    if (!blame) continue;
    if (!blame->preemptor) {
      OffCpuRow holder = o;
      holder.other_pid = o.holder_pid;
      holder.other_tid = o.holder_tid;
      holder.other_comm = o.holder_comm;
      add_culprit(t.preemptors, pre_index, blame->key, holder, 0, 0);
    }
    t.preemptors[pre_index[blame->key]].wait_ns += wait;
  }
  sort_culprits(t.preemptors);
  sort_culprits(t.wakers);
}

uint8_t call_bits_of(const ApiMeta& m, Category cat) {
  using namespace call_bits;
  uint8_t b = kOuter;
  if (enqueues_work(m)) b |= kEnqueues;
  if (drains_queue(m)) b |= kDrains;
  if (cat == Category::Alloc || cat == Category::Free) b |= kAllocFree;
  if (cat == Category::Copy) b |= kCopy;
  if (cat == Category::Collective) b |= kCollective;
  return b;
}

// Per-call overlaps of one thread. Calls are sorted by start and a thread's off-CPU intervals
// and syscalls never overlap one another, so their ends are sorted too and one forward pointer
// per table finds everything overlapping each call (nested calls start later, never earlier).
void join_calls(const TraceRows& rows, const Joins& j, const ThreadSummary& t,
                std::vector<CallOverlap>& out) {
  auto [ob, oe] = Joins::range(j.offcpu, t.tid);
  auto [sb, se] = Joins::range(j.syscalls, t.tid);
  auto [bb, be] = Joins::range(j.block_io, t.tid);
  int64_t max_io = 0;
  for (size_t k = bb; k < be; ++k) max_io = std::max(max_io, rows.block_io[k].dur);
  size_t op = ob, sp = sb;
  for (size_t i = t.call_begin; i < t.call_end; ++i) {
    const CallRow& c = rows.calls[i];
    const int64_t end = c.end();
    CallOverlap ov;
    ov.call = static_cast<uint32_t>(i);
    while (op < oe && rows.offcpu[op].end() <= c.ts) ++op;
    int64_t best = 0;
    for (size_t k = op; k < oe && rows.offcpu[k].ts < end; ++k) {
      const OffCpuParts p = clip_offcpu(rows.offcpu[k], c.ts, end);
      ov.preempted_ns += p.preempted;
      ov.blocked_ns += p.blocked;
      ov.wakeup_ns += p.wakeup;
      if (p.total() > best) {
        best = p.total();
        ov.main_offcpu = static_cast<uint32_t>(k);
      }
    }
    while (sp < se && rows.syscalls[sp].end() <= c.ts) ++sp;
    for (size_t k = sp; k < se && rows.syscalls[k].ts < end; ++k) {
      ov.syscall_ns += overlap_ns(rows.syscalls[k].ts, rows.syscalls[k].end(), c.ts, end);
    }
    if (be > bb) {
      // Block I/O requests of a thread can overlap one another: start from the first request
      // that could still be running at the call's start.
      auto first =
          std::lower_bound(rows.block_io.begin() + static_cast<ptrdiff_t>(bb),
                           rows.block_io.begin() + static_cast<ptrdiff_t>(be), c.ts - max_io,
                           [](const BlockIoRow& r, int64_t ts) { return r.ts < ts; });
      for (auto it = first;
           it != rows.block_io.begin() + static_cast<ptrdiff_t>(be) && it->ts < end; ++it) {
        ov.io_ns += overlap_ns(it->ts, it->end(), c.ts, end);
      }
      ov.io_ns = std::min(ov.io_ns, c.dur);
    }
    if (ov.offcpu_ns() > 0 || ov.syscall_ns > 0 || ov.io_ns > 0) out.push_back(ov);
  }
}

}  // namespace

OffCpuParts clip_offcpu(const OffCpuRow& o, int64_t from, int64_t to) {
  OffCpuParts p;
  if (o.preempted) {
    p.preempted = overlap_ns(o.ts, o.end(), from, to);
    return p;
  }
  const int64_t runq = std::clamp<int64_t>(o.runq, 0, o.dur);
  const int64_t woken = o.end() - runq;
  p.blocked = overlap_ns(o.ts, woken, from, to);
  p.wakeup = overlap_ns(woken, o.end(), from, to);
  return p;
}

std::optional<SegmentMerger::Segment> SegmentMerger::flush() {
  if (!open_) return std::nullopt;
  open_ = false;
  return cur_;
}

CallUnion::CallUnion(const TraceRows& rows, const ThreadSummary& t)
    : calls_(rows.calls), next_(t.call_begin), end_(t.call_end), clip_(t.last_ns) {}

std::optional<SegmentMerger::Segment> CallUnion::next_segment() {
  while (next_ < end_) {
    const CallRow& c = calls_[next_++];
    if (auto s = merger_.add(c.ts, std::min(c.end(), clip_))) return s;
  }
  return merger_.flush();
}

int64_t CallUnion::covered(int64_t from, int64_t to) {
  if (to <= from) return 0;
  while (!kept_.empty() && kept_.front().second <= from) kept_.pop_front();
  while (kept_.empty() || kept_.back().first < to) {
    const auto s = next_segment();
    if (!s) break;
    if (s->second > from) kept_.push_back(*s);  // else wholly before this and every later query
  }
  int64_t n = 0;
  for (auto it = kept_.begin(); it != kept_.end() && it->first < to; ++it)
    n += overlap_ns(it->first, it->second, from, to);
  return n;
}

const CallOverlap* Joins::overlap(uint32_t call) const {
  auto it = std::lower_bound(overlaps.begin(), overlaps.end(), call,
                             [](const CallOverlap& o, uint32_t c) { return o.call < c; });
  return it != overlaps.end() && it->call == call ? &*it : nullptr;
}

std::span<const CallOverlap> Joins::overlaps_of(const ThreadSummary& t) const {
  auto by_call = [](const CallOverlap& o, size_t c) { return o.call < c; };
  auto b = std::lower_bound(overlaps.begin(), overlaps.end(), t.call_begin, by_call);
  auto e = std::lower_bound(b, overlaps.end(), t.call_end, by_call);
  return {b, e};
}

const ThreadSummary* Joins::thread(uint32_t tid) const {
  auto it = std::lower_bound(threads.begin(), threads.end(), tid,
                             [](const ThreadSummary& t, uint32_t x) { return t.tid < x; });
  return it != threads.end() && it->tid == tid ? &*it : nullptr;
}

int64_t Joins::stalled_ns(const TraceRows& rows, uint32_t tid, int64_t from, int64_t to,
                          const std::vector<std::pair<int64_t, int64_t>>& extra) const {
  if (to <= from) return 0;
  std::vector<std::pair<int64_t, int64_t>> parts;
  for (const auto& [s, e] : extra)
    if (e > from && s < to) parts.emplace_back(std::max(s, from), std::min(e, to));
  // Each table's rows of one thread are disjoint and sorted, so their ends are sorted too.
  auto add = [&](const auto& v, const TidRanges& r) {
    auto [b, e] = range(r, tid);
    auto first = v.begin() + static_cast<ptrdiff_t>(b);
    auto last = v.begin() + static_cast<ptrdiff_t>(e);
    auto it = std::upper_bound(first, last, from,
                               [](int64_t x, const auto& row) { return x < row.end(); });
    for (; it != last && it->ts < to; ++it)
      parts.emplace_back(std::max(it->ts, from), std::min(it->end(), to));
  };
  add(rows.offcpu, offcpu);
  add(rows.syscalls, syscalls);
  add(rows.reclaim, reclaim);
  std::sort(parts.begin(), parts.end());
  int64_t ns = 0, cur_s = 0, cur_e = 0;
  bool open = false;
  for (const auto& [s, e] : parts) {
    if (open && s <= cur_e) {
      cur_e = std::max(cur_e, e);
      continue;
    }
    if (open) ns += cur_e - cur_s;
    cur_s = s;
    cur_e = e;
    open = true;
  }
  if (open) ns += cur_e - cur_s;
  return ns;
}

Joins compute_joins(const TraceRows& rows, uint64_t small_copy_bytes) {
  Joins j;
  j.offcpu = tid_ranges(rows.offcpu);
  j.syscalls = tid_ranges(rows.syscalls);
  j.block_io = tid_ranges(rows.block_io);
  j.reclaim = tid_ranges(rows.reclaim);
  j.cpu_samples = tid_ranges(rows.cpu_samples);
  grow_parallel(j.queued_ahead, rows.calls.size());
  grow_parallel(j.nested, rows.calls.size());
  grow_parallel(j.bits, rows.calls.size());
  // Calls are sorted by (tid, ts): each thread is one run of them.
  const std::vector<std::pair<size_t, size_t>> runs = tid_runs(rows.calls);
  std::unordered_set<uint32_t> gpu_tids;
  for (const auto& [b, e] : runs) gpu_tids.insert(rows.calls[b].tid);
  j.threads.resize(runs.size());
  parallel_for(runs.size(), [&](size_t k) {
    ThreadSummary& t = j.threads[k];
    size_t i = runs[k].first;
    t.tid = rows.calls[i].tid;
    t.pid = rows.calls[i].pid;
    t.call_begin = i;
    t.first_ns = rows.calls[i].ts;
    int64_t last = rows.calls[i].end();
    // The unions are cut at the span's end, last_ns, known only after the loop: cutting at the
    // window's end is the same, since last_ns is that or the latest call end, whichever is first.
    // A window of a longer analysis: the span runs on to the thread's next call (span_ends).
    const auto cont = rows.span_ends.find(t.tid);
    const int64_t end_at = cont != rows.span_ends.end() ? cont->second : rows.window.end_ns;
    const int64_t cut = std::max(end_at, t.first_ns);
    UnionLength calls, waits;
    uint32_t queued = 0;
    // The calls' own time is cut as the span is: at its end (known after the loop; cutting at
    // the window's end is the same) and at the end of the call before.
    const int64_t own_cut = cont != rows.span_ends.end() ? cut : end_at;
    int64_t own_from = t.first_ns;
    // Sums in locals, rows through plain pointers: a store to a byte array (nested, bits) may
    // alias anything, so members written in the loop would be reloaded and stored every call.
    const CallRow* const cs = rows.calls.data();
    uint8_t* const nested = j.nested.data();
    uint8_t* const bits_of = j.bits.data();
    uint32_t* const ahead = j.queued_ahead.data();
    std::array<int64_t, kCallTimes> own{};
    uint64_t launches = 0;
    for (const size_t end = runs[k].second; i < end; ++i) {
      const CallRow c = cs[i];
      const ApiMeta& m = rows.api(c.api);
      calls.add(c.ts, std::min(c.end(), cut));
      if (waits_for_gpu(m)) waits.add(c.ts, std::min(c.end(), cut));
      const bool inside = i > t.call_begin && c.ts < last && c.end() <= last;
      last = std::max(last, c.end());
      if (inside) {  // the outer call already queued or drained this work
        nested[i] = 1;
        continue;
      }
      const uint8_t bits = call_bits_of(m, c.cat);
      bits_of[i] = bits;
      if (const int64_t s = std::max(c.ts, own_from), e = std::min(c.end(), own_cut); e > s) {
        const uint64_t bytes = (bits & call_bits::kCopy) ? rows.ext(c).bytes : 0;
        own[static_cast<size_t>(call_time(bits, bytes, small_copy_bytes))] += e - s;
        own_from = e;
      }
      if (c.cat == Category::Launch || c.cat == Category::Graph) ++launches;
      if ((bits & call_bits::kDrains) || c.cat == Category::Copy) ahead[i] = queued;
      if (bits & call_bits::kDrains) queued = 0;
      if (bits & call_bits::kEnqueues) ++queued;
    }
    t.own_ns = own;
    t.launches = launches;
    t.call_end = i;
    t.last_ns = cont != rows.span_ends.end() ? cut : std::max(std::min(last, end_at), t.first_ns);
    t.api_ns = calls.total();
    t.waiting_api_ns = waits.total();
    auto [ob, oe] = Joins::range(j.offcpu, t.tid);
    CallUnion in_calls(rows, t);
    summarize_offcpu(rows, in_calls, gpu_tids, ob, oe, t);
  });
  std::vector<std::vector<CallOverlap>> overlaps(j.threads.size());
  parallel_for(j.threads.size(), [&](size_t k) { join_calls(rows, j, j.threads[k], overlaps[k]); });
  for (const auto& v : overlaps) j.overlaps.insert(j.overlaps.end(), v.begin(), v.end());
  // Threads come out in tid order because calls are sorted by (tid, ts); overlaps likewise.
  return j;
}

}  // namespace gpuwhy::analysis
