// SPDX-License-Identifier: Apache-2.0
// When an event table groups a GROUP BY / DISTINCT itself (chunked_vtab.cpp, grouped_rows.hpp):
// the plan xBestIndex chooses, what it carries to xFilter, and which columns a kept row holds.
#pragma once

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/chunked_tables.hpp"

namespace gpuwhy::store {

// What a grouped plan keeps and orders by, carried from xBestIndex to xFilter in idxStr as
// "<colUsed hex> <column> <desc> ...".
struct GroupingSpec {
  uint64_t used = 0;                       // SQLite's colUsed: bit c = column c is read
  std::vector<std::pair<int, bool>> keys;  // (column, descending)

  std::string text() const;
  static std::optional<GroupingSpec> parse(const char* s);
};

// The stored columns a grouped row keeps (those read, and the source of every label read) and
// where each column, stored or label, is found in it (-1: not kept).
struct KeptColumns {
  std::vector<uint32_t> stored;
  std::vector<int> slot_of;
};
KeptColumns kept_columns(const ChunkedTable& spec, uint64_t used);

// A grouped plan for this ORDER BY (SQLite's GROUP BY or DISTINCT keys), when every key is a
// column of the table and the rows a scan could keep, `stored_rows()` at most, fit
// `budget_bytes`; nullopt leaves the sorting to SQLite (whose sorter spills to disk).
std::optional<GroupingSpec> grouping_for(const ChunkedTable& spec, const sqlite3_index_info* info,
                                         size_t budget_bytes,
                                         const std::function<int64_t()>& stored_rows);

}  // namespace gpuwhy::store
