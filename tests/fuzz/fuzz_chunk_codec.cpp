// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: chunk blobs -> rows (src/store/chunk_codec.cpp). Damaged blobs must be
// refused with an error; a decoded chunk re-encodes to a chunk that decodes to the same rows.
// A mutated chunk of format 3 or later fails its checksum before its body is read: each input is
// also decoded with its checksum made right, so the body's decoding is what the fuzzer explores.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "store/chunk_codec.hpp"
#include "store/crc32.hpp"

namespace {
using namespace gpuwhy::store;

void check(std::string_view blob) {
  Chunk c;
  if (!decode_chunk(blob, c).ok()) return;
  if (c.columns == 0 || c.rows == 0) return;
  // encode() sorts by a column (stably): compare only chunks already in that order.
  const auto first = c.column(0);
  if (!std::is_sorted(first.begin(), first.end())) return;
  ChunkBuilder b(c.columns);
  std::vector<int64_t> row(c.columns);
  for (uint32_t r = 0; r < c.rows; ++r) {
    uint64_t nulls = 0;
    for (uint32_t col = 0; col < c.columns; ++col) {
      row[col] = c.value(col, r);
      if (c.is_null(col, r)) nulls |= uint64_t{1} << col;
    }
    b.add(row, nulls);
  }
  Chunk again;
  if (!decode_chunk(b.encode(0), again).ok()) std::abort();
  if (!again.same_content(c)) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view blob(reinterpret_cast<const char*>(data), size);
  check(blob);
  if (size > 5 && data[0] >= 3) {
    std::string fixed(blob);
    const uint32_t crc = crc32_of(0, fixed.data(), fixed.size() - 4);
    for (int i = 0; i < 4; ++i) fixed[fixed.size() - 4 + i] = static_cast<char>(crc >> (8 * i));
    check(fixed);
  }
  return 0;
}
