// SPDX-License-Identifier: Apache-2.0
// The trace as a Perfetto trace (protobuf TrackEvent, perfetto_trace.proto): a track per process
// and thread, GPU API calls as slices with their arguments and call site, each thread's off-CPU
// intervals on a child track as slices named by cause and culprit, wake-ups as flows from the
// waker's track, and per-process counters per second (calls, bytes, off-CPU time). Opens in the
// Perfetto UI and trace_processor; docs/export.md says how to keep a large trace within the UI's
// limits.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.hpp"
#include "export/export_scope.hpp"
#include "export/sqlite_export.hpp"

namespace gpuwhy::exporter {

struct PerfettoOptions {
  // Slices (calls + off-CPU intervals) beyond which the export is refused: the UI runs in a
  // browser tab and slows past a few hundred MB of trace (about 110 bytes a slice here).
  uint64_t max_slices = 1'000'000;
};

Result<ExportStats> export_perfetto(const store::TraceFile& file, const Scope& scope,
                                    const std::string& out_path, const PerfettoOptions& opt = {});

}  // namespace gpuwhy::exporter
