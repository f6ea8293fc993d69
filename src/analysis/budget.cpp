// SPDX-License-Identifier: Apache-2.0
#include "analysis/budget.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "analysis/cpu_holders.hpp"
#include "analysis/detectors.hpp"  // is_io_syscall
#include "analysis/device_activity.hpp"
#include "analysis/parallel.hpp"

namespace gpuwhy::analysis {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// What sleeping in a syscall means, before the waker is known.
enum class SleepKind : uint8_t {
  Other,    // any other syscall: slow syscall
  Timer,    // nanosleep: a timer, always
  Lock,     // futex, semop: a lock or condition variable (a timer when nobody woke it)
  Poll,     // poll, select, epoll: waiting on descriptors (a timer when nobody woke it)
  Receive,  // read/recv-like: data from a pipe, socket or file
  Io,       // other file and device I/O
  Child,    // wait4/waitid: another process of the job
};

struct SyscallKinds {
  std::unordered_map<uint32_t, SleepKind> by_nr;
  SleepKind of(int16_t nr) const {
    auto it = by_nr.find(static_cast<uint32_t>(nr));
    return it == by_nr.end() ? SleepKind::Other : it->second;
  }
};

SyscallKinds syscall_kinds(const TraceRows& rows) {
  static const std::pair<std::string_view, SleepKind> kNamed[] = {
      {"nanosleep", SleepKind::Timer},
      {"clock_nanosleep", SleepKind::Timer},
      {"futex", SleepKind::Lock},
      {"futex_waitv", SleepKind::Lock},
      {"semop", SleepKind::Lock},
      {"semtimedop", SleepKind::Lock},
      {"flock", SleepKind::Lock},
      {"poll", SleepKind::Poll},
      {"ppoll", SleepKind::Poll},
      {"select", SleepKind::Poll},
      {"pselect6", SleepKind::Poll},
      {"epoll_wait", SleepKind::Poll},
      {"epoll_pwait", SleepKind::Poll},
      {"epoll_pwait2", SleepKind::Poll},
      {"read", SleepKind::Receive},
      {"readv", SleepKind::Receive},
      {"recvfrom", SleepKind::Receive},
      {"recvmsg", SleepKind::Receive},
      {"recvmmsg", SleepKind::Receive},
      {"accept", SleepKind::Receive},
      {"accept4", SleepKind::Receive},
      {"msgrcv", SleepKind::Receive},
      {"mq_timedreceive", SleepKind::Receive},
      {"wait4", SleepKind::Child},
      {"waitid", SleepKind::Child},
  };
  SyscallKinds k;
  for (const auto& [nr, name] : rows.syscall_names) {
    SleepKind kind = SleepKind::Other;
    for (const auto& [n, kd] : kNamed)
      if (name == n) kind = kd;
    if (kind == SleepKind::Other && is_io_syscall(rows, nr)) kind = SleepKind::Io;
    if (kind != SleepKind::Other) k.by_nr[nr] = kind;
  }
  return k;
}

// A disjoint, sorted list of [s, e) pieces of one kind of thing, walked forward once.
struct Piece {
  int64_t s = 0, e = 0;
  uint32_t idx = 0;                   // a row of the table the piece comes from
  bool runnable = false;              // off-CPU pieces: runnable (true) or asleep
  Bucket call = Bucket::ApiOverhead;  // call pieces: the bucket the call's own time goes to
};

// Walks pieces forward, in order, as `Source` makes them (bool next(Piece&): false at the end).
// The sweep asks every walker at every elementary interval, so a walker remembers the piece
// covering the last time asked and its next boundary: until the sweep reaches that boundary,
// asking again is one comparison.
template <class Source>
class Walker {
 public:
  explicit Walker(Source src) : src_(std::move(src)) { have_ = src_.next(p_); }
  // Moves to t (t never goes back).
  void seek(int64_t t) {
    if (t < bound_) return;
    if constexpr (requires(Source & s) { s.jump(t); }) {
      // A source that can skip what ends before t without making it (see CallSource::jump).
      if (have_ && p_.e <= t) {
        src_.jump(t);
        have_ = src_.next(p_);
      }
    }
    while (have_ && p_.e <= t) have_ = src_.next(p_);
    if (!have_) {
      cur_ = nullptr;
      bound_ = kNever;
    } else if (p_.s > t) {
      cur_ = nullptr;
      bound_ = p_.s;
    } else {
      cur_ = &p_;
      bound_ = p_.e;
    }
  }
  // The piece covering the time last sought, if any.
  const Piece* cur() const { return cur_; }
  Source& source() { return src_; }
  // The first boundary (a start or an end) after the time last sought; kNever when none.
  int64_t bound() const { return bound_; }
  const Piece* at(int64_t t) {
    seek(t);
    return cur_;
  }

 private:
  Source src_;
  Piece p_;
  bool have_ = false;
  const Piece* cur_ = nullptr;
  int64_t bound_ = std::numeric_limits<int64_t>::min();
};

// The pieces of a list made beforehand.
struct ListSource {
  const std::vector<Piece>* v;
  size_t i = 0;
  bool next(Piece& p) {
    if (i == v->size()) return false;
    p = (*v)[i++];
    return true;
  }
};

class Cursor : public Walker<ListSource> {
 public:
  explicit Cursor(const std::vector<Piece>& v) : Walker<ListSource>(ListSource{&v}) {}
};

// Rows of one thread from a (tid, ts)-sorted table, clipped to [from, to), as pieces. Rows of
// one thread in these tables never overlap; a stray overlap is cut so pieces stay disjoint.
template <class Row, class A>
std::vector<Piece> pieces_of(const std::vector<Row, A>& v, std::pair<size_t, size_t> r,
                             int64_t from, int64_t to) {
  std::vector<Piece> out;
  out.reserve(r.second - r.first);
  int64_t last_end = from;
  for (size_t k = r.first; k < r.second; ++k) {
    const int64_t s = std::max({v[k].ts, from, last_end});
    const int64_t e = std::min(v[k].end(), to);
    if (e <= s) continue;
    out.push_back({s, e, static_cast<uint32_t>(k)});
    last_end = e;
  }
  return out;
}

// Off-CPU rows as an asleep piece and a runnable piece (the run-queue tail, or all of a
// preemption), made as the sweep asks: written out first, a busy thread's pieces cost more in
// page faults than the sweep does.
class OffSource {
 public:
  OffSource(const TraceRows& rows, std::pair<size_t, size_t> r, int64_t from, int64_t to)
      : rows_(&rows), k_(r.first), end_(r.second), to_(to), last_end_(from) {}
  bool next(Piece& p) {
    while (head_ == count_) {
      if (k_ >= end_) return false;
      head_ = count_ = 0;
      const size_t k = k_++;
      const OffCpuRow& o = rows_->offcpu[k];
      const int64_t runq = o.preempted ? o.dur : std::clamp<int64_t>(o.runq, 0, o.dur);
      const int64_t woken = o.end() - runq;
      add(o.ts, woken, k, false);
      add(woken, o.end(), k, true);
    }
    p = buf_[head_++];
    return true;
  }

 private:
  void add(int64_t s, int64_t e, size_t k, bool runnable) {
    s = std::max(s, last_end_);
    e = std::min(e, to_);
    if (e <= s) return;
    buf_[count_++] = {s, e, static_cast<uint32_t>(k), runnable};
    last_end_ = e;
  }
  const TraceRows* rows_;
  size_t k_, end_;
  int64_t to_, last_end_;
  Piece buf_[2];
  int head_ = 0, count_ = 0;
};

Bucket bucket_of(CallTime k) {
  switch (k) {
    case CallTime::GpuWait:
      return Bucket::GpuWait;
    case CallTime::Transfer:
      return Bucket::Transfer;
    case CallTime::Alloc:
      return Bucket::Alloc;
    case CallTime::Api:
      break;
  }
  return Bucket::ApiOverhead;
}

// A poll that found the work not done (rows.hpp, kNotReadyRet).
bool not_ready_poll(const TraceRows& rows, const CallRow& c) {
  return c.cat == Category::Poll && c.ext != kNoExt && rows.ext(c).ret == kNotReadyRet;
}

// The bucket a call's own time goes to, from its Joins::bits.
Bucket call_bucket(const TraceRows& rows, uint8_t bits, const CallRow& c,
                   uint64_t small_copy_bytes) {
  // A poll queues, drains and moves nothing: its byte alone says when the row need not be read
  // (a launch's never is).
  if (bits == call_bits::kOuter && not_ready_poll(rows, c)) return Bucket::Polling;
  const uint64_t bytes = (bits & call_bits::kCopy) ? rows.ext(c).bytes : 0;
  return bucket_of(call_time(bits, bytes, small_copy_bytes));
}

// The thread's outermost calls as pieces (OuterCalls), each with the bucket its time goes to.
class CallSource {
 public:
  CallSource(const TraceRows& rows, const Joins& j, const ThreadSummary& t,
             uint64_t small_copy_bytes)
      : rows_(&rows), j_(&j), calls_(rows, j, t), small_copy_(small_copy_bytes) {}
  bool next(Piece& p) {
    OuterCalls::Piece c;
    if (!calls_.next(c)) return false;
    const uint8_t bits = j_->bits[c.idx];
    p = {c.s, c.e, c.idx, false, call_bucket(*rows_, bits, rows_->calls[c.idx], small_copy_)};
    return true;
  }
  void jump(int64_t t) { calls_.jump(t); }
  void hint(size_t first) { calls_.hint(first); }

 private:
  const TraceRows* rows_;
  const Joins* j_;
  OuterCalls calls_;
  uint64_t small_copy_;
};

// GPU-idle stretches, and for each thread that reads them where in its calls to start looking
// for the ones inside each stretch: the search that found the stretch passed there already, and
// a second search from the thread's previous stretch, ~100 launches back, cost more than the
// sweep it serves.
struct IdleList {
  std::vector<Piece> pieces;
  std::vector<uint32_t> tids;  // the threads the hints are for
  std::vector<size_t> hints;   // [piece * tids.size() + thread]: a call index at or before the
                               // first call of that thread starting at or after the piece
  size_t hint(size_t piece, size_t thread) const { return hints[piece * tids.size() + thread]; }
  size_t thread_of(uint32_t tid) const {
    return static_cast<size_t>(std::find(tids.begin(), tids.end(), tid) - tids.begin());
  }
};

// The times a thread had no GPU work queued: from the end of a call that drained its queue to
// the start of its next call that queued work (clipped to `clip`). Only enqueues and drains
// change the state, and only an enqueue after a drain or a drain after an enqueue needs the row:
// a byte per launch otherwise.
IdleList thread_idle(const TraceRows& rows, const Joins& j, const ThreadSummary& t) {
  using namespace call_bits;
  IdleList out;
  out.tids = {t.tid};
  const int64_t clip = t.last_ns;
  int64_t idle_from = -1;  // end of the drain that emptied the queue; -1 while work is queued
  size_t drain = 0;        // its index: it starts before the stretch
  auto add = [&](int64_t e) {
    out.pieces.push_back({idle_from, e, 0});
    out.hints.push_back(drain);
  };
  for (size_t i = t.call_begin; i < t.call_end; ++i) {
    const uint8_t bits = j.bits[i];
    if (idle_from < 0) {
      if (bits & kDrains) {
        idle_from = rows.calls[i].end();
        drain = i;
      }
      continue;
    }
    if (!(bits & kEnqueues)) continue;
    const CallRow& c = rows.calls[i];
    // A drain that ended inside a later call (overlapping calls) makes no piece.
    if (c.ts > idle_from && std::min(c.ts, clip) > idle_from) add(std::min(c.ts, clip));
    idle_from = (bits & kDrains) ? c.end() : -1;
    drain = i;
  }
  if (idle_from >= 0 && idle_from < clip) add(clip);
  return out;
}

// The GPU-idle stretches of a process as its device reported them (trace --gpu-activity): the
// gaps between its kernels, copies and memsets over its GPU threads' spans, the truth the calls'
// inference above estimates. Hints per thread: its first call starting at or after the piece
// (calls_ are (tid, ts)-sorted), found by search: a stretch may start inside a launch.
IdleList measured_idle(const TraceRows& rows, const std::vector<const ThreadSummary*>& threads) {
  IdleList out;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (const ThreadSummary* t : threads) {
    lo = std::min(lo, t->first_ns);
    hi = std::max(hi, t->last_ns);
    out.tids.push_back(t->tid);
  }
  const uint32_t pid = threads.front()->pid;
  for (const auto& gap : gaps_of(device_busy(rows, pid, lo, hi), lo, hi)) {
    // Not a structured binding: clang 14 (the sanitizer build) cannot capture one in a lambda.
    const int64_t s = gap.first;
    out.pieces.push_back({s, gap.second, 0});
    for (const ThreadSummary* t : threads) {
      const auto b = rows.calls.begin();
      const auto at = std::partition_point(b + static_cast<std::ptrdiff_t>(t->call_begin),
                                           b + static_cast<std::ptrdiff_t>(t->call_end),
                                           [s](const CallRow& c) { return c.ts < s; });
      out.hints.push_back(static_cast<size_t>(at - b));
    }
  }
  return out;
}

// The GPU-idle stretches of a process with several GPU-calling threads, over all their
// outermost calls in time order: a sync on one thread empties the queue the others fill, and a
// launch from any of them fills it (PyTorch queues the backward pass from its autograd thread,
// the forward pass and the syncs from the main thread, on one stream).
IdleList process_idle(const TraceRows& rows, const Joins& j,
                      const std::vector<const ThreadSummary*>& threads) {
  // thread_idle's state machine over all the threads' outermost calls in (ts, index) order,
  // without merging the millions of launches: the queue empties at a drain (a sync, a few per
  // step) and fills at the first enqueue after it on any thread, which a search forward from
  // where the previous one stopped finds in each thread's calls (sorted by ts).
  using Key = std::pair<int64_t, size_t>;  // (ts, call index): the order of the calls
  struct Drain {
    Key key;
    int64_t end;
  };
  std::vector<Drain> drains;
  int64_t clip = 0;
  // In a window of a longer analysis (TraceRows::span_ends) the calls after the window are not
  // here: a stretch still open at its end closes at the first thread's next call, as one
  // analysis of the whole would close it at the next enqueue of any of them.
  int64_t next_call = std::numeric_limits<int64_t>::max();
  for (const ThreadSummary* t : threads) {
    clip = std::max(clip, t->last_ns);
    if (auto it = rows.span_ends.find(t->tid); it != rows.span_ends.end())
      next_call = std::min(next_call, it->second);
    for (size_t i = t->call_begin; i < t->call_end; ++i)
      if (j.bits[i] & call_bits::kDrains)
        drains.push_back({{rows.calls[i].ts, i}, rows.calls[i].end()});
  }
  std::sort(drains.begin(), drains.end(),
            [](const Drain& a, const Drain& b) { return a.key < b.key; });
  // Per thread, the first call not before the last `after` asked: `after` only grows.
  std::vector<size_t> from(threads.size());
  for (size_t k = 0; k < threads.size(); ++k) from[k] = threads[k]->call_begin;
  // The first outermost enqueue after `after`, over every thread; {max, 0} when none.
  auto next_enqueue = [&](Key after) {
    Key best{std::numeric_limits<int64_t>::max(), 0};
    for (size_t k = 0; k < threads.size(); ++k) {
      const ThreadSummary* t = threads[k];
      // Forward a call at a time first: between two syncs a thread makes tens of calls, read
      // in order from memory faster than a search jumping over them.
      size_t i = from[k];
      const size_t near = std::min(i + 64, t->call_end);
      while (i < near && rows.calls[i].ts < after.first) ++i;
      if (i == near) i = gallop_ts(rows.calls, i, t->call_end, after.first);
      from[k] = i;
      for (; i < t->call_end; ++i) {
        if (!(j.bits[i] & call_bits::kEnqueues)) continue;
        const Key key{rows.calls[i].ts, i};
        if (key <= after) continue;
        best = std::min(best, key);
        break;
      }
    }
    return best;
  };
  IdleList out;
  for (const ThreadSummary* t : threads) out.tids.push_back(t->tid);
  // next_enqueue() left each thread's `from` at its first call not before the drain's start.
  auto add = [&](int64_t s, int64_t e) {
    if (e <= s) return;
    out.pieces.push_back({s, e, 0});
    out.hints.insert(out.hints.end(), from.begin(), from.end());
  };
  for (size_t d = 0; d < drains.size();) {
    const Drain& dr = drains[d];
    const Key fill = next_enqueue(dr.key);
    if (fill.first == std::numeric_limits<int64_t>::max()) {  // empty to the end
      add(dr.end, std::min(clip, next_call));
      break;
    }
    // A drain that ended inside a later call (overlapping calls) makes no piece.
    if (fill.first > dr.end) add(dr.end, std::min(fill.first, clip));
    // Drains while the queue was empty change nothing: the next one that counts follows the fill.
    while (d < drains.size() && drains[d].key < fill) ++d;
  }
  return out;
}

using CallCursor = Walker<CallSource>;
using OffCursor = Walker<OffSource>;

// Adds ns to a task in a bucket's list.
struct TaskTally {
  std::unordered_map<uint64_t, size_t> index;
  // The task added last: the same one usually comes again (a busy neighbour preempts a thread
  // thousands of times), and comparing a key costs less than hashing it.
  uint64_t last_key = 0;
  size_t last = SIZE_MAX;
  void add(std::vector<Culprit>& v, uint64_t key, uint32_t pid, uint32_t tid, uint32_t comm,
           int64_t ns, bool new_interval) {
    if (last == SIZE_MAX || key != last_key) {
      auto [it, fresh] = index.try_emplace(key, v.size());
      if (fresh) v.push_back(Culprit{pid, tid, comm});
      last_key = key;
      last = it->second;
    }
    Culprit& c = v[last];
    if (comm != 0) c.comm = comm;  // rows are in time order: the latest name wins
    c.ns += ns;
    if (new_interval) ++c.count;
  }
};

// A runnable piece of an off-CPU row, with the part of it when the GPU queue was empty: the
// sweep sees it whole, then exact_holders() divides it among the tasks that held the CPU.
struct RunnableWait {
  Piece piece;
  int64_t idle_ns = 0;
};

class ThreadBudgeter {
 public:
  ThreadBudgeter(const TraceRows& rows, const Joins& j, const SyscallKinds& kinds,
                 const IdSet& gpu_tids, const IdSet& user_comms, const CpuHolders& holders,
                 const std::unordered_map<uint32_t, IdleList>& shared_idle,
                 const std::unordered_map<uint32_t, IdleList>& measured_idle,
                 const std::unordered_map<uint32_t, std::vector<uint32_t>>& siblings,
                 uint64_t small_copy_bytes, const PhaseMap& phases)
      : rows_(rows),
        holders_(holders),
        j_(j),
        kinds_(kinds),
        gpu_tids_(gpu_tids),
        user_comms_(user_comms),
        shared_idle_(shared_idle),
        measured_idle_(measured_idle),
        phases_(phases),
        siblings_(siblings),
        small_copy_(small_copy_bytes),
        // Off-CPU rows say which syscall a sleep began in since ABI 3 (0: a hand-built trace).
        syscall_known_(rows.session.abi_version == 0 || rows.session.abi_version >= 3) {}

  ThreadBudget run(const ThreadSummary& t) {
    ThreadBudget b;
    b.pid = t.pid;
    b.tid = t.tid;
    b.first_ns = t.first_ns;
    b.last_ns = t.last_ns;
    own_pid_ = t.pid;
    own_tid_ = t.tid;
    const std::pair<size_t, size_t> off_rows = Joins::range(j_.offcpu, t.tid);
    const std::vector<Piece> sys =
        pieces_of(rows_.syscalls, Joins::range(j_.syscalls, t.tid), t.first_ns, t.last_ns);
    const std::vector<Piece> rec =
        pieces_of(rows_.reclaim, Joins::range(j_.reclaim, t.tid), t.first_ns, t.last_ns);
    runq_guess(off_rows);

    IdleList own_idle;
    const IdleList& idle_list = idle_of(t, own_idle, b);
    const std::vector<Piece>& idle = idle_list.pieces;
    polling_pieces(t);
    on_cpu_split(b, t, idle_list);
    off_cpu_split(b, t, off_rows, sys, rec, idle);
    gil_holders(b);
    for (const Piece& p : idle) {
      const int64_t s = std::max(p.s, t.first_ns), e = std::min(p.e, t.last_ns);
      if (e - s >= ThreadBudget::kLongIdleNs) b.long_idle.emplace_back(s, e);
    }
    phase_idle(b, t, idle);
    sampled_kernel(b, t, off_rows, sys, idle);
    b.exact_holders = holders_.recorded();
    for (auto& v : b.by_task)
      std::sort(v.begin(), v.end(), [](const Culprit& a, const Culprit& c) {
        return a.ns != c.ns ? a.ns > c.ns : a.tid != c.tid ? a.tid < c.tid : a.pid < c.pid;
      });
    for (size_t k = 0; k < kBuckets; ++k) {
      auto& v = b.by_syscall[k];
      v.assign(syscalls_[k].begin(), syscalls_[k].end());
      std::sort(v.begin(), v.end(), [](auto& a, auto& c) {
        return a.second != c.second ? a.second > c.second : a.first < c.first;
      });
      syscalls_[k].clear();
    }
    for (auto& tally : tallies_) tally = TaskTally{};
    poll_gaps_.clear();
    poll_own_ns_ = 0;
    return b;
  }

 private:
  // The span's part before and after its process's steady state, and its GPU-idle time there.
  void phase_idle(ThreadBudget& b, const ThreadSummary& t, const std::vector<Piece>& idle) const {
    b.steady_from = b.first_ns;
    b.steady_to = b.last_ns;
    const auto it = phases_.find(b.pid);
    if (it == phases_.end()) return;
    const ProcessPhases& p = it->second;
    b.steady_rate = p.steady_rate;
    if (p.start_up) b.steady_from = std::clamp(p.steady_from, b.first_ns, b.last_ns);
    if (p.tail) b.steady_to = std::clamp(p.steady_to, b.steady_from, b.last_ns);
    int64_t first_enqueue = b.steady_from;
    for (size_t i = t.call_begin; i < t.call_end; ++i) {
      if (j_.bits[i] & call_bits::kEnqueues) {
        first_enqueue = std::min(first_enqueue, rows_.calls[i].ts);
        break;
      }
    }
    b.start_up_unqueued_ns = first_enqueue - b.first_ns;
    for (const Piece& q : idle) {
      b.start_up_idle_ns += overlap_ns(q.s, q.e, b.first_ns, b.steady_from);
      b.start_up_unqueued_ns -= overlap_ns(q.s, q.e, b.first_ns, first_enqueue);
      b.tail_idle_ns += overlap_ns(q.s, q.e, b.steady_to, b.last_ns);
    }
  }

  // The thread's GPU-idle stretches, from either source: the device's own records of its
  // process (measured_idle) where the trace has them, else inferred from the calls: its
  // process's (process_idle) when it shares the queue with other GPU threads, else its own, made
  // into `own`. With the device's, the calls' estimate is kept in b.host_idle_ns.
  const IdleList& idle_of(const ThreadSummary& t, IdleList& own, ThreadBudget& b) const {
    const IdleList* host = nullptr;
    if (auto it = shared_idle_.find(t.pid); it != shared_idle_.end()) {
      host = &it->second;
    } else {
      own = thread_idle(rows_, j_, t);
      host = &own;
    }
    for (const Piece& p : host->pieces)
      b.host_idle_ns += std::max<int64_t>(0, std::min(p.e, t.last_ns) - std::max(p.s, t.first_ns));
    auto m = measured_idle_.find(t.pid);
    if (m == measured_idle_.end()) return *host;
    b.idle_measured = true;
    return m->second;
  }

  // Does the thread make polls at all? Its calls counted by API say, without reading the calls.
  bool polls(const ThreadSummary& t) const {
    const size_t k = static_cast<size_t>(&t - j_.threads.data());
    if (k >= j_.op_counts.size()) return false;
    for (const OpCount& op : j_.op_counts[k])
      if (rows_.api(op.api).cat == Category::Poll) return true;
    return false;
  }

  // The thread's polling (Bucket::Polling): the own time of its outermost polls that returned
  // not ready (which compute_joins summed as API overhead), and the gaps from the end of such a
  // poll to the start of its next outermost call when that is a poll too: the loop between two
  // polls, spinning on the CPU for the GPU. Only a thread that polls walks its calls.
  void polling_pieces(const ThreadSummary& t) {
    poll_gaps_.clear();
    poll_own_ns_ = 0;
    if (!polls(t)) return;
    OuterCalls calls(rows_, j_, t);
    bool after_not_ready = false;
    int64_t prev_end = 0;
    for (OuterCalls::Piece p; calls.next(p);) {
      const CallRow& c = rows_.calls[p.idx];
      if (c.cat == Category::Poll && after_not_ready && p.s > prev_end)
        poll_gaps_.push_back({prev_end, p.s, p.idx});
      after_not_ready = not_ready_poll(rows_, c);
      if (after_not_ready) poll_own_ns_ += p.e - p.s;
      prev_end = p.e;
    }
  }

  // The span as if the thread never left the CPU: its calls' own time to their buckets (summed
  // by compute_joins), the rest to host work, or to refill gap while its GPU queue was empty;
  // and each bucket's GPU-idle part. Only the calls inside GPU-idle stretches are read here
  // (few: the queue fills again at the next launch), not the millions of launches.
  void on_cpu_split(ThreadBudget& b, const ThreadSummary& t, const IdleList& idle) {
    int64_t in_calls = 0;
    for (size_t k = 0; k < kCallTimes; ++k) {
      b.ns[static_cast<size_t>(bucket_of(static_cast<CallTime>(k)))] += t.own_ns[k];
      in_calls += t.own_ns[k];
    }
    // The not-ready polls' own time was summed as API overhead.
    b.ns[static_cast<size_t>(Bucket::ApiOverhead)] -= poll_own_ns_;
    b.ns[static_cast<size_t>(Bucket::Polling)] += poll_own_ns_;
    int64_t gaps = 0;
    for (const Piece& g : poll_gaps_) gaps += g.e - g.s;
    int64_t refill = 0, gap_idle = 0;
    CallCursor cc(CallSource(rows_, j_, t, small_copy_));
    Cursor pc(poll_gaps_);
    const size_t me = idle.thread_of(t.tid);
    for (size_t i = 0; i < idle.pieces.size(); ++i) {
      const Piece& p = idle.pieces[i];
      cc.source().hint(idle.hint(i, me));
      const int64_t to = std::min(p.e, t.last_ns);
      for (int64_t at = std::max(p.s, t.first_ns); at < to;) {
        cc.seek(at);
        pc.seek(at);
        const int64_t next = std::min({cc.bound(), pc.bound(), to});
        if (cc.cur()) {
          b.idle_ns[static_cast<size_t>(cc.cur()->call)] += next - at;
        } else if (pc.cur()) {
          gap_idle += next - at;
        } else {
          refill += next - at;
        }
        at = next;
      }
    }
    b.ns[static_cast<size_t>(Bucket::RefillGap)] += refill;
    b.idle_ns[static_cast<size_t>(Bucket::RefillGap)] += refill;
    b.ns[static_cast<size_t>(Bucket::Polling)] += gaps;
    b.idle_ns[static_cast<size_t>(Bucket::Polling)] += gap_idle;
    b.ns[static_cast<size_t>(Bucket::HostWork)] += t.span_ns() - in_calls - refill - gaps;
  }

  // Where the thread was off the CPU, in a slow syscall or in reclaim, classify() decides, and
  // the time moves there from the bucket on_cpu_split() gave it. The sweep visits only those
  // times: the calls' cursor jumps over the millions of launches between them.
  void off_cpu_split(ThreadBudget& b, const ThreadSummary& t, std::pair<size_t, size_t> off_rows,
                     const std::vector<Piece>& sys, const std::vector<Piece>& rec,
                     const std::vector<Piece>& idle) {
    CallCursor cc(CallSource(rows_, j_, t, small_copy_));
    Cursor ic(idle), pc(poll_gaps_);
    OffSource off(rows_, off_rows, t.first_ns, t.last_ns);
    uint32_t last_off = UINT32_MAX;
    if (sys.empty() && rec.empty()) {
      // Only off-CPU rows (the syscall family is off by default, reclaim is rare): walk their
      // pieces directly, each cut only by its calls and GPU-idle stretches.
      for (Piece o; off.next(o);) {
        for (int64_t at = o.s; at < o.e;)
          at = split_at(b, at, o.e, &o, nullptr, nullptr, cc, ic, pc, last_off);
      }
    } else {
      Walker<OffSource> oc(std::move(off));
      Cursor sc(sys), rc(rec);
      for (int64_t at = t.first_ns; at < t.last_ns;) {
        oc.seek(at);
        sc.seek(at);
        rc.seek(at);
        const int64_t other =
            std::min(std::min(oc.bound(), sc.bound()), std::min(rc.bound(), t.last_ns));
        if (!oc.cur() && !sc.cur() && !rc.cur()) {  // on the CPU: on_cpu_split() counted it
          at = other;
          continue;
        }
        at = split_at(b, at, other, oc.cur(), sc.cur(), rc.cur(), cc, ic, pc, last_off);
      }
    }
    if (wait_.piece.e > wait_.piece.s) exact_holders(b, wait_);
    wait_ = {};
  }

  // One step of off_cpu_split(): from `at` to the next boundary of the calls, the GPU-idle
  // stretches or `other` (the next off-CPU, syscall or reclaim boundary), classified and moved
  // out of the bucket on_cpu_split() gave it. Returns where it stopped.
  int64_t split_at(ThreadBudget& b, int64_t at, int64_t other, const Piece* o, const Piece* sys,
                   const Piece* rec, CallCursor& cc, Cursor& ic, Cursor& pc, uint32_t& last_off) {
    // Off the CPU where no call of the thread reaches (most of a busy thread's off-CPU time
    // is between its calls: compute_joins marked those rows), the calls need not be sought.
    const bool calls_here = !o || j_.offcpu_meets_call[o->idx] || sys || rec;
    if (calls_here) cc.seek(at);
    const Piece* call = calls_here ? cc.cur() : nullptr;
    ic.seek(at);
    pc.seek(at);
    const int64_t to = std::min({calls_here ? cc.bound() : kNever, ic.bound(), pc.bound(), other});
    const int64_t ns = to - at;
    const bool fresh = o && o->idx != last_off;
    if (o) last_off = o->idx;
    const bool gap = ic.cur() != nullptr;
    if (holders_.recorded()) {
      // A throttled wait is the quota's, not the CPU holders': classify() gives it whole.
      const bool waiting = o && o->runnable && !rows_.offcpu[o->idx].throttled;
      const bool had = wait_.piece.e > wait_.piece.s;
      if (!had || !waiting || wait_.piece.idx != o->idx) {
        if (had) exact_holders(b, wait_);  // a wait seen whole
        wait_ = {};
        if (waiting) wait_.piece = *o;
      }
      if (gap && waiting) wait_.idle_ns += ns;
    }
    // Between two polls (polling_pieces): on_cpu_split() counted it as polling.
    const bool polling = !call && pc.cur() != nullptr;
    const Bucket counted = call      ? call->call
                           : polling ? Bucket::Polling
                           : gap     ? Bucket::RefillGap
                                     : Bucket::HostWork;
    const Bucket bk = classify(b, call, o, sys, rec, ns, fresh, gap, polling);
    if (bk != counted) {
      b.ns[static_cast<size_t>(counted)] -= ns;
      b.ns[static_cast<size_t>(bk)] += ns;
      if (gap) {
        b.idle_ns[static_cast<size_t>(counted)] -= ns;
        b.idle_ns[static_cast<size_t>(bk)] += ns;
      }
    }
    return to;
  }

  // Another thread of its own process that makes GPU calls woke it.
  bool gpu_sibling(const OffCpuRow& o) const {
    return o.other_tid != own_tid_ && o.other_pid == own_pid_ && gpu_tids_.count(o.other_tid) > 0;
  }

  // A task that woke the thread and can be blamed: not itself, not the kernel's own.
  bool user_waker(const OffCpuRow& o) const {
    if (o.other_pid == 0 || o.other_tid == own_tid_) return false;
    return user_comms_.count(o.other_comm) > 0;
  }

  void blame(ThreadBudget& b, Bucket bk, uint32_t pid, uint32_t tid, uint32_t comm, int64_t ns,
             bool fresh, bool by_thread) {
    const size_t k = static_cast<size_t>(bk);
    const uint64_t key = by_thread ? (uint64_t{pid} << 32 | tid) : culprit_key(pid, tid, own_pid_);
    tallies_[k].add(b.by_task[k], key, pid, tid, comm, ns, fresh);
  }

  Bucket asleep(ThreadBudget& b, Bucket bk, const OffCpuRow& o, int64_t ns, bool fresh,
                bool blame_waker) {
    if (syscall_known_ && o.syscall >= 0)
      syscalls_[static_cast<size_t>(bk)][static_cast<uint32_t>(o.syscall)] += ns;
    if (blame_waker) blame(b, bk, o.other_pid, o.other_tid, o.other_comm, ns, fresh, true);
    return bk;
  }

  // A GIL wait: the sibling that woke it handed the interpreter over; a wait that timed out is
  // given to the threads running meanwhile once the sweep is done (gil_holders()).
  Bucket gil_wait(ThreadBudget& b, uint32_t idx, const OffCpuRow& o, int64_t ns, bool fresh) {
    if (o.other_pid == own_pid_ && o.other_tid != own_tid_ && o.other_tid != 0)
      blame(b, Bucket::Gil, o.other_pid, o.other_tid, o.other_comm, ns, fresh, true);
    else
      gil_timed_out_.emplace_back(idx, ns);
    return Bucket::Gil;
  }

  // The timed-out GIL waits' holders: the other threads of the process that the CPU samples
  // found running user code during each wait (a thread running Python holds the GIL), each given
  // the wait in proportion to its samples. A wait with none (the holder was preempted itself, or
  // fell between samples) goes to the holders named so far, in proportion: the thread that
  // hands the GIL over and runs Python meanwhile is the one that holds it the rest of the time.
  void gil_holders(ThreadBudget& b) {
    auto sibs = siblings_.find(own_pid_);
    if (sibs == siblings_.end()) {
      gil_timed_out_.clear();
      return;
    }
    std::vector<std::pair<uint32_t, int64_t>> counts;  // (tid, samples) in one wait
    int64_t unsampled = 0;
    for (const auto& [idx, ns] : gil_timed_out_) {
      const OffCpuRow& o = rows_.offcpu[idx];
      counts.clear();
      int64_t total = 0;
      for (uint32_t tid : sibs->second) {
        if (tid == own_tid_) continue;
        auto [sb, se] = Joins::range(j_.cpu_samples, tid);
        const auto first = rows_.cpu_samples.begin() + static_cast<ptrdiff_t>(sb);
        const auto last = rows_.cpu_samples.begin() + static_cast<ptrdiff_t>(se);
        auto it = std::lower_bound(first, last, o.ts,
                                   [](const CpuSampleRow& s, int64_t t) { return s.ts < t; });
        int64_t n = 0;
        for (; it != last && it->ts < o.end(); ++it) n += !it->kernel;
        if (n > 0) counts.emplace_back(tid, n);
        total += n;
      }
      if (total == 0) unsampled += ns;
      for (const auto& [tid, n] : counts)
        blame(b, Bucket::Gil, own_pid_, tid, 0, ns * n / total, true, true);
    }
    gil_timed_out_.clear();
    const std::vector<Culprit> named = b.by_task[static_cast<size_t>(Bucket::Gil)];
    int64_t named_ns = 0;
    for (const Culprit& c : named) named_ns += c.ns;
    if (unsampled <= 0 || named_ns <= 0) return;
    for (const Culprit& c : named)
      blame(b, Bucket::Gil, c.pid, c.tid, c.comm,
            static_cast<int64_t>(static_cast<double>(unsampled) * static_cast<double>(c.ns) /
                                 static_cast<double>(named_ns)),
            false, true);
  }

  // The precedence, decided once: off the CPU beats everything (runnable, then asleep by what
  // it slept in and who woke it); on the CPU, reclaim, then a slow syscall outside GPU calls,
  // then the GPU call it is in, then its own host work.
  // `polling`: on the CPU between two polls (polling_pieces), which is waiting for the GPU.
  Bucket classify(ThreadBudget& b, const Piece* call, const Piece* off, const Piece* sys,
                  const Piece* rec, int64_t ns, bool fresh, bool idle, bool polling) {
    if (off && off->runnable) return runnable(b, rows_.offcpu[off->idx], ns, fresh);
    if (off) {
      const OffCpuRow& o = rows_.offcpu[off->idx];
      if (call) {
        // Asleep inside a GPU call is the runtime waiting, unless another GPU-calling thread of
        // its own process woke it: a runtime lock that thread held. (Another process's rank
        // waking it inside a collective is the collective's barrier: the straggler's chain.)
        if (gpu_sibling(o)) return asleep(b, Bucket::BlockedLock, o, ns, fresh, true);
        return call->call;
      }
      if (rec) return Bucket::Reclaim;
      // Waiting to take the interpreter back (after a GPU call that released it): before the
      // sibling rules, as a GPU-calling sibling that holds the GIL is what the wait is for.
      if (o.gil) return gil_wait(b, off->idx, o, ns, fresh);
      const bool user = user_waker(o);
      const int16_t nr = syscall_known_ ? o.syscall : int16_t{-1};
      const SleepKind kind = nr < 0 ? SleepKind::Other : kinds_.of(nr);
      // Outside GPU calls, waiting (on a lock, a condition variable, a pipe) until another
      // GPU-calling thread of the process woke it: the work was handed to that thread, which
      // dispatched meanwhile (PyTorch's main thread in loss.backward() while its autograd thread
      // launches the backward pass; the autograd thread waiting for the next one). Whatever held
      // the job up then is in that thread's own budget; counting the wait too would count it
      // twice and call a hand-over a lock.
      if (gpu_sibling(o) && kind != SleepKind::Timer && kind != SleepKind::Io &&
          (kind != SleepKind::Other || nr < 0))
        return asleep(b, Bucket::Delegated, o, ns, fresh, true);
      switch (kind) {
        case SleepKind::Timer:
          return asleep(b, Bucket::Sleep, o, ns, fresh, false);
        case SleepKind::Lock:
          return user ? asleep(b, Bucket::BlockedLock, o, ns, fresh, true)
                      : asleep(b, Bucket::Sleep, o, ns, fresh, false);
        case SleepKind::Poll:
          return user ? asleep(b, Bucket::Handoff, o, ns, fresh, true)
                      : asleep(b, Bucket::Sleep, o, ns, fresh, false);
        case SleepKind::Receive:
        case SleepKind::Child:
          if (user) return asleep(b, Bucket::Handoff, o, ns, fresh, true);
          return asleep(b, Bucket::Io, o, ns, fresh, o.other_pid != 0);
        case SleepKind::Io:
          return asleep(b, Bucket::Io, o, ns, fresh, o.other_pid != 0);
        case SleepKind::Other:
          if (nr >= 0) return asleep(b, Bucket::Syscall, o, ns, fresh, false);
          // No syscall recorded (an older trace, or a page fault): the waker says what it was.
          return user ? asleep(b, Bucket::BlockedLock, o, ns, fresh, true)
                      : asleep(b, Bucket::Unexplained, o, ns, fresh, false);
      }
    }
    if (rec) return Bucket::Reclaim;
    if (sys && !call) {
      const SyscallRow& s = rows_.syscalls[sys->idx];
      const SleepKind k = kinds_.of(static_cast<int16_t>(s.nr));
      const Bucket bk =
          k == SleepKind::Io || k == SleepKind::Receive ? Bucket::Io : Bucket::Syscall;
      syscalls_[static_cast<size_t>(bk)][s.nr] += ns;
      return bk;
    }
    if (call) return call->call;
    if (polling) return Bucket::Polling;
    return idle ? Bucket::RefillGap : Bucket::HostWork;
  }

  // What the CPU samples say of the time counted as host work, outside GPU calls: a sample in
  // kernel code but in no syscall is the kernel working for the thread (page faults, mostly),
  // and its sampling period moves to KernelWork. Without the syscall family, a sample inside a
  // syscall that no syscall row holds (one alone: prepare_rows places only two samples, or a
  // sample beside a sleep) likewise stands for a period in that syscall and moves to I/O or a
  // slow syscall. Estimates, like every sampled figure. The samples' fault counters give the
  // faults over the span.
  void sampled_kernel(ThreadBudget& b, const ThreadSummary& t, std::pair<size_t, size_t> off_rows,
                      const std::vector<Piece>& sys, const std::vector<Piece>& idle) {
    const bool lone_syscalls = rows_.syscalls_from_scheduler();
    CallCursor cc(CallSource(rows_, j_, t, small_copy_));
    Cursor ic(idle);
    OffCursor oc(OffSource(rows_, off_rows, t.first_ns, t.last_ns));
    Cursor sc(sys), pc(poll_gaps_);
    const CpuSampleRow* first_faults = nullptr;
    const CpuSampleRow* last_faults = nullptr;
    std::unordered_map<int32_t, int64_t> sites;
    auto [sb, se] = Joins::range(j_.cpu_samples, t.tid);
    for (size_t k = sb; k < se; ++k) {
      const CpuSampleRow& smp = rows_.cpu_samples[k];
      if (smp.ts < t.first_ns || smp.ts >= t.last_ns) continue;
      if (smp.min_flt >= 0) {
        if (!first_faults) first_faults = &smp;
        last_faults = &smp;
      }
      const bool faulting = smp.kernel && smp.syscall < 0;
      if (!faulting && (smp.syscall < 0 || !lone_syscalls)) continue;
      // Between two polls the time stays polling: the kernel working for the spin loop, or a
      // syscall of its own (sched_yield), is part of the wait.
      if (cc.at(smp.ts) || oc.at(smp.ts) || sc.at(smp.ts) || pc.at(smp.ts)) continue;
      const bool gap = ic.at(smp.ts) != nullptr;
      const size_t from = static_cast<size_t>(gap ? Bucket::RefillGap : Bucket::HostWork);
      Bucket to = Bucket::KernelWork;
      if (!faulting) {
        const SleepKind kind = kinds_.of(smp.syscall);
        to = kind == SleepKind::Io || kind == SleepKind::Receive ? Bucket::Io : Bucket::Syscall;
      }
      const int64_t n = std::min(smp.dur, b.ns[from]);
      if (n <= 0) continue;
      b.ns[from] -= n;
      b.ns[static_cast<size_t>(to)] += n;
      if (gap) {
        const int64_t idle_n = std::min(n, b.idle_ns[from]);
        b.idle_ns[from] -= idle_n;
        b.idle_ns[static_cast<size_t>(to)] += idle_n;
      }
      if (faulting)
        sites[smp.pystack_id] += n;
      else
        syscalls_[static_cast<size_t>(to)][static_cast<uint32_t>(smp.syscall)] += n;
    }
    if (first_faults && last_faults != first_faults) {
      b.minor_faults = std::max<int64_t>(0, last_faults->min_flt - first_faults->min_flt);
      b.major_faults = std::max<int64_t>(0, last_faults->maj_flt - first_faults->maj_flt);
    }
    b.kernel_sites.assign(sites.begin(), sites.end());
    std::sort(b.kernel_sites.begin(), b.kernel_sites.end(), [](auto& a, auto& c) {
      return a.second != c.second ? a.second > c.second : a.first < c.first;
    });
  }

  // With the CPU's run segments recorded, runnable time goes to whoever really ran on the CPU
  // the thread waited for, by time (cpu_holders.hpp); the idle task's share is wake-up latency,
  // and what no segment covers falls back to the preemptor / the last holder.
  void exact_holders(ThreadBudget& b, const RunnableWait& w) {
    const size_t runnable = static_cast<size_t>(Bucket::Runnable);
    const size_t latency = static_cast<size_t>(Bucket::WakeLatency);
    const Piece& p = w.piece;
    const double idle_frac = static_cast<double>(w.idle_ns) / static_cast<double>(p.e - p.s);
    const OffCpuRow& o = rows_.offcpu[p.idx];
    holders_buf_.clear();
    holders_.holders(o, p.s, p.e, holders_buf_);
    for (const HolderTime& h : holders_buf_) {
      if (h.pid == kUnknownHolder) {
        fallback_holder(b, o, h.ns, idle_frac);
      } else if (h.pid == 0 && h.tid == 0) {
        move(b, runnable, latency, h.ns, idle_frac);
      } else {
        blame(b, Bucket::Runnable, h.pid, h.tid, h.comm, h.ns, true, false);
      }
    }
  }

  void move(ThreadBudget& b, size_t from, size_t to, int64_t ns, double idle_frac) {
    ns = std::min(ns, b.ns[from]);
    const auto idle =
        std::min(static_cast<int64_t>(static_cast<double>(ns) * idle_frac), b.idle_ns[from]);
    b.ns[from] -= ns;
    b.ns[to] += ns;
    b.idle_ns[from] -= idle;
    b.idle_ns[to] += idle;
  }

  // Runnable time no run segment covers: the preemptor, else the task the thread took the CPU
  // back from (nobody, when that was the idle task: wake-up latency).
  void fallback_holder(ThreadBudget& b, const OffCpuRow& o, int64_t ns, double idle_frac) {
    if (o.preempted) {
      blame(b, Bucket::Runnable, o.other_pid, o.other_tid, o.other_comm, ns, true, false);
    } else if (o.holder_pid != 0) {
      blame(b, Bucket::Runnable, o.holder_pid, o.holder_tid, o.holder_comm, ns, true, false);
    } else {
      move(b, static_cast<size_t>(Bucket::Runnable), static_cast<size_t>(Bucket::WakeLatency), ns,
           idle_frac);
    }
  }

  // Runnable time goes to the task that held the CPU: the preemptor for a preemption, the task
  // it took the CPU back from after a wake-up (nobody, when that was the idle task). With run
  // segments recorded, exact_holders() attributes it afterwards.
  Bucket runnable(ThreadBudget& b, const OffCpuRow& o, int64_t ns, bool fresh) {
    // Its cgroup had used its CPU quota: whoever ran on the CPU meanwhile did not take it.
    if (o.throttled) return Bucket::Throttled;
    if (holders_.recorded()) return Bucket::Runnable;
    if (o.preempted) {
      blame(b, Bucket::Runnable, o.other_pid, o.other_tid, o.other_comm, ns, fresh, false);
      return Bucket::Runnable;
    }
    if (!o.holder_recorded) {
      if (auto it = guess_.find(o.cpu); it != guess_.end()) {
        const auto& [pid, tid, comm] = it->second;
        blame(b, Bucket::Runnable, pid, tid, comm, ns, fresh, false);
        return Bucket::Runnable;
      }
    }
    if (o.holder_pid == 0) return Bucket::WakeLatency;
    blame(b, Bucket::Runnable, o.holder_pid, o.holder_tid, o.holder_comm, ns, fresh, false);
    return Bucket::Runnable;
  }

  // Traces from before the holder was recorded (ABI < 2): a run-queue wait is blamed on the
  // thread's main preemptor on that CPU (as RunqBlame does for the contention totals).
  void runq_guess(std::pair<size_t, size_t> r) {
    guess_.clear();
    std::unordered_map<uint16_t, std::unordered_map<uint64_t, int64_t>> by_cpu;
    std::unordered_map<uint64_t, std::tuple<uint32_t, uint32_t, uint32_t>> who;
    for (size_t k = r.first; k < r.second; ++k) {
      const OffCpuRow& o = rows_.offcpu[k];
      if (o.holder_recorded) return;  // recorded: no guess needed
      if (!o.preempted) continue;
      const uint64_t key = culprit_key(o.other_pid, o.other_tid, own_pid_);
      by_cpu[o.cpu][key] += o.dur;
      who[key] = {o.other_pid, o.other_tid, o.other_comm};
    }
    for (const auto& [cpu, m] : by_cpu) {
      auto best = std::max_element(m.begin(), m.end(), [](auto& a, auto& c) {
        return a.second != c.second ? a.second < c.second : a.first > c.first;
      });
      guess_[cpu] = who[best->first];
    }
  }

  const TraceRows& rows_;
  const CpuHolders& holders_;
  const Joins& j_;
  const SyscallKinds& kinds_;
  const IdSet& gpu_tids_;
  const IdSet& user_comms_;  // strings.id of task names not the kernel's
  const std::unordered_map<uint32_t, IdleList>& shared_idle_;    // by pid (process_idle)
  const std::unordered_map<uint32_t, IdleList>& measured_idle_;  // by pid (measured_idle)
  const PhaseMap& phases_;
  // By pid, the threads with CPU samples (any thread of a GPU process): who may hold its GIL.
  const std::unordered_map<uint32_t, std::vector<uint32_t>>& siblings_;
  uint64_t small_copy_;
  bool syscall_known_;
  uint32_t own_pid_ = 0, own_tid_ = 0;
  std::array<TaskTally, kBuckets> tallies_;
  RunnableWait wait_;                    // off_cpu_split(): the runnable wait it is in
  std::vector<HolderTime> holders_buf_;  // exact_holders(): reused
  std::array<std::unordered_map<uint32_t, int64_t>, kBuckets> syscalls_;
  std::unordered_map<uint16_t, std::tuple<uint32_t, uint32_t, uint32_t>> guess_;
  std::vector<std::pair<uint32_t, int64_t>> gil_timed_out_;  // (offcpu row, ns) to name
  std::vector<Piece> poll_gaps_;  // polling_pieces(): between a not-ready poll and the next poll
  int64_t poll_own_ns_ = 0;       // polling_pieces(): the not-ready polls' own time
};

}  // namespace

std::string_view bucket_name(Bucket b) {
  switch (b) {
    case Bucket::GpuWait:
      return "gpu_wait";
    case Bucket::ApiOverhead:
      return "api_overhead";
    case Bucket::Transfer:
      return "transfer";
    case Bucket::Alloc:
      return "alloc";
    case Bucket::HostWork:
      return "host_work";
    case Bucket::RefillGap:
      return "refill_gap";
    case Bucket::Runnable:
      return "runnable";
    case Bucket::WakeLatency:
      return "wake_latency";
    case Bucket::BlockedLock:
      return "blocked_lock";
    case Bucket::Handoff:
      return "handoff";
    case Bucket::Delegated:
      return "delegated";
    case Bucket::Io:
      return "io";
    case Bucket::Syscall:
      return "syscall";
    case Bucket::Sleep:
      return "sleep";
    case Bucket::Reclaim:
      return "reclaim";
    case Bucket::Unexplained:
      return "unexplained";
    case Bucket::Throttled:
      return "throttled";
    case Bucket::KernelWork:
      return "kernel_work";
    case Bucket::Gil:
      return "gil";
    case Bucket::Polling:
      return "polling";
    case Bucket::kCount:
      break;
  }
  return "?";
}

std::string_view bucket_label(Bucket b) {
  switch (b) {
    case Bucket::GpuWait:
      return "waiting for GPU work it queued (syncs, synchronous copies)";
    case Bucket::ApiOverhead:
      return "in GPU API calls (launches, enqueues)";
    case Bucket::Transfer:
      return "in host<->device copies";
    case Bucket::Alloc:
      return "in allocation and free calls";
    case Bucket::HostWork:
      return "its own host work, GPU work queued";
    case Bucket::RefillGap:
      return "host work after a sync, GPU queue empty";
    case Bucket::Runnable:
      return "runnable, another task on its CPU";
    case Bucket::WakeLatency:
      return "woken, waiting for an idle CPU";
    case Bucket::BlockedLock:
      return "blocked on a lock / condition variable";
    case Bucket::Handoff:
      return "waiting for data from a producer (pipe, socket, queue)";
    case Bucket::Delegated:
      return "waiting while another GPU thread of its process dispatches";
    case Bucket::Io:
      return "file / device I/O";
    case Bucket::Syscall:
      return "other slow syscalls";
    case Bucket::Sleep:
      return "sleeping (timers, timed-out waits)";
    case Bucket::Reclaim:
      return "direct memory reclaim";
    case Bucket::Unexplained:
      return "asleep, cause not recorded";
    case Bucket::Throttled:
      return "runnable, its cgroup's CPU quota used up (throttled)";
    case Bucket::KernelWork:
      return "the kernel working for it (page faults, interrupts)";
    case Bucket::Gil:
      return "waiting for the Python GIL held by another thread";
    case Bucket::Polling:
      return "polling for GPU work (not-ready event / stream queries in a loop)";
    case Bucket::kCount:
      break;
  }
  return "?";
}

int64_t ThreadBudget::idle_total() const {
  int64_t n = 0;
  for (int64_t v : idle_ns) n += v;
  return n;
}

bool is_kernel_task(std::string_view comm) {
  for (std::string_view p : {"swapper", "kworker", "ksoftirqd", "migration", "irq/", "rcu_",
                             "kswapd", "watchdog", "cpuhp", "khugepaged", "jbd2"}) {
    if (comm.starts_with(p)) return true;
  }
  return false;
}

std::vector<ThreadBudget> compute_budgets(const TraceRows& rows, const Joins& joins,
                                          uint64_t small_copy_bytes, const PhaseMap& phases) {
  const SyscallKinds kinds = syscall_kinds(rows);
  const CpuHolders holders(rows);
  IdSet gpu_tids;
  for (const ThreadSummary& t : joins.threads) gpu_tids.insert(t.tid);
  gpu_tids.seal();
  // Decided once per name, not per wake-up: the names are few, the wake-ups millions.
  IdSet user_comms;
  for (const auto& [id, comm] : rows.strings)
    if (!comm.empty() && !is_kernel_task(comm)) user_comms.insert(id);
  user_comms.seal();
  // The GPU-idle stretches of each process with several GPU threads, made once for all of them.
  std::map<uint32_t, std::vector<const ThreadSummary*>> by_pid;
  for (const ThreadSummary& t : joins.threads) by_pid[t.pid].push_back(&t);
  std::vector<const std::vector<const ThreadSummary*>*> shared;
  for (const auto& [pid, ts] : by_pid)
    if (ts.size() > 1) shared.push_back(&ts);
  std::vector<IdleList> lists(shared.size());
  parallel_for(shared.size(), [&](size_t k) { lists[k] = process_idle(rows, joins, *shared[k]); });
  std::unordered_map<uint32_t, IdleList> shared_idle;
  for (size_t k = 0; k < shared.size(); ++k)
    shared_idle.emplace(shared[k]->front()->pid, std::move(lists[k]));
  // Where the device's own records are there, they decide (measured_idle).
  std::unordered_map<uint32_t, IdleList> measured;
  for (const auto& [pid, ts] : by_pid)
    if (has_device_activity(rows, pid)) measured.emplace(pid, measured_idle(rows, ts));
  // The sampled threads of each process that waited on its GIL: who may have held it.
  std::unordered_map<uint32_t, std::vector<uint32_t>> siblings;
  if (!rows.python_runtime.empty()) {
    for (const auto& [tid, r] : joins.cpu_samples)
      if (r.second > r.first) siblings[rows.cpu_samples[r.first].pid].push_back(tid);
    for (auto& [pid, tids] : siblings) std::sort(tids.begin(), tids.end());
  }
  std::vector<ThreadBudget> out(joins.threads.size());
  const auto cost = [&](size_t k) { return joins.offcpu_work(joins.threads[k]); };
  parallel_for_largest_first(joins.threads.size(), cost, [&](size_t k) {
    ThreadBudgeter b(rows, joins, kinds, gpu_tids, user_comms, holders, shared_idle, measured,
                     siblings, small_copy_bytes, phases);
    out[k] = b.run(joins.threads[k]);
  });
  return out;
}

}  // namespace gpuwhy::analysis
