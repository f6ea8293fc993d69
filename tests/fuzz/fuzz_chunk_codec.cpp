// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: chunk blobs -> rows (src/store/chunk_codec.cpp). Damaged blobs must be
// refused with an error; a decoded chunk re-encodes to a chunk that decodes to the same rows.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "store/chunk_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuwhy::store;
  const std::string_view blob(reinterpret_cast<const char*>(data), size);
  Chunk c;
  if (!decode_chunk(blob, c).ok()) return 0;
  if (c.columns == 0 || c.rows == 0) return 0;
  // encode() sorts by a column (stably): compare only chunks already in that order.
  const auto first = c.column(0);
  if (!std::is_sorted(first.begin(), first.end())) return 0;
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
  return 0;
}
