// SPDX-License-Identifier: Apache-2.0
// Root-cause detectors. Each lives in its own detect_*.cpp, reads the joined rows and statistics
// through a Context, and appends Chains with lost_ns/span_ns set; severity, filtering and ranking
// happen once, in explain.cpp. They are listed in ONE explicit array (detectors.cpp): no static
// registration, so the order and the set are visible in one place.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/budget.hpp"
#include "analysis/chain.hpp"
#include "analysis/joins.hpp"
#include "analysis/rows.hpp"
#include "analysis/stats.hpp"

namespace gpuwhy::analysis {

// Every threshold a detector uses, with its default; docs/explain.md explains each.
struct Thresholds {
  double high_share = 0.20;         // HIGH: >= 20% of the victim's wall time lost
  double medium_share = 0.05;       // MEDIUM: >= 5%
  double low_share = 0.01;          // LOW: >= 1%; below, the chain is dropped as noise
  int64_t min_lost_ns = 1'000'000;  // and never a chain for less than 1 ms in all
  // HIGH also needs 100 ms lost and 5% of the window; MEDIUM 10 ms and 1% (grade_chain).
  int64_t high_min_lost_ns = 100'000'000;
  int64_t medium_min_lost_ns = 10'000'000;
  double dominant = 0.5;  // a culprit "dominates" with >= 50% of the lost time
  uint64_t small_copy_bytes = kSmallCopyBytes;  // a D2H copy below this is a read-back: a sync
  double loop_rate_per_s = 2.0;                 // "many per second": recurring inside the step loop
  uint32_t loop_min_count = 10;
  double loop_spread = 0.5;  // ... and present in at least half of the active span's tenths
  int64_t max_refill_gap_ns =
      1'000'000'000;                // longer gaps after a sync are idle phases, not bubbles
  double rate_drop = 0.30;          // launch rate falls by more than 30%
  double cause_shift = 0.05;        // a cause must grow by 5 points of wall time to explain a drop
  uint32_t min_collectives = 5;     // instances needed to call a rank a straggler
  double straggler_majority = 0.6;  // ... last to arrive in at least 60% of them
  uint32_t min_retransmits = 3;
};

struct Context {
  const TraceRows& rows;
  const Joins& joins;
  const Stats& stats;
  const Thresholds& th;
  // One per joins.threads entry, same order (budget.hpp): what every chain draws its time from.
  const std::vector<ThreadBudget>& budgets;
  // One time window of a longer analysis (analyze_window_part): which thread dispatches a
  // process's work is decided once the windows are added up, so gpu_idle looks at every thread
  // that launched work (the merge keeps the dispatch thread's), and cpu_contention at every
  // thread, whatever its share, and lock_wait at every blocked thread (the merge keeps each
  // process's most preempted and most blocked one; gpu_idle counts as claimed only the window's
  // most preempted and most blocked thread's).
  bool window_part = false;

  const ThreadBudget& budget(const ThreadSummary& t) const {
    return budgets[static_cast<size_t>(&t - joins.threads.data())];
  }

  Task process(uint32_t pid) const;
  Task thread(uint32_t pid, uint32_t tid) const;
  // A task seen only through an offcpu row (next_comm / waker_comm), maybe not traced itself.
  Task other(uint32_t pid, uint32_t tid, uint32_t comm, bool as_thread) const;
  int64_t rel(int64_t wall_ns) const { return rows.rel(wall_ns); }
  // A thread as a sentence names it: "trainer (pid 1000)" for a main thread, else
  // "loader (tid 1005) of trainer (pid 1000)".
  std::string who(const Task& thread) const;
  // The thread of `pid` that launched the most work (ties: most calls): the dispatch thread.
  const ThreadSummary* dispatch_thread(uint32_t pid) const;
  // The process's active span: first call start .. last call end of any of its threads.
  std::pair<int64_t, int64_t> process_span(uint32_t pid) const;
  // A chain about one thread: kind, title, its process and thread, the time lost and the
  // thread's active span (what the share is of). Detectors add the rest.
  Chain thread_chain(const ThreadSummary& t, std::string kind, std::string title,
                     int64_t lost_ns) const;
};

using DetectorFn = void (*)(const Context& ctx, std::vector<Chain>& out);

struct Detector {
  std::string_view kind;  // Chain::kind of what it emits
  std::string_view what;  // one line for docs and --help
  DetectorFn run;
};

// The registry, in the order detectors run (ranking is by time lost, not by this order).
std::span<const Detector> detectors();

void detect_cpu_contention(const Context& ctx, std::vector<Chain>& out);
void detect_lock_wait(const Context& ctx, std::vector<Chain>& out);
void detect_hidden_sync(const Context& ctx, std::vector<Chain>& out);
void detect_transfer_bound(const Context& ctx, std::vector<Chain>& out);
void detect_alloc_churn(const Context& ctx, std::vector<Chain>& out);
void detect_rate_drop(const Context& ctx, std::vector<Chain>& out);
void detect_io_stall(const Context& ctx, std::vector<Chain>& out);
void detect_reclaim(const Context& ctx, std::vector<Chain>& out);
void detect_cpu_quota(const Context& ctx, std::vector<Chain>& out);
void detect_page_faults(const Context& ctx, std::vector<Chain>& out);
void detect_gil(const Context& ctx, std::vector<Chain>& out);
void detect_tcp_retrans(const Context& ctx, std::vector<Chain>& out);
void detect_nccl_straggler(const Context& ctx, std::vector<Chain>& out);
void detect_polling(const Context& ctx, std::vector<Chain>& out);
// Runs after the others, on what they found: GPU-idle time of each dispatch thread that no chain
// of that thread claims (claimed_buckets) becomes a gpu_idle chain.
void detect_gpu_idle(const Context& ctx, std::vector<Chain>& chains);
// The budget buckets a chain of this kind draws its time from (none for views of the same time
// from another side: rate drops, stragglers, retransmits).
std::span<const Bucket> claimed_buckets(std::string_view kind);

// ---- helpers shared by detectors -------------------------------------------------------------

// Fix text for CPU contention caused by `culprit` against `victim` (used by two detectors).
std::string contention_fix(const Task& victim, const Task& culprit, bool same_process);
// Fix text for a thread blocked by a sibling thread.
std::string lock_fix(const Task& sibling);
// "a 1.20 s (45.0%), b 0.30 s (11.0%)": the top culprits of a list, by name. Entries are named
// as threads when `by_thread`, or when they belong to `own_pid` (the victim's process).
std::string culprit_list(const Context& ctx, const std::vector<Culprit>& v, int64_t total,
                         bool by_thread, size_t max_items = 3, uint32_t own_pid = 0);
// A thread a GPU runtime starts inside the application (CUDA's event handler, the simulator's
// device thread, HIP/ROCr and NCCL helpers), by its name.
bool is_runtime_helper(std::string_view comm);
// The tracer itself: "gpuwhy", or one of its named threads ("gpuwhy-reader", "gpuwhy-writer", …).
bool is_tracer(std::string_view comm);
// Is `nr` one of the file/disk I/O syscalls (read, write, fsync, openat, ...)?
bool is_io_syscall(const TraceRows& rows, uint32_t nr);
// The futex syscall number, from the file's syscall_names (202 on x86-64).
uint32_t futex_nr(const TraceRows& rows);
// "called from: gw::Trainer::step(unsigned long)+0x2f2 in sim_train (150 of 150)": where the
// stacks (trace --stacks; -1: none) came from, the top three; empty when none is resolved.
std::string call_sites_line(const Context& ctx, const std::vector<int32_t>& stack_ids);
// The same for calls (indices into rows.calls), Python lines first (Python processes), by time
// in the calls: "called from: train.py:212 in train_step: loss_value = loss.item() (150 of 150
// calls, 1.20 s); natively called from: ..." (the native part only with trace --stacks).
std::string call_sites_line(const Context& ctx, const std::vector<uint32_t>& calls);
// The Python line the most time in `calls` (indices into rows.calls) was spent from:
// "train.py:212 in train_step: loss_value = loss.item()"; empty when none of them has one. For a
// chain's fix ("... at <site>").
std::string top_python_site(const Context& ctx, const std::vector<uint32_t>& calls);
// What a culprit task was running in Python while it held the victim back, from its CPU samples
// in [from, to) (their Python stacks, ABI 6): "loader (tid 1005) was on the CPU in
// loader.py:41 in produce: batch = decode(raw) (83.0% of its 120 samples)", its top two lines by
// samples; a culprit with tid 0 is its whole process. Empty when none of its samples in that
// time has a Python line (not a Python process, samples off, an older trace).
std::string culprit_python_line(const Context& ctx, const Task& culprit, int64_t from, int64_t to);

// A collective as its thread waited for it: the call, through the stream sync right after it
// when there is one (NCCL calls only enqueue: the wait surfaces in that sync). Sorted by ts.
struct CollectiveWait {
  uint32_t call = 0;
  uint32_t pid = 0;
  uint16_t api = 0;
  int64_t ts = 0, end = 0;
};
std::vector<CollectiveWait> collective_waits(const Context& ctx);

}  // namespace gpuwhy::analysis
