// SPDX-License-Identifier: Apache-2.0
// The integer range an INTEGER column's constraints allow, compared the way SQLite compares: what
// the event tables (chunked_vtab.cpp) narrow their chunk reads with before SQLite re-checks each
// row.
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <optional>

namespace gpuwhy::store {

enum class Op { kEq, kGt, kGe, kLt, kLe };

// The integers x that satisfy every constraint seen so far: [lo, hi], or none at all.
struct Range {
  int64_t lo = INT64_MIN;
  int64_t hi = INT64_MAX;
  bool none = false;
  bool empty() const { return none || lo > hi; }
  void at_least(int64_t v) { lo = std::max(lo, v); }
  void at_most(int64_t v) { hi = std::min(hi, v); }
};

inline constexpr double kTwo63 = 9223372036854775808.0;

// Narrows `r` by "x op v" for an INTEGER column x, comparing as SQLite does: NULL matches nothing,
// numeric text is a number (the column's affinity), other text and blobs sort after every number.
void narrow(Range& r, Op op, sqlite3_value* v);

// The Op of an xBestIndex constraint, if it is a comparison.
std::optional<Op> op_of(unsigned char op);

}  // namespace gpuwhy::store
