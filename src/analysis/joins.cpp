// SPDX-License-Identifier: Apache-2.0
#include "analysis/joins.hpp"
#include "analysis/parallel.hpp"

#include <algorithm>
#include <span>
#include <unordered_set>

namespace gpuwhy::analysis {
namespace {

// Where each culprit is in its list, by key. The task looked up last comes again most often (a
// busy neighbour preempts a thread thousands of times): a comparison before the hash.
struct CulpritIndex {
  std::unordered_map<uint64_t, size_t> at;
  uint64_t last_key = 0;
  size_t last = SIZE_MAX;
  size_t operator[](uint64_t key) {
    if (last == SIZE_MAX || key != last_key) {
      last = at[key];  // as the map would: always present here
      last_key = key;
    }
    return last;
  }
};

void add_culprit(std::vector<Culprit>& v, CulpritIndex& index, uint64_t key, const OffCpuRow& o,
                 int64_t ns, int64_t in_calls) {
  if (index.last == SIZE_MAX || key != index.last_key) {
    auto [it, fresh] = index.at.try_emplace(key, v.size());
    if (fresh) v.push_back(Culprit{o.other_pid, o.other_tid, o.other_comm});
    index.last_key = key;
    index.last = it->second;
  }
  Culprit& c = v[index.last];
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

// The part of an off-CPU row whose time inside GPU calls summarize_offcpu() counts: all of a
// preemption, the asleep part of a sleep; cut to the thread's span.
std::pair<int64_t, int64_t> in_calls_query(const OffCpuRow& o, const ThreadSummary& t) {
  const int64_t s = std::max(o.ts, t.first_ns);
  return {s, std::min(o.preempted ? o.end() : o.end() - o.runq, t.last_ns)};
}

// Off-CPU of one thread over its span: totals, the part inside calls, and who to blame. Asleep
// inside a GPU call is the runtime waiting (for the GPU, the driver, its own helper threads), so
// the waker is blamed there only when it is another thread that calls GPU APIs itself (holding a
// runtime lock, say). Asleep outside calls, whoever woke the thread is what it waited for.
// `in_calls[k - ob]`: of off-CPU row k, the part of in_calls_query() inside the thread's calls.
void summarize_offcpu(const TraceRows& rows, const std::vector<int64_t>& in_calls_of,
                      const IdSet& gpu_tids, size_t ob, size_t oe, ThreadSummary& t) {
  CulpritIndex pre_index, wake_index;
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
    if (o.preempted) {
      const int64_t in_calls = in_calls_of[k - ob];
      t.preempted_in_calls_ns += in_calls;
      ++t.preemptions;
      add_culprit(t.preemptors, pre_index, preemptor_key(o), o, p.preempted, in_calls);
      runq.preempted(o.cpu, preemptor_key(o), p.preempted);
    } else if (p.blocked > 0) {
      const int64_t in_calls = in_calls_of[k - ob];
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
  if (cat == Category::Sync) b |= kSync;
  return b;
}

// The calls of one thread that overlap [a, b) (nested ones too), appended to `out`. `from`: a
// call index at or before the first call starting at or after a (a cursor for rows in time
// order); returns that first call's index.
size_t calls_overlapping(const TraceRows& rows, const Joins& j, const ThreadSummary& t, int64_t a,
                         int64_t b, size_t from, std::vector<uint32_t>& out) {
  const size_t g = gallop_ts(rows.calls, from, t.call_end, a);
  if (b <= a) return g;
  // Before g, the calls still running at a: from the first of them on, all but nested ones that
  // ended inside another by a.
  for (size_t k = first_running_at(rows.calls.data(), j.bits.data(), t.call_begin, g, a); k < g;
       ++k) {
    if (rows.calls[k].end() > a) out.push_back(static_cast<uint32_t>(k));
  }
  for (size_t k = g; k < t.call_end && rows.calls[k].ts < b; ++k)
    out.push_back(static_cast<uint32_t>(k));
  return g;
}

// Time of [x, y) inside the union of calls `idx` (each cut at the span's end): the few calls
// around one off-CPU interval.
int64_t union_in(const TraceRows& rows, const ThreadSummary& t, std::span<const uint32_t> idx,
                 int64_t x, int64_t y) {
  if (y <= x) return 0;
  if (idx.size() == 1) {  // most often: one call around the interval
    const CallRow& c = rows.calls[idx[0]];
    return overlap_ns(c.ts, std::min(c.end(), t.last_ns), x, y);
  }
  std::pair<int64_t, int64_t> small[16];
  std::vector<std::pair<int64_t, int64_t>> big;
  std::pair<int64_t, int64_t>* parts = small;
  if (idx.size() > std::size(small)) {
    big.resize(idx.size());
    parts = big.data();
  }
  size_t n = 0;
  for (const uint32_t i : idx) {
    const CallRow& c = rows.calls[i];
    const int64_t a = std::max(c.ts, x), b = std::min({c.end(), t.last_ns, y});
    if (b > a) parts[n++] = {a, b};
  }
  std::sort(parts, parts + n);
  UnionLength u;
  for (size_t k = 0; k < n; ++k) u.add(parts[k].first, parts[k].second);
  return u.total();
}

void join_calls(const TraceRows& rows, Joins& j, const ThreadSummary& t,
                std::vector<CallOverlap>& out, std::vector<int64_t>& in_calls) {
  auto [ob, oe] = Joins::range(j.offcpu, t.tid);
  auto [sb, se] = Joins::range(j.syscalls, t.tid);
  auto [bb, be] = Joins::range(j.block_io, t.tid);
  int64_t max_io = 0;
  for (size_t k = bb; k < be; ++k) max_io = std::max(max_io, rows.block_io[k].dur);
  std::vector<uint32_t> cand;
  // Off-CPU rows and syscalls come in time order: each search starts where the last one ended.
  size_t cursor = t.call_begin;
  in_calls.assign(oe - ob, 0);
  std::vector<uint32_t> far;
  for (size_t k = ob; k < oe; ++k) {
    const OffCpuRow& o = rows.offcpu[k];
    const size_t first = cand.size();
    cursor = calls_overlapping(rows, j, t, o.ts, o.end(), cursor, cand);
    j.offcpu_meets_call[k] = cand.size() > first;  // this thread's rows only: no race
    // What summarize_offcpu() asks of the row, from the calls just found: they are all the calls
    // overlapping it, unless the query reaches past the row (a run-queue tail recorded negative).
    const auto [x, y] = in_calls_query(o, t);
    if (y <= x) continue;
    if (x >= o.ts && y <= o.end()) {
      in_calls[k - ob] = union_in(rows, t, std::span(cand).subspan(first), x, y);
    } else {
      far.clear();
      calls_overlapping(rows, j, t, x, y, t.call_begin, far);
      in_calls[k - ob] = union_in(rows, t, far, x, y);
    }
  }
  cursor = t.call_begin;
  for (size_t k = sb; k < se; ++k) {
    cursor =
        calls_overlapping(rows, j, t, rows.syscalls[k].ts, rows.syscalls[k].end(), cursor, cand);
  }
  for (size_t k = bb; k < be; ++k) {  // requests may overlap one another: each searched afresh
    calls_overlapping(rows, j, t, rows.block_io[k].ts, rows.block_io[k].end(), t.call_begin, cand);
  }
  std::sort(cand.begin(), cand.end());
  cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
  size_t op = ob, sp = sb;
  for (const uint32_t i : cand) {
    const CallRow& c = rows.calls[i];
    const int64_t end = c.end();
    CallOverlap ov;
    ov.call = i;
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

int64_t CallUnion::covered(int64_t from, int64_t to) {
  if (to <= from) return 0;
  while (!kept_.empty() && kept_.front().e <= from) kept_.pop_front();
  // Nothing kept: every piece made so far ends by `from`, so the calls up to it can be skipped.
  if (kept_.empty() && !done_) calls_.jump(from);
  while (!done_ && (kept_.empty() || kept_.back().s < to)) {
    OuterCalls::Piece p;
    if (!calls_.next(p)) {
      done_ = true;
      break;
    }
    if (p.e > from) kept_.push_back(p);  // else wholly before this and every later query
  }
  int64_t n = 0;
  for (auto it = kept_.begin(); it != kept_.end() && it->s < to; ++it)
    n += overlap_ns(it->s, it->e, from, to);
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
  return StallWalk(rows, *this, tid).stalled_ns(from, to, extra);
}

StallWalk::StallWalk(const TraceRows& rows, const Joins& j, uint32_t tid) : rows_(rows) {
  auto table = [&](const TidRanges& r) {
    const auto [b, e] = Joins::range(r, tid);
    return Table{b, b, e};
  };
  off_ = table(j.offcpu);
  sys_ = table(j.syscalls);
  rec_ = table(j.reclaim);
}

template <class Row, class A>
void StallWalk::add(const std::vector<Row, A>& v, Table& tb, int64_t from, int64_t to) {
  // Each table's rows of one thread are disjoint and sorted, so their ends are sorted too.
  if (from < last_from_) {
    tb.at = static_cast<size_t>(
        std::upper_bound(v.begin() + static_cast<ptrdiff_t>(tb.first),
                         v.begin() + static_cast<ptrdiff_t>(tb.end), from,
                         [](int64_t x, const Row& row) { return x < row.end(); }) -
        v.begin());
  } else {
    while (tb.at < tb.end && v[tb.at].end() <= from) ++tb.at;
  }
  for (size_t k = tb.at; k < tb.end && v[k].ts < to; ++k)
    parts_.emplace_back(std::max(v[k].ts, from), std::min(v[k].end(), to));
}

int64_t StallWalk::stalled_ns(int64_t from, int64_t to,
                              const std::vector<std::pair<int64_t, int64_t>>& extra) {
  if (to <= from) return 0;
  parts_.clear();
  for (const auto& [s, e] : extra)
    if (e > from && s < to) parts_.emplace_back(std::max(s, from), std::min(e, to));
  add(rows_.offcpu, off_, from, to);
  add(rows_.syscalls, sys_, from, to);
  add(rows_.reclaim, rec_, from, to);
  last_from_ = from;
  std::sort(parts_.begin(), parts_.end());
  int64_t ns = 0, cur_s = 0, cur_e = 0;
  bool open = false;
  for (const auto& [s, e] : parts_) {
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
  grow_parallel(j.bits, rows.calls.size());
  j.offcpu_meets_call.assign(rows.offcpu.size(), 1);  // rows of no GPU thread: never asked
  // Calls are sorted by (tid, ts): each thread is one run of them.
  const std::vector<std::pair<size_t, size_t>> runs = tid_runs(rows.calls);
  IdSet gpu_tids;
  for (const auto& [b, e] : runs) gpu_tids.insert(rows.calls[b].tid);
  gpu_tids.seal();
  j.threads.resize(runs.size());
  j.op_counts.resize(runs.size());
  const auto calls_of = [&](size_t k) { return runs[k].second - runs[k].first; };
  parallel_for_largest_first(runs.size(), calls_of, [&](size_t k) {
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
    // Sums in locals, rows through plain pointers: a store to a byte array (bits) may alias
    // anything, so members written in the loop would be reloaded and stored every call.
    const CallRow* const cs = rows.calls.data();
    uint8_t* const bits_of = j.bits.data();
    uint32_t* const ahead = j.queued_ahead.data();
    std::array<int64_t, kCallTimes> own{};
    uint64_t launches = 0;
    // The statistics' counts by API (OpCount), here because this pass reads every call anyway:
    // a pass of their own read every row again (a twentieth of explain at 100 M calls).
    std::vector<OpCount> by_api(rows.apis.size());
    for (const size_t end = runs[k].second; i < end; ++i) {
      const CallRow c = cs[i];
      const ApiMeta& m = rows.api(c.api);
      calls.add(c.ts, std::min(c.end(), cut));
      if (waits_for_gpu(m)) waits.add(c.ts, std::min(c.end(), cut));
      const bool inside = i > t.call_begin && c.ts < last && c.end() <= last;
      last = std::max(last, c.end());
      if (c.api >= by_api.size()) by_api.resize(c.api + 1u);
      OpCount& op = by_api[c.api];
      op.hist.add(c.dur);
      op.nested += inside;
      op.imputed += c.dir == kDurationImputed;
      if (c.ext != kNoExt) {
        const CallExt& e = rows.ext(c);
        op.errors += e.ret != 0 && !(c.cat == Category::Poll && e.ret == kNotReadyRet);
        op.bytes += e.bytes;
      }
      if (inside) continue;  // nested (bits 0): the outer call queued or drained this work
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
    std::vector<OpCount>& counts = j.op_counts[k];
    for (size_t api = 0; api < by_api.size(); ++api) {
      if (by_api[api].hist.count() == 0) continue;  // never called
      counts.push_back(std::move(by_api[api]));
      counts.back().api = static_cast<uint16_t>(api);
    }
    t.own_ns = own;
    t.launches = launches;
    t.call_end = i;
    t.last_ns = cont != rows.span_ends.end() ? cut : std::max(std::min(last, end_at), t.first_ns);
    t.api_ns = calls.total();
    t.waiting_api_ns = waits.total();
  });
  std::vector<std::vector<CallOverlap>> overlaps(j.threads.size());
  const auto off_of = [&](size_t k) { return j.offcpu_work(j.threads[k]); };
  parallel_for_largest_first(j.threads.size(), off_of, [&](size_t k) {
    ThreadSummary& t = j.threads[k];
    std::vector<int64_t> in_calls;  // per off-CPU row of the thread
    join_calls(rows, j, t, overlaps[k], in_calls);
    auto [ob, oe] = Joins::range(j.offcpu, t.tid);
    summarize_offcpu(rows, in_calls, gpu_tids, ob, oe, t);
  });
  for (const auto& v : overlaps) j.overlaps.insert(j.overlaps.end(), v.begin(), v.end());
  // Threads come out in tid order because calls are sorted by (tid, ts); overlaps likewise.
  return j;
}

}  // namespace gpuwhy::analysis
