// SPDX-License-Identifier: Apache-2.0
#include "store/int_range.hpp"

#include <cmath>

namespace gpuwhy::store {
namespace {

// "x op d" for a real d: the integer bounds it implies. Rounding only ever widens the range;
// SQLite re-checks every row (omit = 0), so a wider range is safe and a narrower one is not.
void narrow_real(Range& r, Op op, double d) {
  if (std::isnan(d)) {
    r.none = true;
    return;
  }
  // Smallest integer >= x (x already integral), or "none" above int64.
  auto lower = [&](double x) {
    if (x >= kTwo63)
      r.none = true;
    else if (x > -kTwo63)
      r.at_least(static_cast<int64_t>(x));
  };
  auto upper = [&](double x) {
    if (x < -kTwo63)
      r.none = true;
    else if (x < kTwo63)
      r.at_most(static_cast<int64_t>(x));
  };
  switch (op) {
    case Op::kEq:
      if (std::floor(d) != d) r.none = true;
      lower(d);
      upper(d);
      break;
    case Op::kGe:
    case Op::kGt:
      lower(std::ceil(d));  // x > d also means x >= ceil(d); the integral case stays wide
      break;
    case Op::kLe:
    case Op::kLt:
      upper(std::floor(d));
      break;
  }
}

void narrow_int(Range& r, Op op, int64_t v) {
  switch (op) {
    case Op::kEq:
      r.at_least(v);
      r.at_most(v);
      break;
    case Op::kGe:
      r.at_least(v);
      break;
    case Op::kGt:
      if (v == INT64_MAX)
        r.none = true;
      else
        r.at_least(v + 1);
      break;
    case Op::kLe:
      r.at_most(v);
      break;
    case Op::kLt:
      if (v == INT64_MIN)
        r.none = true;
      else
        r.at_most(v - 1);
      break;
  }
}

}  // namespace

void narrow(Range& r, Op op, sqlite3_value* v) {
  int type = sqlite3_value_type(v);
  sqlite3_value* copy = nullptr;
  if (type == SQLITE_TEXT) {
    // sqlite3_value_numeric_type converts in place: work on a copy of SQLite's argument.
    copy = sqlite3_value_dup(v);
    if (copy) {
      type = sqlite3_value_numeric_type(copy);
      v = copy;
    }
  }
  switch (type) {
    case SQLITE_INTEGER:
      narrow_int(r, op, sqlite3_value_int64(v));
      break;
    case SQLITE_FLOAT:
      narrow_real(r, op, sqlite3_value_double(v));
      break;
    case SQLITE_NULL:
      r.none = true;
      break;
    default:  // text or blob: greater than any integer
      if (op == Op::kEq || op == Op::kGt || op == Op::kGe) r.none = true;
      break;
  }
  sqlite3_value_free(copy);
}

std::optional<Op> op_of(unsigned char op) {
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_EQ:
      return Op::kEq;
    case SQLITE_INDEX_CONSTRAINT_GT:
      return Op::kGt;
    case SQLITE_INDEX_CONSTRAINT_GE:
      return Op::kGe;
    case SQLITE_INDEX_CONSTRAINT_LT:
      return Op::kLt;
    case SQLITE_INDEX_CONSTRAINT_LE:
      return Op::kLe;
    default:
      return std::nullopt;
  }
}


}  // namespace gpuwhy::store
