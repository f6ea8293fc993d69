// SPDX-License-Identifier: Apache-2.0
// The public entry point of the analysis: rows in, a Report out (verdict, caveats, ranked causal
// chains, statistics). Pure: no I/O, no clock, so the same rows always give the same report.
//
//   auto rows = analysis::load_trace(file, {window, pids});   // loader.hpp
//   analysis::Report r = analysis::analyze(std::move(rows.value()));
//   for (const analysis::Chain& c : r.chains) ...              // chain.hpp
//
// Renderers (src/export) print a Report; tests assert on it directly.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/chain.hpp"
#include "analysis/detectors.hpp"
#include "analysis/gpu_idle_truth.hpp"
#include "analysis/phases.hpp"
#include "analysis/rows.hpp"
#include "analysis/stats.hpp"
#include "analysis/window.hpp"

namespace gpuwhy::analysis {

// What the report says about the file and the window, before any finding.
struct TraceInfo {
  std::string host, kernel, agent_version, status;
  bool live = false;
  TimeWindow window;
  uint64_t calls = 0, processes = 0, threads = 0;
  uint64_t offcpu_intervals = 0, syscalls = 0, block_io = 0, reclaims = 0, retransmits = 0;
  uint64_t lost_events = 0;
  // A flight recorder's file: events aged out (not lost) before kept_from_ns (0: none).
  bool recorder = false;
  int64_t kept_from_ns = 0;
  uint64_t aged_out_events = 0;
  LaunchTiming launch_timing;  // adaptive launch timing, as the trace states it
};

struct Caveat {
  std::string kind;  // "lost_events" | "incomplete" | "live" | "no_sched" | "pid_filter"
  std::string text;
};

// One thread's time budget as the report shows it (names resolved; times relative or ns).
struct BudgetLine {
  Bucket bucket = Bucket::Unexplained;
  int64_t ns = 0, idle_ns = 0;                  // idle_ns: the part while it had no GPU work queued
  std::vector<std::pair<Task, int64_t>> tasks;  // holders / wakers, most first (top 3)
  std::vector<std::pair<std::string, int64_t>> syscalls;  // what it slept in, most first (top 3)
};
struct BudgetReport {
  Task process, thread;
  int64_t first_ns = 0;  // relative to the trace start
  int64_t span_ns = 0;
  int64_t idle_ns = 0;         // no GPU work queued by it (measured: the device ran nothing of it)
  bool idle_measured = false;  // idle_ns from the device's records (trace --gpu-activity)
  int64_t host_idle_ns = 0;    // the calls' estimate of idle_ns, kept beside the measured one
  bool exact_holders = false;  // CPU holders from recorded run segments
  bool in_chain = false;       // a chain names this thread
  std::vector<BudgetLine> lines;  // non-empty buckets, most time first; they add up to span_ns
};

struct Report {
  TraceInfo trace;
  std::string verdict;          // the first line of the text report
  bool clean = true;            // no HIGH or MEDIUM chain
  std::vector<Caveat> caveats;  // shown before any finding
  std::vector<Chain> chains;    // ranked: most wall time lost first
  // Per GPU thread, where its active span went (budget.hpp): threads named by a chain first,
  // then by span.
  std::vector<BudgetReport> budgets;
  // The GPU's busy time per process and device, and which source the idle figures came from
  // (gpu_idle_truth.hpp).
  GpuTimeReport gpu_time;
  Stats stats;
  // Per GPU process (by pid), its start-up, steady state and tail (phases.hpp); none for the
  // processes of a window of a longer analysis.
  std::map<uint32_t, ProcessPhases> phases;
};

// Runs the joins, statistics and every registered detector; ranks and grades the chains.
Report analyze(TraceRows rows, const Thresholds& th = {});

// One time window of a longer analysis (explain_batched.hpp): the detectors' chains as found,
// not graded, ranked or dropped (that needs the whole window), and budgets naming every task and
// syscall (the top 3 are kept once the windows are added up).
Report analyze_window_part(TraceRows rows, const Thresholds& th = {});

// analyze (window_part false) or analyze_window_part (true) on rows the caller keeps, prepared
// in place: the batches of one explain hand their buffers on to a later batch's load.
Report analyze_rows(TraceRows& rows, const Thresholds& th, bool window_part);

// The pieces, for tests and tools that need them separately.
Severity grade(double share, const Thresholds& th);
std::vector<Chain> run_detectors(const Context& ctx);
// Grades, drops chains under the LOW threshold, sorts by time lost.
// `window_ns`: the window's length; a chain needs a share of it too, and enough absolute time,
// to be HIGH or MEDIUM (grade_chain).
std::vector<Chain> rank_chains(std::vector<Chain> chains, const Thresholds& th,
                               int64_t window_ns = 0);
Severity grade_chain(const Chain& c, const Thresholds& th, int64_t window_ns);
std::vector<Caveat> caveats_for(const TraceRows& rows);
// The same, for rows whose off-CPU intervals were loaded elsewhere (batches of one analysis).
std::vector<Caveat> caveats_for(const TraceRows& rows, bool has_offcpu);
// Once the chains are ranked: whether it is clean, and its first line.
void set_verdict(Report& r);
// A clean report whose busiest launching thread never waited for the GPU gets a caveat saying
// the GPU may be waiting for the host instead (kernels shorter than their launches: no chain can
// measure that without GPU-side times). After set_verdict and the caveats.
void add_host_bound_hint(Report& r);
// Budgets in the report's order: threads a chain names first, then by span, then by tid.
void sort_budgets(std::vector<BudgetReport>& budgets);

}  // namespace gpuwhy::analysis
