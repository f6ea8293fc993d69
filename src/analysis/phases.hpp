// SPDX-License-Identifier: Apache-2.0
// The phases of a GPU process: its start-up (importing, building the model, the first kernels'
// modules), its steady state (the steps) and its tail (saving, evaluating, tearing down). They
// are found from the rate of the process's GPU work, not from a fixed idle threshold: the
// steady state is the densest run of its enqueues, and a start-up or a tail is what lies outside
// it. explain reports the steady state's causes (explain_steady.hpp narrows the window to it)
// and summarises the start-up and the tail in a line each (detect_gpu_idle.cpp).
//
// Why the rate and not idle stretches of a second or more: a start-up is often many short gaps
// (a module load per new kernel, a weight copy per layer), none a second long, and a job whose
// steps sleep a second each has long idle stretches that are its steady state.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>

#include "analysis/joins.hpp"
#include "analysis/rows.hpp"

namespace gpuwhy::analysis {

// [first, last]: indices into a sorted list of event times.
struct EventRun {
  size_t first = 0, last = 0;
  // The gap the run spends half its time in shorter gaps than (a time-weighted median over its
  // middle half): the rhythm of its steps. 0 for a run of fewer than kMinPhaseEvents.
  int64_t typical_gap = 0;
};

// The steady run of sorted event times `ts`:
// 1. The densest run: the run [i, j] that maximises its events less θ times its length, θ a
//    tenth of the rate over the middle half of the events (the steps' own rate). Stretches
//    where work comes at under a tenth of that rate cost more than they hold and fall outside.
// 2. A pause in the run's first or last tenth of events, ten times longer than its typical gap
//    (the gap the run spends half its time in gaps shorter than, so a run of steps each ending in
//    a long sync has that sync as its typical gap) and 2% of the run or more, ends the start-up
//    before it or begins the tail after it, when the part it cuts off (the pause with it) ran at
//    under half the rate of the rest: a warm-up step's few launches before seconds of data
//    loading are start-up, though dense; a loop's last steps held up by a preemption are not.
// Under kMinPhaseEvents events, the whole list.
EventRun steady_run(std::span<const int64_t> ts);
inline constexpr size_t kMinPhaseEvents = 32;

// One process's phases, in wall ns. The steady state is [steady_from, steady_to].
struct ProcessPhases {
  int64_t first_ns = 0, last_ns = 0;  // its GPU calls' span in the window
  int64_t steady_from = 0, steady_to = 0;
  // Whether a start-up / a tail lies outside the steady state: only for a process that started
  // inside the window (or so shortly before it that the window holds most of its start-up) or
  // exited inside it, and only when it is kMinPhaseShare of the span or more and longer than ten
  // of the steps' typical gaps (a last step's own wait is not a tail).
  bool start_up = false, tail = false;
  double steady_rate = 0;  // enqueues per second over the steady state
};
inline constexpr double kMinPhaseShare = 0.05;

using PhaseMap = std::unordered_map<uint32_t, ProcessPhases>;  // by pid

// The phases of every process with GPU calls in `rows` (prepared, with `joins`), from its
// threads' outermost enqueues. The steady state ends where the first call after its last
// enqueue that drains the queue returns: the sync that waits for the last step is the step's.
PhaseMap process_phases(const TraceRows& rows, const Joins& joins);

}  // namespace gpuwhy::analysis
