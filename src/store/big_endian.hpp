// SPDX-License-Identifier: Apache-2.0
// Big-endian words as SQLite writes its file and WAL headers.
#pragma once

#include <cstdint>

namespace gpuwhy::store {

inline uint32_t be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

}  // namespace gpuwhy::store
