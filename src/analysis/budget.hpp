// SPDX-License-Identifier: Apache-2.0
// The time budget of one GPU-calling thread: every nanosecond of its active span (first call's
// start to last call's end) goes to exactly one bucket. Chains are built on buckets, and no two
// chains draw on the same bucket of the same thread, so one thread's chains never add up to more
// than its span: one wait is never reported twice as two causes, and GPU-idle time that no chain
// claims is still seen (the gpu_idle chain) instead of vanishing between detectors.
//
// Why a bucket and not per-detector counting: a sleep in read() on a pipe, woken by a sibling
// thread, is both "I/O" and "woken by a sibling"; a futex wait inside cudaStreamSynchronize is
// both "a lock" and "waiting for the GPU". Each detector counting alone reported such time twice.
// Here the precedence is decided once (budget.cpp, classify()).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "analysis/joins.hpp"
#include "analysis/phases.hpp"
#include "analysis/rows.hpp"

namespace gpuwhy::analysis {

enum class Bucket : uint8_t {
  GpuWait,      // inside a call that waits for GPU work (sync, synchronous copy, free)
  ApiOverhead,  // inside other GPU API calls (launch, enqueue, query): the runtime's host work
  Transfer,     // inside a host<->device copy of small_copy_bytes or more
  Alloc,        // inside an allocation or free call
  HostWork,     // on the CPU outside GPU calls, with GPU work queued
  RefillGap,    // on the CPU outside GPU calls after a sync drained the queue, before new work
  Runnable,     // runnable, another task held the CPU (preempted, or woken and kept waiting)
  WakeLatency,  // woken, waiting for an idle CPU to pick it up (nobody in the way)
  BlockedLock,  // asleep in a futex (lock, condition variable) until another task woke it
  Handoff,      // asleep reading / polling a pipe, socket, eventfd until a producer woke it
  // asleep outside GPU calls until another GPU-calling thread of its process woke it: the job's
  // dispatch went on in that thread (PyTorch's backward pass runs on its autograd thread while
  // the main thread waits, and that thread waits for the next backward): not time lost
  Delegated,
  Io,           // file and device I/O syscalls, asleep or on the CPU
  Syscall,      // other slow syscalls
  Sleep,        // nanosleep, timed-out waits: asleep until a timer woke it
  Reclaim,      // direct memory reclaim
  Unexplained,  // asleep with no syscall and no waker known
  // Runnable, held off the CPU by its own cgroup's CPU quota (CFS bandwidth throttling): no
  // other task is to blame, the limit is (TraceRows::cpu_limits names it)
  Throttled,
  // On the CPU outside GPU calls, in the kernel but in no syscall: page faults (first touches
  // of fresh memory, copy-on-write), interrupts. From the CPU samples: an estimate of the time
  // the kernel worked on the thread's behalf inside what would read as its own host work
  KernelWork,
  // Asleep outside GPU calls on its Python interpreter's GIL (a futex inside _PyRuntime): another
  // thread of the process held the interpreter. Who: the waker that handed it over, or for a
  // wait that timed out the sibling threads the CPU samples found running meanwhile
  Gil,
  // Polling for GPU work: inside a poll (cudaEventQuery, cudaStreamQuery, …) that returned not
  // ready, and on the CPU between such a poll and the thread's next call when that is a poll too
  // (a spin loop). Waiting for the GPU while on the CPU: not its own host work
  Polling,
  kCount
};
inline constexpr size_t kBuckets = static_cast<size_t>(Bucket::kCount);

std::string_view bucket_name(Bucket b);   // stable id for JSON: "gpu_wait", "runnable", ...
std::string_view bucket_label(Bucket b);  // for people: "waiting for GPU work it queued"

struct ThreadBudget {
  uint32_t pid = 0, tid = 0;
  int64_t first_ns = 0, last_ns = 0;  // the active span: the buckets add up to its length
  std::array<int64_t, kBuckets> ns{};
  // The part of each bucket when the thread had no GPU work queued: after a call that drained
  // its queue and before its next enqueue. The GPU had nothing from this thread to run then.
  std::array<int64_t, kBuckets> idle_ns{};
  // Where idle_ns comes from: the device's own records of the process (trace --gpu-activity:
  // the gaps between its kernels, copies and memsets) when it has them, else the thread's calls.
  // The calls' estimate of the same idle time is kept beside the measured one: how far the
  // host-only mode was off (device_activity.hpp).
  bool idle_measured = false;
  int64_t host_idle_ns = 0;  // the calls' estimate of the GPU-idle time, over the same span
  // Who: for Runnable the tasks that held the CPU (by process; a thread of the thread's own
  // process by thread), for BlockedLock, Handoff and Io the tasks that woke it (by thread), for
  // Gil the threads that held the interpreter (by thread).
  // Most time first.
  std::array<std::vector<Culprit>, kBuckets> by_task;
  // How: for the asleep buckets, the syscalls it slept in (nr, ns), most time first.
  std::array<std::vector<std::pair<uint32_t, int64_t>>, kBuckets> by_syscall;
  bool exact_holders = false;  // Runnable's holders come from recorded CPU run segments
  // The GPU-idle stretches of kLongIdleNs or more, clipped to the span, in time order: one-off
  // pauses (start-up, a checkpoint, an evaluation) rather than the gaps of every step.
  std::vector<std::pair<int64_t, int64_t>> long_idle;
  static constexpr int64_t kLongIdleNs = 1'000'000'000;
  // Its process's steady state (phases.hpp) cut to the span, and the span's GPU-idle time before
  // it (the start-up) and after it (the tail); the whole span and 0 when the process has none.
  int64_t steady_from = 0, steady_to = 0;
  int64_t start_up_idle_ns = 0, tail_idle_ns = 0;
  // Of the start-up, the time before the thread queued any work (its first enqueue) that no
  // bucket's idle part holds: the budget cannot know an empty queue before a drain empties it,
  // but a process that started in the trace had queued nothing yet.
  int64_t start_up_unqueued_ns = 0;
  double steady_rate = 0;  // the process's enqueues per second in its steady state; 0: unknown
  // Page faults the thread took over its span, from its CPU samples' fault counters (ABI 9):
  // the last sample's count less the first's; -1 when not recorded.
  int64_t minor_faults = -1, major_faults = -1;
  // KernelWork's samples by the Python stack they were taken in (cpu_samples.py_stack; -1: none),
  // most time first: the line whose memory the kernel was faulting in.
  std::vector<std::pair<int32_t, int64_t>> kernel_sites;

  int64_t span_ns() const { return last_ns - first_ns; }
  int64_t operator[](Bucket b) const { return ns[static_cast<size_t>(b)]; }
  int64_t idle(Bucket b) const { return idle_ns[static_cast<size_t>(b)]; }
  const std::vector<Culprit>& tasks(Bucket b) const { return by_task[static_cast<size_t>(b)]; }
  int64_t idle_total() const;
};

// Budgets of every thread in joins.threads, in the same order. `small_copy_bytes`: a copy below
// it is a read-back (a sync), above it a transfer (Thresholds::small_copy_bytes).
// `phases`: each process's start-up and tail (process_phases), none when left out.
std::vector<ThreadBudget> compute_budgets(const TraceRows& rows, const Joins& joins,
                                          uint64_t small_copy_bytes,
                                          const PhaseMap& phases = PhaseMap{});

// A waker or CPU holder that is the kernel's own (idle task, kworker, softirq, interrupt thread):
// not a program to blame or to renice.
bool is_kernel_task(std::string_view comm);

}  // namespace gpuwhy::analysis
