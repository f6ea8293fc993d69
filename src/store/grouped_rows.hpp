// SPDX-License-Identifier: Apache-2.0
// Rows of one scan held in memory and put in group order, so the event tables can answer GROUP BY
// and DISTINCT themselves (chunked_vtab.cpp) instead of passing every row through SQLite's
// sorter: 8 M calls grouped by API took 0.8 s in the sorter, and a GROUP BY key usually has a
// handful of values (an API, a thread, a stream), so the rows are counted into their groups in one
// pass and the groups sorted, not the rows. Keys with more distinct values than `max_groups` (a
// GROUP BY ts) fall back to sorting the rows by key.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

namespace gpuwhy::store {

// One value of a key; NULL sorts before every value, as in SQLite.
struct KeyPart {
  int64_t v = 0;
  bool null = false;
  bool operator==(const KeyPart&) const = default;
};

constexpr size_t kMaxKeyParts = 4;
using Key = std::array<KeyPart, kMaxKeyParts>;

class GroupedRows {
 public:
  // The key of a row from its values and NULL bits (bit i: value i is NULL); fills `parts` entries.
  using KeyOf = std::function<void(const int64_t* values, uint32_t nulls, Key& out)>;

  // `width` values per row (at most 32), a key of desc.size() parts (at most kMaxKeyParts), each
  // ascending or descending.
  GroupedRows(uint32_t width, std::vector<bool> desc, KeyOf key_of, size_t max_groups = 1 << 16);

  // Appends a row: an opaque 32-bit handle (the caller's way back to the row), its values, which of
  // them are NULL.
  void add(uint32_t handle, const int64_t* values, uint32_t nulls);
  // Puts the rows in key order (stable: rows of one key keep the order they were added in) and
  // positions on the first. Call once, after the last add().
  void order();

  // The current row, then the next, in key order.
  bool at_end() const { return at_ >= rows_; }
  void next();
  uint32_t handle() const { return static_cast<uint32_t>(static_cast<uint64_t>(row_[0])); }
  uint32_t nulls() const { return static_cast<uint32_t>(static_cast<uint64_t>(row_[0]) >> 32); }
  const int64_t* values() const { return row_ + 1; }
  // Bytes held per row (the vectors' growth aside), for callers that budget memory first.
  static size_t bytes_per_row(uint32_t width) { return 8 * (1 + size_t{width}); }

 private:
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  bool less(const Key& a, const Key& b) const;
  uint32_t group_of(const Key& k);
  void give_up_groups();
  void settle();

  uint32_t stride_;
  std::vector<bool> desc_;
  KeyOf key_of_;
  size_t max_groups_;
  size_t rows_ = 0;
  // While the keys fit: each group's rows (handle | nulls << 32, then the values), emitted group
  // by group, so the rows come out in the order they lie in memory.
  std::vector<std::vector<int64_t>> groups_;
  std::vector<Key> group_keys_;
  std::unordered_map<Key, uint32_t, KeyHash> index_;
  std::vector<uint32_t> small_;  // one non-NULL key part below 2^16: its group, or UINT32_MAX
  std::vector<uint32_t> group_order_;
  // Past max_groups: all rows in one vector, sorted through a permutation.
  bool too_many_groups_ = false;
  std::vector<int64_t> flat_;
  std::vector<uint32_t> perm_;
  // Position: the at_-th row in key order; group_order_[g], offset off (words) in it.
  size_t at_ = 0, g_ = 0, off_ = 0;
  const int64_t* row_ = nullptr;
};

}  // namespace gpuwhy::store
