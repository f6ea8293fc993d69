// SPDX-License-Identifier: Apache-2.0
// `gpuwhy explain --html`: the report as one self-contained page (inline CSS and SVG, no script
// to run, nothing loaded from anywhere). It is rendered from the same JSON object `explain
// --json` prints (explain_json), which it also embeds verbatim, so every number on the page is
// one of the JSON's; the chain timelines (chain_timelines) and the whole-window timeline
// (whole_timeline) come from the trace.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpuwhy::store {
class TraceFile;
}

namespace gpuwhy::render {

// For each chain of `report` (explain_json) that names a thread and a time span: the worst
// stretch of that thread (the one with the most off-CPU time, at most `max_window_ns` long) with
// its GPU calls and off-CPU intervals. {"<rank>": {pid, tid, start_rel_ns, end_rel_ns,
// calls: [[start_rel_ns, dur_ns, name]], offcpu: [[start_rel_ns, dur_ns, preempted, label]]}}.
Result<nlohmann::ordered_json> chain_timelines(const store::TraceFile& file,
                                               const nlohmann::ordered_json& report,
                                               int64_t max_window_ns = 200'000'000);

// Buckets per lane of the whole-window timeline: about one pixel each at the page's width.
constexpr int kWholeTimelineBuckets = 1000;
// Lanes drawn at most (the threads with the most events kept), so the page stays small.
constexpr size_t kWholeTimelineMaxLanes = 64;

// The whole analysed window of `report` (explain_json), one lane per traced thread of the
// analysed processes (`pids`; empty: those in the report's stats, the processes with GPU calls):
// the threads with an api_calls or offcpu row in the window (ts < end, ts + dur >= start). Each
// instant of a lane is in at most one state, the first of: preempted, blocked (off-CPU: the
// thread is not running, whatever call it is inside), sync (a GPU call of category sync), call
// (any other GPU call); else none (on CPU, outside any GPU call). The window is cut into
// `buckets` buckets, bucket i starting at start + ceil(span * i / buckets) (span = end - start,
// in ns); each lane holds each state's ns in each bucket, exactly (their sum over the buckets is
// the state's time in the window).
// {start_rel_ns, end_rel_ns, buckets, states: ["sync", "call", "preempted", "blocked"],
//  lanes: [{pid, tid, comm, rows, ns: [[ns per bucket] per state]}], threads_not_drawn}.
Result<nlohmann::ordered_json> whole_timeline(const store::TraceFile& file,
                                              const nlohmann::ordered_json& report,
                                              const std::vector<uint32_t>& pids = {},
                                              int buckets = kWholeTimelineBuckets);

// The whole-window timeline as a page section: per lane one row of rects, each bucket drawn in
// its dominant state (the state, or none, with the most ns in it; adjacent buckets of one state
// merged into one rect, x and width in buckets). Empty when `timeline` has no lane.
std::string whole_timeline_html(const nlohmann::ordered_json& timeline);

// `audit`: audit_json of the same window, shown as a section after the threads' time split
// (null: no such section). `whole`: whole_timeline of the same window (null: no such section).
std::string explain_html(const nlohmann::ordered_json& report,
                         const nlohmann::ordered_json& timelines,
                         const nlohmann::ordered_json& audit = nullptr,
                         const nlohmann::ordered_json& whole = nullptr);

}  // namespace gpuwhy::render
