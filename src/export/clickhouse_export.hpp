// SPDX-License-Identifier: Apache-2.0
// `gpuwhy export --format clickhouse`: one host's part of a fleet of traces, as ClickHouse loads
// it (docs/fleet.md). A directory with schema.sql (CREATE TABLE statements for the fleet's
// database) and one JSONEachRow file per table: nccl_collectives (every rank's k-th collective on
// its job's communicator, so that hosts join on (job, seq)) and nccl_ranks (who each rank is,
// and where its time per collective went, from this file's own time budget).
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"
#include "export/sqlite_export.hpp"

namespace gpuwhy::store {
class TraceFile;
}

namespace gpuwhy::exporter {

struct ClickHouseOptions {
  std::string job;  // the job's name, the same on every host (a scheduler's job id)
};

// The CREATE statements (database `gpuwhy`), as written into the export's schema.sql.
std::string_view clickhouse_schema();

// Writes `dir` (created; must not hold a previous export unless `force`). Error when the file
// records no NCCL communicator set-up (nothing for the fleet's cross-host questions).
Result<ExportStats> export_clickhouse(const store::TraceFile& file, const std::string& dir,
                                      const ClickHouseOptions& opt);

}  // namespace gpuwhy::exporter
