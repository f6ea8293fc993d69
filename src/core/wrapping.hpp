// SPDX-License-Identifier: Apache-2.0
// Two's-complement addition and subtraction of int64 values, modulo 2^64: chunk deltas of any
// int64 (pointers, u64 bit patterns) round-trip, and rollup sums wrap instead of overflowing
// (undefined behaviour); no real trace comes near 2^63.
#pragma once

#include <cstdint>

namespace gpuwhy {

inline int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

inline int64_t wrapping_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}

}  // namespace gpuwhy
