// SPDX-License-Identifier: Apache-2.0
// Chunk layout (all integers are LEB128 varints unless said otherwise):
//   u8 format (kChunkFormat), rows, columns, then per column:
//   u8 tag: low 3 bits the mode, bit 3 set when a presence bitmap (ceil(rows/8) bytes, bit r of
//   byte r/8 = row r present) follows; then the present values of the column:
//     Null:  nothing (every row NULL)
//     Const: zigzag(value), shared by every present row
//     Delta: zigzag(value - previous present value), the first against 0
//     Plain: zigzag(value)
//     Dict:  n (1..256), n zigzag deltas of the ascending distinct values, then one u8 index per
//            present row
//     Bits:  (format 2) as Dict with n <= 16, the indexes packed into b = bits(n - 1) (1..4) bits
//            each, row i at bit i*b of the byte string (low bits first), ceil(count*b/8) bytes
//     PackedPlain: (format 4) zigzag(base), then the values less base in blocks of 16 (the last
//            may be shorter): u8 b (0..64), then the block's values in b bits each, value i at
//            bit i*b (low bits first), ceil(n*b/8) bytes. base is the smallest of the values.
//     PackedDelta: (format 4) zigzag(first value), then the deltas from the previous present
//            value of the others, stored as PackedPlain stores values.
//   (format 3) then u32 little-endian: zlib crc32 of every byte before it
// Arithmetic on values is modulo 2^64, so any int64 (pointers, u64 bit patterns) round-trips.
#include "store/chunk_codec.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <numeric>

#include "core/wrapping.hpp"
#include "store/crc32.hpp"

namespace gpuwhy::store {
namespace {

enum Mode : uint8_t {
  kNull = 0,
  kConst = 1,
  kDelta = 2,
  kPlain = 3,
  kDict = 4,
  kBits = 5,
  kPackedDelta = 6,
  kPackedPlain = 7,
};
constexpr uint8_t kHasBitmap = 0x08;
constexpr size_t kMaxDict = 256;
// A dictionary this small packs its indexes into bits: flags, cpu, api and op columns take one
// to four distinct values per thread, a byte each in a plain dictionary.
constexpr size_t kMaxBitsDict = 16;
// Values per block of a Packed column: each block has its own width, so one outlier (a thread's
// long pause between calls) widens 16 values, not the chunk. Time deltas and durations pack into
// fewer bytes than varints, and unpacking them has no branch per value: a varint's length is a
// branch the CPU mispredicts for every second timestamp.
constexpr size_t kPackBlock = 16;

// Bits per index of a dictionary of n (2..16) values.
uint32_t index_bits(size_t n) {
  uint32_t b = 1;
  while ((size_t{1} << b) < n) ++b;
  return b;
}

uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t unzigzag(uint64_t u) { return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1)); }

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Appends n values of b bits each (value(k) < 2^b), value k at bit k*b, low bits first:
// ceil(n*b/8) bytes. The layout of Bits indexes and of Packed blocks. A 64-bit accumulator takes
// each value at its bit offset, and its full words go out as 8 little-endian bytes.
template <class Value>
void put_bits(std::string& out, size_t n, uint32_t b, Value value) {
  uint64_t acc = 0;
  uint32_t filled = 0;
  auto put_word = [&](uint64_t w, size_t nbytes) {
    for (size_t j = 0; j < nbytes; ++j) out.push_back(static_cast<char>(w >> (8 * j)));
  };
  for (size_t k = 0; k < n && b > 0; ++k) {
    const uint64_t x = value(k);
    acc |= x << filled;
    if (filled + b < 64) {
      filled += b;
      continue;
    }
    put_word(acc, 8);
    acc = filled ? x >> (64 - filled) : 0;
    filled = filled + b - 64;
  }
  put_word(acc, (filled + 7) / 8);
}

// The Packed form of the n values at(0) .. at(n - 1) (deltas or values): its size, or appended
// to `out` when given. `at` computes a delta where one is packed: no vector of them is made.
template <class At>
size_t packed(size_t n_values, At at, std::string* out) {
  int64_t base = n_values ? at(0) : 0;
  for (size_t i = 1; i < n_values; ++i) base = std::min(base, at(i));
  size_t size = varint_size(zigzag(base));
  if (out) put_varint(*out, zigzag(base));
  for (size_t i = 0; i < n_values; i += kPackBlock) {
    const size_t n = std::min(kPackBlock, n_values - i);
    auto less_base = [&](size_t k) { return static_cast<uint64_t>(wrapping_sub(at(i + k), base)); };
    uint64_t any = 0;
    for (size_t k = 0; k < n; ++k) any |= less_base(k);
    const auto b = static_cast<uint32_t>(std::bit_width(any));
    size += 1 + (n * b + 7) / 8;
    if (!out) continue;
    out->push_back(static_cast<char>(b));
    put_bits(*out, n, b, less_base);
  }
  return size;
}

// The distinct values of `v` in ascending order into `dict`, if there are at most kMaxDict of
// them; false (and `dict` incomplete) at the first one more. A hash set that stops there: a
// column of timestamps costs a few hundred probes, where sorting a copy of it (as the writer
// did) was most of the time it spent encoding a chunk.
bool small_dictionary(const std::vector<int64_t>& v, std::vector<int64_t>& dict) {
  constexpr size_t kSlots = 4 * kMaxDict;                // a power of two, at most a quarter full
  constexpr int kShift = 64 - std::countr_zero(kSlots);  // a hash's top bits index a slot
  std::array<int64_t, kSlots> key;
  std::array<bool, kSlots> used{};
  dict.clear();
  for (const int64_t x : v) {
    size_t h = static_cast<size_t>((static_cast<uint64_t>(x) * 0x9E3779B97F4A7C15ull) >> kShift);
    while (used[h] && key[h] != x) h = (h + 1) % kSlots;
    if (used[h]) continue;
    if (dict.size() == kMaxDict) return false;
    used[h] = true;
    key[h] = x;
    dict.push_back(x);
  }
  std::sort(dict.begin(), dict.end());
  return true;
}

// The values of one column for the present rows, in output order, and which rows they are.
void encode_column(std::string& out, const std::vector<int64_t>& v,
                   const std::vector<uint8_t>& present, uint32_t rows, uint8_t format) {
  const bool all_present = v.size() == rows;
  if (v.empty()) {
    out.push_back(static_cast<char>(kNull));
    return;
  }
  // Sizes of each candidate encoding of the values (the bitmap costs the same for all).
  size_t delta = 0, plain = 0;
  bool constant = true;
  int64_t prev = 0;
  for (int64_t x : v) {
    delta += varint_size(zigzag(wrapping_sub(x, prev)));
    plain += varint_size(zigzag(x));
    constant = constant && x == v.front();
    prev = x;
  }
  std::vector<int64_t> dict;
  size_t dict_size = SIZE_MAX, bits_size = SIZE_MAX;
  if (!constant && small_dictionary(v, dict)) {
    size_t values = varint_size(dict.size());
    int64_t p = 0;
    for (int64_t x : dict) {
      values += varint_size(zigzag(wrapping_sub(x, p)));
      p = x;
    }
    dict_size = values + v.size();
    if (dict.size() <= kMaxBitsDict && format >= 2)
      bits_size = values + (v.size() * index_bits(dict.size()) + 7) / 8;
  }
  // Packed values, and Packed deltas after the first value: as a delta from 0 it would widen
  // the first block.
  auto value_at = [&](size_t i) { return v[i]; };
  auto delta_at = [&](size_t i) { return wrapping_sub(v[i + 1], v[i]); };
  size_t packed_delta = SIZE_MAX, packed_plain = SIZE_MAX;
  if (!constant && format >= 4) {
    packed_delta = varint_size(zigzag(v.front())) + packed(v.size() - 1, delta_at, nullptr);
    packed_plain = packed(v.size(), value_at, nullptr);
  }
  Mode mode = constant ? kConst : kPlain;
  if (!constant) {
    size_t best = plain;
    if (delta < best) mode = kDelta, best = delta;
    if (dict_size < best) mode = kDict, best = dict_size;
    if (bits_size < best) mode = kBits, best = bits_size;
    // Packed decodes several times faster than varints: it is chosen up to 1/16 larger than
    // them. A dictionary, as fast to read, only gives way to a smaller Packed.
    const size_t limit = mode == kDict || mode == kBits ? best - 1 : best + best / 16;
    if (packed_plain <= limit && packed_plain <= packed_delta)
      mode = kPackedPlain;
    else if (packed_delta <= limit)
      mode = kPackedDelta;
  }
  out.push_back(static_cast<char>(mode | (all_present ? 0 : kHasBitmap)));
  if (!all_present) {
    const size_t at = out.size();
    out.append((rows + 7) / 8, '\0');
    for (uint32_t r = 0; r < rows; ++r)
      if (present[r]) out[at + r / 8] = static_cast<char>(out[at + r / 8] | (1 << (r % 8)));
  }
  switch (mode) {
    case kConst:
      put_varint(out, zigzag(v.front()));
      break;
    case kDelta:
      prev = 0;
      for (int64_t x : v) {
        put_varint(out, zigzag(wrapping_sub(x, prev)));
        prev = x;
      }
      break;
    case kPlain:
      for (int64_t x : v) put_varint(out, zigzag(x));
      break;
    case kPackedDelta:
      put_varint(out, zigzag(v.front()));
      packed(v.size() - 1, delta_at, &out);
      break;
    case kPackedPlain:
      packed(v.size(), value_at, &out);
      break;
    case kDict:
    case kBits: {
      put_varint(out, dict.size());
      int64_t p = 0;
      for (int64_t x : dict) {
        put_varint(out, zigzag(wrapping_sub(x, p)));
        p = x;
      }
      auto index = [&](int64_t x) {
        return static_cast<uint8_t>(std::lower_bound(dict.begin(), dict.end(), x) - dict.begin());
      };
      if (mode == kDict) {
        for (int64_t x : v) out.push_back(static_cast<char>(index(x)));
        break;
      }
      put_bits(out, v.size(), index_bits(dict.size()), [&](size_t i) { return index(v[i]); });
      break;
    }
    default:
      break;
  }
}

class ByteCursor {
 public:
  explicit ByteCursor(std::string_view b)
      : p_(reinterpret_cast<const uint8_t*>(b.data())), end_(p_ + b.size()) {}
  bool ok() const { return ok_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  uint8_t byte() {
    if (p_ >= end_) return fail();
    return *p_++;
  }
  uint64_t varint() {
    // Ten bytes left hold any varint: no bounds check per byte (most of a chunk's values).
    if (end_ - p_ >= 10) [[likely]] {
      uint64_t b = *p_++;
      if (b < 0x80) return b;
      uint64_t v = b & 0x7f;
      for (int shift = 7; shift < 64; shift += 7) {
        b = *p_++;
        v |= (b & 0x7f) << shift;
        if (b < 0x80) return v;
      }
      return fail();
    }
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return fail();
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return fail();
  }
  // Steps over n varints without decoding them (a column the reader does not want).
  bool skip_varints(uint64_t n) {
    for (; n > 0; ++p_) {
      if (p_ >= end_) return fail(), false;
      n -= *p_ < 0x80;
    }
    return true;
  }
  const uint8_t* take(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) {
      fail();
      return nullptr;
    }
    const uint8_t* at = p_;
    p_ += n;
    return at;
  }

 private:
  uint8_t fail() {
    ok_ = false;
    p_ = end_;
    return 0;
  }
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

constexpr std::string_view kCorruptPrefix = "corrupt event chunk in the trace file: ";

Error corrupt(const std::string& what) {
  return Error{std::string(kCorruptPrefix) + what,
               "the file was damaged (copy it again, or re-record the trace)"};
}

uint32_t checksum(std::string_view bytes) { return crc32_of(0, bytes.data(), bytes.size()); }

}  // namespace

void ChunkBuilder::add(std::span<const int64_t> values, uint64_t null_mask) {
  values_.insert(values_.end(), values.begin(), values.begin() + columns_);
  masks_.push_back(null_mask);
}

void ChunkBuilder::clear() {
  values_.clear();
  masks_.clear();
}

std::string ChunkBuilder::encode(uint32_t sort_col, uint8_t format) {
  const uint32_t n = rows();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return value(a, sort_col) < value(b, sort_col); });
  std::string out;
  out.reserve(size_t(n) * 16 + 64);
  out.push_back(static_cast<char>(format));
  put_varint(out, n);
  put_varint(out, columns_);
  std::vector<int64_t> col;
  std::vector<uint8_t> present(n);
  col.reserve(n);
  for (uint32_t c = 0; c < columns_; ++c) {
    col.clear();
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t r = order[i];
      present[i] = !is_null(r, c);
      if (present[i]) col.push_back(value(r, c));
    }
    encode_column(out, col, present, n, format);
  }
  clear();
  if (format < 3) return out;
  const uint32_t crc = checksum(out);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(crc >> (8 * i)));
  return out;
}

bool chunk_damaged(const Error& e) { return e.what.starts_with(kCorruptPrefix); }

namespace {
// Byte b of a presence bitmap as eight bytes of 0 or 1 (row order = bit order, little endian).
constexpr std::array<uint64_t, 256> spread_bits() {
  std::array<uint64_t, 256> t{};
  for (unsigned b = 0; b < 256; ++b)
    for (unsigned i = 0; i < 8; ++i) t[b] |= uint64_t{(b >> i) & 1u} << (8 * i);
  return t;
}
constexpr std::array<uint64_t, 256> kSpreadBits = spread_bits();
static_assert(std::endian::native == std::endian::little, "kSpreadBits is stored as bytes");
}  // namespace

namespace {
// The entries of a Dict or Bits column's dictionary, read and checked; 0 when the column is
// damaged (no writer makes an empty dictionary). Format 1 has no Bits encoding.
uint64_t dictionary_size(ByteCursor& in, uint8_t mode, uint8_t format) {
  const uint64_t n = in.varint();
  const uint64_t max = mode == kBits ? kMaxBitsDict : kMaxDict;
  if (!in.ok() || n > max || (mode == kBits && format < 2)) return 0;
  return n;
}

// The rows a presence bitmap marks present: a word of it at a time (a bit at a time was a tenth
// of decoding a chunk whose nullable columns were stepped over).
uint64_t present_rows(const uint8_t* bits, uint64_t rows) {
  const uint64_t bytes = rows / 8;
  uint64_t count = 0, i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, bits + i, 8);
    count += static_cast<uint64_t>(std::popcount(w));
  }
  for (; i < bytes; ++i) count += static_cast<uint64_t>(std::popcount(bits[i]));
  if (rows % 8) {
    const auto tail = static_cast<uint8_t>(bits[bytes] & ((1u << (rows % 8)) - 1));
    count += static_cast<uint64_t>(std::popcount(tail));
  }
  return count;
}

// Steps `in` over the values of a column of `mode` with `count` present rows.
Status skip_column(ByteCursor& in, uint8_t mode, uint64_t count, uint8_t format) {
  switch (mode) {
    case kConst:
      (void)in.varint();
      return {};
    case kDelta:
    case kPlain:
      (void)in.skip_varints(count);
      return {};
    case kPackedDelta:
    case kPackedPlain: {
      if (format < 4) break;
      if (mode == kPackedDelta && count > 0) {
        (void)in.varint();  // the first value
        --count;
      }
      (void)in.varint();
      for (uint64_t i = 0; i < count && in.ok(); i += kPackBlock) {
        const uint64_t b = in.byte();
        if (b > 64) return corrupt("bad packed width");
        (void)in.take((std::min<uint64_t>(kPackBlock, count - i) * b + 7) / 8);
      }
      return {};
    }
    case kDict:
    case kBits: {
      const uint64_t n = dictionary_size(in, mode, format);
      if (n == 0) return corrupt("bad dictionary");
      if (!in.skip_varints(n)) return {};
      const uint64_t bytes = mode == kDict ? count : (count * index_bits(n < 2 ? 2 : n) + 7) / 8;
      (void)in.take(bytes);
      return {};
    }
    default:
      break;
  }
  return corrupt("unknown column encoding " + std::to_string(mode));
}
}  // namespace

namespace {
// What a column that was not decoded reads: NULL, as 0 (Chunk::col_v and col_p point here).
alignas(64) const int64_t kZeroValues[kChunkRows] = {};
const uint8_t kNonePresent[kChunkRows] = {};
}  // namespace

namespace {
// Reads `count` indexes of b = index_bits(n) bits each and stores dict[index] in v[0, count);
// `largest` becomes the largest index read. False when the blob is too short (`in` has failed).
// Each index is a shift and a mask of the 8 bytes at its first bit, so the bytes are copied
// where 8 more (zeros) follow them: no index needs a branch or a bounds check.
bool unpack_indexes(ByteCursor& in, const int64_t* dict, uint64_t n, uint64_t count, int64_t* v,
                    uint32_t& largest) {
  const uint32_t b = index_bits(n < 2 ? 2 : n);
  const uint64_t mask = (uint64_t{1} << b) - 1;
  const size_t bytes = (count * b + 7) / 8;
  const uint8_t* packed = in.take(bytes);
  if (!packed) return false;
  uint8_t padded[kChunkRows * 4 / 8 + 8];
  std::memcpy(padded, packed, bytes);
  std::memset(padded + bytes, 0, 8);
  uint64_t hi = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t bit = i * b;
    uint64_t word;
    std::memcpy(&word, padded + bit / 8, 8);
    const uint64_t k = (word >> (bit % 8)) & mask;
    hi = std::max(hi, k);
    v[i] = dict[k];
  }
  largest = static_cast<uint32_t>(hi);
  return true;
}

// Reads a Packed column's `count` values into v[0, count): for PackedPlain base plus each
// block's values, for PackedDelta the first value and then the running sum of the deltas that
// follow it, stored as PackedPlain stores values. False when the blob is too short or a width is
// over 64.
bool unpack_values(ByteCursor& in, bool delta, uint64_t count, int64_t* v) {
  uint64_t prev = 0;
  if (delta && count > 0) {
    prev = static_cast<uint64_t>(unzigzag(in.varint()));
    *v++ = static_cast<int64_t>(prev);
    --count;
  }
  const uint64_t base = static_cast<uint64_t>(unzigzag(in.varint()));
  for (uint64_t i = 0; i < count && in.ok(); i += kPackBlock) {
    const uint64_t n = std::min<uint64_t>(kPackBlock, count - i);
    const uint32_t b = in.byte();
    if (b > 64) return false;
    const size_t bytes = (n * b + 7) / 8;
    // Each value is a shift and a mask of the 8 bytes at its first bit (two words past 56
    // bits): a block with fewer than 8 bytes of the blob after it is read from a padded copy.
    uint8_t copy[kPackBlock * 8 + 16];
    const uint8_t* src = in.take(bytes);
    if (!src) return false;
    if (in.left() < 16) {
      std::memcpy(copy, src, bytes);
      std::memset(copy + bytes, 0, 16);
      src = copy;
    }
    const uint64_t mask = b == 64 ? ~uint64_t{0} : (uint64_t{1} << b) - 1;
    uint64_t x[kPackBlock];
    if (b <= 56) {
      for (uint64_t k = 0; k < n; ++k) {
        const uint64_t bit = k * b;
        uint64_t word;
        std::memcpy(&word, src + bit / 8, 8);
        x[k] = ((word >> (bit % 8)) & mask) + base;
      }
    } else {
      for (uint64_t k = 0; k < n; ++k) {
        const uint64_t bit = k * b;
        uint64_t lo, hi;
        std::memcpy(&lo, src + bit / 8, 8);
        std::memcpy(&hi, src + bit / 8 + 8, 8);
        const uint32_t sh = bit % 8;
        const uint64_t word = sh ? (lo >> sh) | (hi << (64 - sh)) : lo;
        x[k] = (word & mask) + base;
      }
    }
    if (delta) {
      for (uint64_t k = 0; k < n; ++k) v[i + k] = static_cast<int64_t>(prev += x[k]);
    } else {
      for (uint64_t k = 0; k < n; ++k) v[i + k] = static_cast<int64_t>(x[k]);
    }
  }
  return in.ok();
}

// Moves a column's `count` present values from v[0, count) to their rows in v[0, rows), the
// absent rows reading 0: from the last row back, so no value is overwritten before it moves.
void expand_present(int64_t* v, const uint8_t* present, uint64_t count, uint64_t rows) {
  uint64_t j = count;
  for (uint64_t r = rows; r-- > 0;) {
    const uint8_t p = present[r];
    j -= p;
    // j <= r here: v[j] is in bounds whether or not the row is present.
    v[r] = v[j] & -static_cast<int64_t>(p);
  }
}
}  // namespace

Chunk& Chunk::operator=(const Chunk& o) {
  if (this == &o) return *this;
  rows = o.rows;
  columns = o.columns;
  values = o.values;
  present = o.present;
  // The decoded columns point into o's storage: point them into the copy's.
  col_v.resize(o.col_v.size());
  col_p.resize(o.col_p.size());
  for (size_t c = 0; c < o.col_v.size(); ++c) {
    const bool own = o.col_v[c] != kZeroValues;
    col_v[c] = own ? values.data() + (o.col_v[c] - o.values.data()) : kZeroValues;
    col_p[c] = own ? present.data() + (o.col_p[c] - o.present.data()) : kNonePresent;
  }
  return *this;
}

const int64_t* Chunk::values_of(uint32_t col) const {
  return col < columns ? col_v[col] : kZeroValues;
}
const uint8_t* Chunk::present_of(uint32_t col) const {
  return col < columns ? col_p[col] : kNonePresent;
}

bool Chunk::same_content(const Chunk& o) const {
  if (rows != o.rows || columns != o.columns) return false;
  for (uint32_t c = 0; c < columns; ++c)
    for (uint32_t r = 0; r < rows; ++r)
      if (value(c, r) != o.value(c, r) || is_null(c, r) != o.is_null(c, r)) return false;
  return true;
}

Status decode_chunk(std::string_view blob, Chunk& out, uint64_t want) {
  if (blob.empty()) return corrupt("empty chunk");
  uint8_t format = static_cast<uint8_t>(blob[0]);
  // Format 1 is format 2 without the Bits encoding, 3 is 2 with a checksum, 4 is 3 with the
  // Packed encodings: a reader of 4 reads them all.
  if (format == 0 || format > 4)
    return Error{"event chunk format " + std::to_string(format) + " is not known to this gpuwhy",
                 "analyse the file with the gpuwhy version that recorded it, or a newer one"};
  if (format >= 3) {
    if (blob.size() < 5) return corrupt("chunk is truncated");
    const auto* tail = reinterpret_cast<const unsigned char*>(blob.data() + blob.size() - 4);
    const uint32_t stored = tail[0] | tail[1] << 8 | tail[2] << 16 | uint32_t{tail[3]} << 24;
    blob.remove_suffix(4);
    if (checksum(blob) != stored) return corrupt("checksum mismatch");
  }
  ByteCursor in(blob);
  in.byte();
  const uint64_t rows = in.varint(), columns = in.varint();
  // No writer makes chunks over kChunkRows; a bigger count is damage, refused before allocating.
  if (!in.ok() || rows > kChunkRows || columns > kMaxChunkColumns)
    return corrupt("bad chunk header");
  out.rows = static_cast<uint32_t>(rows);
  out.columns = static_cast<uint32_t>(columns);
  // Every column below writes all of its rows (absent ones as 0), so the reused buffers need
  // no clearing first: for a 4096-row chunk that clearing cost as much as decoding.
  out.values.resize(rows * columns);
  out.present.resize(rows * columns);
  out.col_v.resize(columns);
  out.col_p.resize(columns);
  for (uint32_t c = 0; c < columns; ++c) {
    int64_t* v = out.values.data() + size_t(c) * rows;
    uint8_t* pres = out.present.data() + size_t(c) * rows;
    out.col_v[c] = v;
    out.col_p[c] = pres;
    const uint8_t tag = in.byte();
    const uint8_t mode = tag & 0x07;
    if (mode == kNull) {
      out.col_v[c] = kZeroValues;
      out.col_p[c] = kNonePresent;
      continue;
    }
    const bool bitmap = tag & kHasBitmap;
    const uint8_t* bits = nullptr;
    if (bitmap) {
      bits = in.take((rows + 7) / 8);
      if (!bits) break;
    }
    if (!((want >> c) & 1)) {  // stepped over: its values' extent, nothing stored
      const uint64_t count = bitmap ? present_rows(bits, rows) : rows;
      if (Status st = skip_column(in, mode, count, format); !st) return st;
      if (!in.ok()) break;
      out.col_v[c] = kZeroValues;
      out.col_p[c] = kNonePresent;
      continue;
    }
    if (bitmap) {
      // Eight rows per bitmap byte: the nullable columns (sizes, addresses, stacks) are most of
      // a chunk's columns, and most of their rows are absent.
      uint32_t r = 0;
      for (; r + 8 <= rows; r += 8) {
        const uint64_t spread = kSpreadBits[bits[r / 8]];
        std::memcpy(pres + r, &spread, 8);
      }
      for (; r < rows; ++r) pres[r] = (bits[r / 8] >> (r % 8)) & 1;
    } else {
      std::fill(pres, pres + rows, 1);
    }
    // Each mode writes the column's present values densely into v[0, count), in loops without
    // a branch per row; a bitmap column then moves them to their rows (expand_present). A
    // truncated blob reads zeros until the check below.
    const uint64_t count = bitmap ? present_rows(bits, rows) : rows;
    bool placed = !bitmap;  // the values are in their rows
    switch (mode) {
      case kConst: {
        // Written to its rows at once: no values to move.
        const int64_t k = unzigzag(in.varint());
        for (uint64_t r = 0; r < rows; ++r) v[r] = k & -static_cast<int64_t>(pres[r]);
        placed = true;
        break;
      }
      case kDelta: {
        int64_t prev = 0;
        for (uint64_t i = 0; i < count; ++i)
          v[i] = prev = wrapping_add(prev, unzigzag(in.varint()));
        break;
      }
      case kPlain:
        for (uint64_t i = 0; i < count; ++i) v[i] = unzigzag(in.varint());
        break;
      case kPackedDelta:
      case kPackedPlain:
        if (format < 4) return corrupt("unknown column encoding " + std::to_string(mode));
        // A false with the cursor intact is a width over 64; a truncation is reported below.
        if (!unpack_values(in, mode == kPackedDelta, count, v) && in.ok())
          return corrupt("bad packed width");
        break;
      case kDict:
      case kBits: {
        const uint64_t n = dictionary_size(in, mode, format);
        if (n == 0) return corrupt("bad dictionary");
        // Every index a byte (or b bits) can hold has an entry: one past the dictionary reads
        // 0, and the largest index seen says afterwards whether any was out of range.
        int64_t dict[kMaxDict] = {};
        int64_t p = 0;
        for (uint64_t i = 0; i < n; ++i) dict[i] = p = wrapping_add(p, unzigzag(in.varint()));
        uint32_t largest = 0;
        if (mode == kDict) {
          const uint8_t* idx = in.take(count);
          if (!idx) break;
          for (uint64_t i = 0; i < count; ++i) {
            largest = std::max<uint32_t>(largest, idx[i]);
            v[i] = dict[idx[i]];
          }
        } else if (!unpack_indexes(in, dict, n, count, v, largest)) {
          break;
        }
        if (largest >= n) return corrupt("dictionary index out of range");
        break;
      }
      default:
        return corrupt("unknown column encoding " + std::to_string(mode));
    }
    if (!placed) expand_present(v, pres, count, rows);
    if (!in.ok()) break;
  }
  if (!in.ok()) return corrupt("chunk is truncated");
  return {};
}

}  // namespace gpuwhy::store
