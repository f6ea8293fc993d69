// SPDX-License-Identifier: Apache-2.0
// CRC-32 as zlib computes it (reflected polynomial 0xEDB88320, the chunks' checksum), folded
// with carry-less multiplication (PCLMULQDQ) on CPUs that have it: ten times zlib's table-driven
// speed, and every chunk explain reads is checked. Elsewhere, and for the last few bytes, zlib.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpuwhy::store {

// zlib's crc32(crc, data, n): `crc` is a previous result (0 to start).
uint32_t crc32_of(uint32_t crc, const void* data, size_t n);

// zlib's own, for tests comparing the two.
uint32_t crc32_zlib(uint32_t crc, const void* data, size_t n);

}  // namespace gpuwhy::store
