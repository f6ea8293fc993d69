// SPDX-License-Identifier: Apache-2.0
// `gpuwhy explain --html`: the report as one self-contained page (inline CSS and SVG, no script
// to run, nothing loaded from anywhere). It is rendered from the same JSON object `explain
// --json` prints (explain_json), which it also embeds verbatim, so every number on the page is
// one of the JSON's; the chain timelines come from the trace (chain_timelines).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

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

// `audit`: audit_json of the same window, shown as a section after the threads' time split
// (null: no such section).
std::string explain_html(const nlohmann::ordered_json& report,
                         const nlohmann::ordered_json& timelines,
                         const nlohmann::ordered_json& audit = nullptr);

}  // namespace gpuwhy::render
