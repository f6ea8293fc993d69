// SPDX-License-Identifier: Apache-2.0
// Column-oriented encoding of a block ("chunk") of integer rows: the storage format of the
// high-rate event tables (api_calls, offcpu, ...). One chunk holds the rows of one thread, sorted
// by time; each column is stored on its own as all-NULL, one constant, a dictionary of at most
// 256 values (at most 16: indexes packed into bits), deltas from the previous row or plain values
// (zigzag varints, or bit-packed in blocks of 16), whichever is smallest, with a presence bitmap
// when the column has NULLs. Time columns become 1-3 byte deltas and pointers repeat (a few
// streams, a few kernels), so a GPU API call takes ~10-20 bytes instead of a ~75-byte SQLite row
// plus its index entry, and decoding it is a tight loop instead of SQLite's record parser. See
// docs/schema.md "Chunked event tables".
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace gpuwhy::store {

// First byte of every chunk blob. A reader refuses other formats (a newer writer's) by name.
// 2: small dictionaries' indexes packed into bits; format 1 chunks (older files) still read.
// 3: format 2 followed by a CRC-32 (zlib's, little-endian) of every byte before it, checked on
// every read: a flipped bit is reported instead of read as other numbers. 1 and 2 still read.
// 4: format 3 with the Packed encodings (bit-packed blocks of time deltas and durations, read
// without a branch per value). 1 to 3 still read.
inline constexpr uint8_t kChunkFormat = 4;
// Rows in a full chunk. Large enough that per-chunk overhead (one SQLite row, the column headers)
// is noise, small enough that a time window skips most of a long trace without decoding it.
inline constexpr uint32_t kChunkRows = 4096;
// Columns a chunked table may have (null masks are 64-bit).
inline constexpr uint32_t kMaxChunkColumns = 64;

// Rows collected for one chunk, row-major, in arrival order.
class ChunkBuilder {
 public:
  explicit ChunkBuilder(uint32_t columns) : columns_(columns) {}

  // `values` has columns() entries; bit c of null_mask set: column c is NULL (its value ignored).
  void add(std::span<const int64_t> values, uint64_t null_mask);
  uint32_t rows() const { return static_cast<uint32_t>(masks_.size()); }
  uint32_t columns() const { return columns_; }
  bool empty() const { return masks_.empty(); }
  int64_t value(uint32_t row, uint32_t col) const { return values_[size_t(row) * columns_ + col]; }
  bool is_null(uint32_t row, uint32_t col) const { return (masks_[row] >> col) & 1; }

  // Encodes the rows ordered by column `sort_col` (stable) and empties the builder. `format`
  // (1..kChunkFormat) limits the encodings to those of an older format: the tests' way of
  // making the chunks older files hold.
  std::string encode(uint32_t sort_col, uint8_t format = kChunkFormat);
  void clear();

 private:
  uint32_t columns_;
  std::vector<int64_t> values_;
  std::vector<uint64_t> masks_;
};

// A decoded chunk, column-major: value(c, r) is column c of row r; NULL reads as 0.
struct Chunk {
  uint32_t rows = 0;
  uint32_t columns = 0;  // as stored; a column past them reads as NULL (an older writer's chunk)
  // Where the decoded columns are kept; read them through value(), is_null() and column(): a
  // column that was not decoded (stepped over, or all NULL) is not written here but points at
  // shared zeros, since zeroing it cost as much as decoding the columns a reader asked for.
  std::vector<int64_t> values;
  std::vector<uint8_t> present;  // 1 = not NULL

  Chunk() = default;
  Chunk(const Chunk& o) { *this = o; }
  Chunk& operator=(const Chunk& o);
  Chunk(Chunk&&) = default;
  Chunk& operator=(Chunk&&) = default;

  int64_t value(uint32_t col, uint32_t row) const { return col < columns ? col_v[col][row] : 0; }
  bool is_null(uint32_t col, uint32_t row) const { return col >= columns || !col_p[col][row]; }
  // Column c as a contiguous array of rows() values (NULL as 0); empty past the stored columns.
  std::span<const int64_t> column(uint32_t col) const {
    if (col >= columns) return {};
    return {col_v[col], rows};
  }
  // Column c's values and presence for rows [0, rows): NULL (zeros) past the stored columns.
  // For loops over a whole chunk: no check per value.
  const int64_t* values_of(uint32_t col) const;
  const uint8_t* present_of(uint32_t col) const;
  // Same rows, columns, values and NULLs (whatever the storage holds).
  bool same_content(const Chunk& o) const;

  // Per column: its values and presence, in `values`/`present` or the shared zeros.
  std::vector<const int64_t*> col_v;
  std::vector<const uint8_t*> col_p;
};

// Every column of a chunk.
inline constexpr uint64_t kAllColumns = ~uint64_t{0};

// Decodes `blob` into `out` (its buffers are reused): the columns whose bit is set in `want`;
// the others are stepped over, not decoded, and read as NULL (zeroing them costs less than a
// check in every value() of the millions a loader makes). Errors name what is wrong: a
// truncated or corrupt blob (a checksum mismatch: chunk_damaged() is true of it), or a format
// this build does not know.
Status decode_chunk(std::string_view blob, Chunk& out, uint64_t want = kAllColumns);

// Whether a decode_chunk error is damage to the chunk (checksum, truncation, bad encoding), which
// a reader may skip and report, rather than an unknown format.
bool chunk_damaged(const Error& e);

}  // namespace gpuwhy::store
