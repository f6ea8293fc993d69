// SPDX-License-Identifier: Apache-2.0
// The chunk codec (store/chunk_codec.hpp): every column encoding round-trips, rows come back
// sorted by the sort column with their other values intact, and damaged blobs are errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "store/chunk_codec.hpp"

namespace gpuwhy::store {
namespace {

// A row as the test sees it: values and which columns are NULL.
struct TestRow {
  std::vector<int64_t> v;
  uint64_t nulls = 0;
  bool null(uint32_t c) const { return (nulls >> c) & 1; }
};

// Column layout of the random chunks; each column exercises one encoding.
enum Col : uint32_t {
  kTs,          // unsorted input, sort column: comes back sorted (delta)
  kAllNull,     // every row NULL
  kConst,       // one value
  kSmallDict,   // at most 256 distinct values
  kBigSpread,   // more than 256 distinct, random 64-bit (plain)
  kSomeNulls,   // ~30% NULL, small values
  kExtremes,    // INT64_MIN / INT64_MAX / 0 / -1, with NULLs
  kConstNulls,  // one value, some NULLs
  kDictNulls,   // dictionary with NULLs
  kNegDelta,    // decreasing values
  kTwoValues,   // 0 / 2, like api_calls.flags: indexes packed one bit each
  kFiveValues,  // 5 distinct: three bits per index, some straddling two bytes
  kColumns
};

std::vector<TestRow> random_rows(uint32_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t k) { return rng() % k; };
  std::vector<TestRow> rows(n);
  for (uint32_t r = 0; r < n; ++r) {
    TestRow& row = rows[r];
    row.v.assign(kColumns, 0);
    auto set_null = [&](uint32_t c) { row.nulls |= uint64_t{1} << c; };
    row.v[kTs] = 1'700'000'000'000'000'000 + static_cast<int64_t>(pick(1'000'000'000));
    set_null(kAllNull);
    row.v[kAllNull] = 12345;  // ignored: the column is NULL
    row.v[kConst] = -42;
    row.v[kSmallDict] = static_cast<int64_t>(0x7f0000000000 + pick(200) * 4096);
    row.v[kBigSpread] = static_cast<int64_t>(rng());
    if (pick(10) < 3)
      set_null(kSomeNulls);
    else
      row.v[kSomeNulls] = static_cast<int64_t>(pick(1000));
    static constexpr int64_t kEdge[] = {INT64_MIN, INT64_MAX, 0, -1};
    if (pick(5) == 0)
      set_null(kExtremes);
    else
      row.v[kExtremes] = kEdge[pick(4)];
    if (pick(4) == 0)
      set_null(kConstNulls);
    else
      row.v[kConstNulls] = INT64_MAX;
    if (pick(3) == 0)
      set_null(kDictNulls);
    else
      row.v[kDictNulls] = static_cast<int64_t>(pick(7)) - 3;
    row.v[kNegDelta] = 1'000'000 - static_cast<int64_t>(r) * 3;
    row.v[kTwoValues] = pick(64) == 0 ? 0 : 2;
    row.v[kFiveValues] = static_cast<int64_t>(0x7f0000000000 + pick(5) * 64);
  }
  return rows;
}

std::string encode(const std::vector<TestRow>& rows, uint32_t columns, uint32_t sort_col,
                   uint8_t format = kChunkFormat) {
  ChunkBuilder b(columns);
  for (const TestRow& r : rows) b.add(r.v, r.nulls);
  EXPECT_EQ(b.rows(), rows.size());
  std::string blob = b.encode(sort_col, format);
  EXPECT_TRUE(b.empty()) << "encode() empties the builder";
  return blob;
}

// Decoded rows must equal `rows` stably sorted by `sort_col`, NULLs included.
void expect_decodes_to(const std::string& blob, std::vector<TestRow> rows, uint32_t columns,
                       uint32_t sort_col) {
  std::stable_sort(rows.begin(), rows.end(), [&](const TestRow& a, const TestRow& b) {
    return a.v[sort_col] < b.v[sort_col];
  });
  Chunk c;
  Status st = decode_chunk(blob, c);
  ASSERT_TRUE(st.ok()) << st.error().line();
  ASSERT_EQ(c.rows, rows.size());
  ASSERT_EQ(c.columns, columns);
  for (uint32_t r = 0; r < c.rows; ++r)
    for (uint32_t col = 0; col < columns; ++col) {
      SCOPED_TRACE("row " + std::to_string(r) + " column " + std::to_string(col));
      ASSERT_EQ(c.is_null(col, r), rows[r].null(col));
      if (!rows[r].null(col)) {
        ASSERT_EQ(c.value(col, r), rows[r].v[col]);
      }
    }
}

TEST(ChunkCodec, RandomRowsRoundTripInEveryEncoding) {
  for (uint32_t n : {1u, 2u, 7u, 255u, 256u, 257u, 1000u, kChunkRows}) {
    SCOPED_TRACE("rows " + std::to_string(n));
    const auto rows = random_rows(n, n * 7919);
    for (uint8_t format = 1; format <= kChunkFormat; ++format) {
      SCOPED_TRACE("format " + std::to_string(format));
      const std::string blob = encode(rows, kColumns, kTs, format);
      EXPECT_EQ(blob[0], static_cast<char>(format));
      expect_decodes_to(blob, rows, kColumns, kTs);
    }
  }
}

// Packed blocks of every width, 0 to 64 bits (past 56 a value spans two words), a short last
// block, negative values and NULLs between them; the blocks of the last rows are read from a
// padded copy (the blob ends within 16 bytes of them).
TEST(ChunkCodec, PackedBlocksOfEveryWidthRoundTrip) {
  for (uint32_t n : {1u, 15u, 16u, 17u, 65u * 16u + 3u}) {
    SCOPED_TRACE("rows " + std::to_string(n));
    std::mt19937_64 rng(n);
    std::vector<TestRow> rows(n);
    uint64_t ts = 0;  // modulo 2^64, as the codec's arithmetic: encode() sorts what wrapped
    for (uint32_t r = 0; r < n; ++r) {
      const uint32_t width = (r / 16) % 65;  // each block of 16 its own width
      const uint64_t x = width == 0 ? 0 : rng() >> (64 - width);
      ts += x >> 2;  // deltas of up to 62 bits
      rows[r].v = {static_cast<int64_t>(ts), static_cast<int64_t>(x),
                   r % 3 ? static_cast<int64_t>(x - 7) : 0};
      if (r % 3 == 0) rows[r].nulls = 4;
    }
    expect_decodes_to(encode(rows, 3, 0), rows, 3, 0);
  }
}

// Timestamps and durations (deltas of 1-3 bytes, a long pause now and then) pack into fewer
// bytes than varints: the writer chooses Packed for them, and a format-3 reader cannot read it.
TEST(ChunkCodec, TimesArePackedSmallerThanVarints) {
  std::mt19937_64 rng(42);
  std::vector<TestRow> rows;
  int64_t ts = 1'700'000'000'000'000'000;
  for (uint32_t r = 0; r < kChunkRows; ++r) {
    ts += 100 + static_cast<int64_t>(rng() % 20000) + (rng() % 500 == 0 ? 2'000'000'000 : 0);
    rows.push_back({{ts, 1000 + static_cast<int64_t>(rng() % 9000)}, 0});
  }
  const std::string now = encode(rows, 2, 0), varints = encode(rows, 2, 0, 3);
  expect_decodes_to(now, rows, 2, 0);
  EXPECT_LT(now.size(), varints.size() * 15 / 16);
  // As a format-2 chunk (no checksum), the Packed encodings are damage, named as such.
  std::string relabelled = now.substr(0, now.size() - 4);
  relabelled[0] = 2;
  Chunk c;
  const Status st = decode_chunk(relabelled, c);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(chunk_damaged(st.error()));
  EXPECT_NE(st.error().what.find("unknown column encoding"), std::string::npos);
}

TEST(ChunkCodec, UnsortedInputComesBackSortedWithRowsIntact) {
  // Each row carries its own identity in every column: a row split across positions would show.
  std::vector<TestRow> rows;
  for (int64_t i : {5, 3, 9, 1, 3, 7, 0, 9, 2}) rows.push_back({{i * 100, i, -i, i * i}, 0});
  const std::string blob = encode(rows, 4, 0);
  Chunk c;
  ASSERT_TRUE(decode_chunk(blob, c).ok());
  ASSERT_EQ(c.rows, rows.size());
  for (uint32_t r = 0; r < c.rows; ++r) {
    if (r > 0) {
      EXPECT_LE(c.value(0, r - 1), c.value(0, r));
    }
    const int64_t i = c.value(1, r);
    EXPECT_EQ(c.value(0, r), i * 100);
    EXPECT_EQ(c.value(2, r), -i);
    EXPECT_EQ(c.value(3, r), i * i);
  }
  expect_decodes_to(blob, rows, 4, 0);  // equal timestamps keep their input order (stable)
}

TEST(ChunkCodec, DictionaryBoundaryAndExtremes) {
  // 256 distinct values fit a dictionary, 257 do not; both must round-trip, including the
  // extremes whose deltas wrap around 2^64.
  for (int distinct : {256, 257}) {
    std::vector<TestRow> rows;
    for (int i = 0; i < 600; ++i) {
      const int k = i % distinct;
      const int64_t v = k == 0   ? INT64_MIN
                        : k == 1 ? INT64_MAX
                                 : static_cast<int64_t>(k) * 1'000'003;
      rows.push_back({{i, v, k % 2 ? INT64_MIN : INT64_MAX}, 0});
    }
    SCOPED_TRACE(distinct);
    expect_decodes_to(encode(rows, 3, 0), rows, 3, 0);
  }
}

TEST(ChunkCodec, ColumnsPastTheStoredOnesReadAsNull) {
  const std::vector<TestRow> rows{{{1, 2}, 0}, {{3, 4}, 0}};
  Chunk c;
  ASSERT_TRUE(decode_chunk(encode(rows, 2, 0), c).ok());
  EXPECT_TRUE(c.is_null(5, 0));
  EXPECT_EQ(c.value(5, 1), 0);
  EXPECT_TRUE(c.column(5).empty());
  EXPECT_EQ(c.column(1).size(), 2u);
}

TEST(ChunkCodec, EmptyChunkRoundTrips) {
  ChunkBuilder b(3);
  Chunk c;
  ASSERT_TRUE(decode_chunk(b.encode(0), c).ok());
  EXPECT_EQ(c.rows, 0u);
}

// A small chunk that uses every column mode, with a presence bitmap.
std::string small_chunk() {
  std::vector<TestRow> rows = random_rows(11, 99);
  return encode(rows, kColumns, kTs);
}

TEST(ChunkCodec, EveryTruncationIsAnError) {
  const std::string blob = small_chunk();
  Chunk c;
  ASSERT_TRUE(decode_chunk(blob, c).ok());
  for (size_t len = 0; len < blob.size(); ++len) {
    SCOPED_TRACE("length " + std::to_string(len) + " of " + std::to_string(blob.size()));
    Status st = decode_chunk(std::string_view(blob).substr(0, len), c);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().what.find("corrupt event chunk"), std::string::npos) << st.error().what;
  }
}

TEST(ChunkCodec, CorruptBytesNeverCrash) {
  // Every byte replaced by a few values: decoding may succeed with other values (a varint can
  // still be a varint) or fail, but never reads out of bounds (run under ASan in CI's sanitizer
  // build) or accepts a chunk bigger than a writer makes.
  const std::string blob = small_chunk();
  Chunk c;
  size_t errors = 0;
  for (size_t i = 0; i < blob.size(); ++i)
    for (int x : {0x00, 0x07, 0x0c, 0x7f, 0x80, 0xff}) {
      std::string bad = blob;
      bad[i] = static_cast<char>(x);
      Status st = decode_chunk(bad, c);
      if (!st.ok()) {
        ++errors;
        EXPECT_FALSE(st.error().what.empty());
      } else {
        EXPECT_LE(c.rows, kChunkRows);
        EXPECT_EQ(c.values.size(), size_t(c.rows) * c.columns);
        EXPECT_EQ(c.present.size(), c.values.size());
      }
    }
  EXPECT_GT(errors, 0u);
}

// A two-valued column costs a bit per row (plus its two values), not a byte; 17 values take a
// byte each in a dictionary, and the 5 bits of their spread when Packed, which is smaller.
TEST(ChunkCodec, SmallDictionariesPackTheirIndexesIntoBits) {
  std::vector<TestRow> alone, two, wide;
  for (uint32_t r = 0; r < kChunkRows; ++r) {
    alone.push_back({{static_cast<int64_t>(r)}, 0});
    two.push_back({{static_cast<int64_t>(r), r % 64 == 0 ? 0 : 2}, 0});
    wide.push_back({{static_cast<int64_t>(r), static_cast<int64_t>(r % 17)}, 0});
  }
  const size_t base = encode(alone, 1, 0).size();
  const std::string packed = encode(two, 2, 0), bytes = encode(wide, 2, 0);
  expect_decodes_to(packed, two, 2, 0);
  expect_decodes_to(bytes, wide, 2, 0);
  EXPECT_LE(packed.size() - base, size_t{kChunkRows} / 8 + 8) << "one bit per row";
  EXPECT_LE(bytes.size() - base, size_t{kChunkRows} * 5 / 8 + kChunkRows / 16 + 8)
      << "five bits per row and a width per block of 16";
  const std::string dictionary = encode(wide, 2, 0, 3);
  expect_decodes_to(dictionary, wide, 2, 0);
  EXPECT_GE(dictionary.size() - encode(alone, 1, 0, 3).size(), size_t{kChunkRows})
      << "a byte per row";
}

// Files written before the bit-packed dictionaries have format-1 chunks: still read. A format-1
// chunk cannot hold the new encoding: one that does is damage.
TEST(ChunkCodec, FormatOneChunksStillRead) {
  std::vector<TestRow> wide, two;
  for (uint32_t r = 0; r < 300; ++r) {
    wide.push_back({{static_cast<int64_t>(r), static_cast<int64_t>(r % 17)}, 0});
    two.push_back({{static_cast<int64_t>(r), r % 2 ? 5 : 9}, 0});
  }
  const std::string old = encode(wide, 2, 0, 1);  // plain dictionary and deltas
  ASSERT_EQ(old[0], 1);
  expect_decodes_to(old, wide, 2, 0);
  std::string bad = encode(two, 2, 0, 2);  // a Bits column, no checksum
  bad[0] = 1;
  Chunk c;
  EXPECT_FALSE(decode_chunk(bad, c).ok());
}

TEST(ChunkCodec, UnknownFormatIsNamed) {
  std::string blob = small_chunk();
  blob[0] = static_cast<char>(kChunkFormat + 1);
  Chunk c;
  Status st = decode_chunk(blob, c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("format " + std::to_string(kChunkFormat + 1)), std::string::npos)
      << st.error().what;
  EXPECT_FALSE(st.error().hint.empty());
  EXPECT_FALSE(decode_chunk("", c).ok());
}

}  // namespace
}  // namespace gpuwhy::store
