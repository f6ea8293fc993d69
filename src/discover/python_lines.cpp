// SPDX-License-Identifier: Apache-2.0
// CPython line tables: which source line an instruction belongs to.
#include "discover/python.hpp"

#include <algorithm>
#include <climits>

namespace gpuwhy::discover {
namespace {

// The tables are read out of a traced process's memory and may be damaged or not a table at
// all: lines add up in 64 bits (no overflow, whatever the first line and deltas), and a sum that
// is no line number (negative, or beyond int) is "no line". Found by tests/fuzz/fuzz_python_lines.
int as_line(int64_t line) {
  return line >= 0 && line <= INT_MAX ? static_cast<int>(line) : -1;
}

}  // namespace

int line_from_linetable_310(std::string_view table, int firstlineno, int byte_offset) {
  // Pairs of (bytes covered, signed line delta); a delta of -128 marks bytes with no line
  // (Python 3.10 Objects/lnotab_notes.txt).
  int64_t line = firstlineno, end = 0;
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    const int64_t start = end;
    end += static_cast<unsigned char>(table[i]);
    const int delta = static_cast<signed char>(table[i + 1]);
    int this_line = -1;
    if (delta != -128) {
      line += delta;
      this_line = as_line(line);
    }
    if (start != end && byte_offset >= start && byte_offset < end) return this_line;
  }
  return -1;
}

namespace {

// 6-bit chunks, least significant first; bit 6 says another chunk follows.
uint64_t read_varint(std::string_view t, size_t& i) {
  uint64_t v = 0;
  for (int shift = 0; i < t.size() && shift < 64; shift += 6) {
    const unsigned char b = static_cast<unsigned char>(t[i++]);
    v |= static_cast<uint64_t>(b & 63) << shift;
    if (!(b & 64)) break;
  }
  return v;
}

// A signed line delta, kept within +-2^32 (a real one fits an int): deltas added up over any
// table then stay far from int64_t's limits.
int64_t read_svarint(std::string_view t, size_t& i) {
  const uint64_t v = read_varint(t, i);
  const int64_t magnitude = static_cast<int64_t>(std::min<uint64_t>(v >> 1, uint64_t{1} << 32));
  return (v & 1) ? -magnitude : magnitude;
}

}  // namespace

int line_from_locations(std::string_view table, int firstlineno, int index) {
  // Entries: a first byte with bit 7 set, code in bits 3-6, length - 1 (code units) in bits 0-2,
  // then the code's data (Python 3.11+ Objects/locations.md). Line deltas add up from firstlineno.
  int64_t line = firstlineno, end = 0;
  size_t i = 0;
  while (i < table.size()) {
    const unsigned char first = static_cast<unsigned char>(table[i++]);
    if (!(first & 0x80)) continue;  // not an entry's first byte: the table is damaged; resync
    const int code = (first >> 3) & 15;
    const int64_t start = end;
    end += (first & 7) + 1;
    bool has_line = true;
    switch (code) {
      case 15: has_line = false; break;             // no location
      case 14:                                      // long form
        line += read_svarint(table, i);
        read_varint(table, i);                      // end line delta
        read_varint(table, i);                      // column + 1
        read_varint(table, i);                      // end column + 1
        break;
      case 13: line += read_svarint(table, i); break;  // no column
      case 10: case 11: case 12: line += code - 10; i += 2; break;  // one-line forms
      default: i += 1; break;                       // short forms: same line, one column byte
    }
    if (index >= start && index < end) return has_line ? as_line(line) : -1;
  }
  return -1;
}

}  // namespace gpuwhy::discover
