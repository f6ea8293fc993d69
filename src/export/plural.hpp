// SPDX-License-Identifier: Apache-2.0
// A count with its noun in the number the count asks for: "1 process", "2 processes", "0 threads".
// One helper for every count-noun the reports print, so none says "1 processes" or "3 step(s)".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/units.hpp"

namespace gpuwhy::render {

// `n` as fmt_count writes it ("12,345"), a space, then `one` when n is 1 and `many` otherwise
// (English: only exactly one is singular).
inline std::string count_of(uint64_t n, std::string_view one, std::string_view many) {
  std::string s = analysis::fmt_count(n);
  s += ' ';
  s += n == 1 ? one : many;
  return s;
}

}  // namespace gpuwhy::render
