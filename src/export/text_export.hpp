// SPDX-License-Identifier: Apache-2.0
// CSV, JSON Lines and Parquet exports, for DuckDB, pandas and spreadsheets: one file per logical
// table (<dir>/<table>.csv, .jsonl, .parquet) or one table to one file. The columns are the logical table's
// (docs/schema.md), api_calls with its name/family/category, an event table's rowid first as
// row_id (v_calls' call_id); the rollups are recomputed over the rows exported.
#pragma once

#include <string>

#include "core/result.hpp"
#include "export/export_scope.hpp"
#include "export/sqlite_export.hpp"

namespace gpuwhy::exporter {

// Parquet: typed columns (src/export/parquet_writer.hpp), for DuckDB, pandas/pyarrow and Spark.
enum class TextFormat : uint8_t { Csv, Jsonl, Parquet };

// Every table into `dir` (created if missing).
Result<ExportStats> export_text_dir(const store::TraceFile& file, const Scope& scope,
                                    TextFormat format, const std::string& dir);
// One table into `out_path` ("-": standard output).
Result<ExportStats> export_text_table(const store::TraceFile& file, const Scope& scope,
                                      TextFormat format, const std::string& table,
                                      const std::string& out_path);

}  // namespace gpuwhy::exporter
