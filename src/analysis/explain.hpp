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
#include <string>
#include <vector>

#include "analysis/chain.hpp"
#include "analysis/detectors.hpp"
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
};

struct Caveat {
  std::string kind;  // "lost_events" | "incomplete" | "live" | "no_sched" | "pid_filter"
  std::string text;
};

struct Report {
  TraceInfo trace;
  std::string verdict;          // the first line of the text report
  bool clean = true;            // no HIGH or MEDIUM chain
  std::vector<Caveat> caveats;  // shown before any finding
  std::vector<Chain> chains;    // ranked: most wall time lost first
  Stats stats;
};

// Runs the joins, statistics and every registered detector; ranks and grades the chains.
Report analyze(TraceRows rows, const Thresholds& th = {});

// The pieces, for tests and tools that need them separately.
Severity grade(double share, const Thresholds& th);
std::vector<Chain> run_detectors(const Context& ctx);
// Grades, drops chains under the LOW threshold, sorts by time lost.
std::vector<Chain> rank_chains(std::vector<Chain> chains, const Thresholds& th);
std::vector<Caveat> caveats_for(const TraceRows& rows);

}  // namespace gpuwhy::analysis
