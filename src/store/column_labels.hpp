// SPDX-License-Identifier: Apache-2.0
// The texts of an event table's label columns (ChunkedLabel: api_calls.name, family, category),
// read from their lookup tables into memory so a scan names 8 M calls without 8 M joins.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "store/chunked_tables.hpp"

namespace gpuwhy::store {

class ColumnLabels {
 public:
  static Result<std::shared_ptr<const ColumnLabels>> load(sqlite3* db,
                                                          std::span<const ChunkedLabel> labels);

  // Label j of `id`: its text, or nullptr when the lookup table has no such id.
  const std::string* text(size_t j, int64_t id) const {
    const int64_t r = rank(j, id);
    return r < 0 ? nullptr : &labels_[j].texts[static_cast<size_t>(r)];
  }
  // The place of that text among label j's distinct texts in byte order (SQLite's BINARY
  // collation), -1 when there is none: equal texts have one rank, so it groups and sorts by text.
  int64_t rank(size_t j, int64_t id) const {
    const Label& l = labels_[j];
    if (id >= 0 && id < static_cast<int64_t>(l.small.size())) return l.small[static_cast<size_t>(id)];
    auto it = l.large.find(id);
    return it == l.large.end() ? -1 : it->second;
  }
  bool same_as(const ColumnLabels& o) const;

 private:
  struct Label {
    std::vector<std::pair<int64_t, std::string>> rows;  // (id, text) as read, by id
    std::vector<std::string> texts;                      // distinct, sorted
    std::vector<int32_t> small;                          // rank by id for ids below 4096
    std::unordered_map<int64_t, int32_t> large;          // the others
  };
  std::vector<Label> labels_;
};

}  // namespace gpuwhy::store
