// SPDX-License-Identifier: Apache-2.0
// Exports that are SQLite files readable with no gpuwhy present (docs/export.md):
//  - plain: every logical table as an ordinary table (the event rows decoded out of their chunks,
//    api_calls keeping its rowid, the call_id of the views), every shipped view as a stored view,
//    indexes for the documented questions;
//  - nsight: the tables of Nsight Systems' SQLite export that a gpuwhy trace can fill
//    (StringIds, CUPTI_ACTIVITY_KIND_RUNTIME, OSRT_API, SCHED_EVENTS, PROCESSES, ThreadNames,
//    META_DATA_EXPORT, TARGET_INFO_SESSION_START_TIME), so existing Nsight SQL recipes run.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.hpp"
#include "export/export_scope.hpp"

namespace gpuwhy::exporter {

struct ExportStats {
  uint64_t rows = 0;    // rows written, all tables together
  uint64_t tables = 0;  // tables (or files) written
};

// Both write `out_path` through a temporary file renamed at the end: a failed export leaves
// nothing behind.
Result<ExportStats> export_plain_sqlite(const store::TraceFile& file, const Scope& scope,
                                        const std::string& out_path);
Result<ExportStats> export_nsight_sqlite(const store::TraceFile& file, const Scope& scope,
                                         const std::string& out_path);

// Nsight's serialized thread id: (pid << 24) | tid; a process's globalPid has tid 0.
inline int64_t global_tid(int64_t pid, int64_t tid) { return (pid << 24) | (tid & 0xffffff); }

}  // namespace gpuwhy::exporter
