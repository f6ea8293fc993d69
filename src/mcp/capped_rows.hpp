// SPDX-License-Identifier: Apache-2.0
// One read-only statement through the guarded path `gpuwhy query` uses (store::for_each_row: one
// statement, read-only, the authorizer of TraceFile), its rows as JSON, stopped at a row cap and
// a size cap: a model asking for a million rows gets the first ones and is told the rest exist.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/result.hpp"
#include "store/store.hpp"

namespace gpuwhy::mcp {

struct RowLimits {
  int64_t max_rows = 200;
  size_t max_bytes = 4u << 20;  // of the rows' JSON text
  bool as_objects = false;      // rows as {column: value}, keys made unique (store::unique_keys);
                                // else arrays in column order
};

struct CappedRows {
  nlohmann::ordered_json columns = nlohmann::ordered_json::array();
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  // "" when every row is here; else why the rest are not: "max_rows" or "max_bytes".
  std::string truncated_by;
};

Result<CappedRows> capped_rows(const store::TraceFile& file, const std::string& sql,
                               const RowLimits& limits);

// The result as a tool returns it: {"columns", "rows", "row_count", "truncated", ...}.
nlohmann::ordered_json rows_json(CappedRows r, const RowLimits& limits);

}  // namespace gpuwhy::mcp
