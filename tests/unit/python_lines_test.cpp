// SPDX-License-Identifier: Apache-2.0
// CPython line tables decoded as the interpreters themselves decode them. Each table is the
// co_linetable of one function compiled by that version (pyenv 3.10.13, 3.11.7, 3.12.1, 3.13.0):
//
//   def f(a):                      # line 2
//       x = a + 1
//
//       y = [i for i in range(3)]
//       if x:
//           return len(y)  # long
//       return 0
//
// and the expected lines are what the interpreter reports for every instruction (3.10's
// co_lines() per byte; 3.11+ co_positions() per code unit; -1 where it reports None).
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "discover/python.hpp"

namespace gpuwhy::discover {
namespace {

std::string_view bytes(const char* s, size_t n) { return {s, n}; }

TEST(PythonLines, Python310LinetableByByteOffset) {
  static const char t[] = "\x08\x01\x12\x02\x04\x01\x08\x01\x04\x01";
  const std::vector<int> want = {3, 3, 3, 3, 3, 3, 3, 3, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
                                 5, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8};
  for (size_t off = 0; off < want.size(); ++off)
    EXPECT_EQ(line_from_linetable_310(bytes(t, sizeof t - 1), 2, static_cast<int>(off)), want[off])
        << "byte " << off;
  EXPECT_EQ(line_from_linetable_310(bytes(t, sizeof t - 1), 2, 42), -1) << "past the end";
}

void expect_locations(std::string_view table, const std::vector<int>& want) {
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(line_from_locations(table, 2, static_cast<int>(i)), want[i]) << "unit " << i;
  EXPECT_EQ(line_from_locations(table, 2, static_cast<int>(want.size())), -1) << "past the end";
}

TEST(PythonLines, Python311LocationTable) {
  static const char t[] =
      "\x80\x00\xd8\x08\x09\x88\x41\x89\x05\x80\x41\xe0\x08\x1d\xd0\x08\x1d\x95\x45\x98\x21\x91"
      "\x48\x94\x48\xd0\x08\x1d\xd1\x08\x1d\xd4\x08\x1d\x80\x41\xd8\x07\x08\xf0\x00\x01\x05\x16"
      "\xdd\x0f\x12\x90\x31\x89\x76\x8c\x76\x88\x0d\xd8\x0b\x0c\x88\x31";
  expect_locations(bytes(t, sizeof t - 1),
                   {2, 3, 3, 3, 3, 3, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
                    5, 5, 5, 5, 5, 5, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 8});
}

TEST(PythonLines, Python312LocationTableWithNoLocationEntries) {
  static const char t[] =
      "\x80\x00\xd8\x08\x09\x88\x41\x89\x05\x80\x41\xe4\x14\x19\x98\x21\x93\x48\xd6\x08\x1d\x88"
      "\x71\x8a\x11\xd0\x08\x1d\x80\x41\xd0\x08\x1d\xd9\x07\x08\xdc\x0f\x12\x90\x31\x8b\x76\x88"
      "\x0d\xd8\x0b\x0c\xf9\xf2\x07\x00\x09\x1e";
  expect_locations(bytes(t, sizeof t - 1),
                   {2, 3, 3, 3, 3, 3, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
                    5, 5, 5, 5, 5, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, -1, -1, 5, 5, 5});
}

TEST(PythonLines, Python313LocationTable) {
  static const char t[] =
      "\x80\x00\xd8\x08\x09\x88\x41\x89\x05\x80\x41\xe4\x14\x19\x98\x21\x94\x48\xd3\x08\x1d\x91"
      "\x48\x88\x71\x8a\x11\x91\x48\x80\x41\xd0\x08\x1d\xde\x07\x08\xdc\x0f\x12\x90\x31\x8b\x76"
      "\x88\x0d\xd8\x0b\x0c\xf9\xf2\x07\x00\x09\x1e";
  expect_locations(bytes(t, sizeof t - 1),
                   {2, 3, 3, 3, 3, 3, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
                    5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8,
                    -1, -1, 5, 5, 5});
}

// Every kind of entry of the location table, built by hand to Objects/locations.md; 3.14 keeps
// 3.11's format (Include/cpython/code.h, _PyCodeLocationInfoKind: short forms 0-9, one-line
// forms 10-12, no column 13, long 14, none 15). The fuzz corpus holds the same table
// (tests/fuzz/corpus/fuzz_python_lines/locations_314_all_kinds).
TEST(PythonLines, EveryEntryKindOfTheLocationTable) {
  static const char t[] =
      "\x81\x05"              // short form, 2 units: the first line
      "\xd8\x04\x08"          // one-line form, line + 1, 1 unit
      "\xe2\x01\x02"          // one-line form, line + 2, 3 units
      "\xe8\x06"              // no column, line + 3 (svarint 6), 1 unit
      "\xf1\x03\x00\x05\x09"  // long form, line - 1 (svarint 3), 2 units
      "\xf8";                 // no location, 1 unit
  const std::vector<int> want = {10, 10, 11, 13, 13, 13, 16, 15, 15, -1};
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(line_from_locations(bytes(t, sizeof t - 1), 10, static_cast<int>(i)), want[i])
        << "unit " << i;
  EXPECT_EQ(line_from_locations(bytes(t, sizeof t - 1), 10, 10), -1) << "past the end";
}

TEST(PythonLines, DamagedTablesGiveNoLine) {
  EXPECT_EQ(line_from_locations("", 10, 0), -1);
  EXPECT_EQ(line_from_locations("\x0f\x0f", 10, 0), -1);  // no entry start bit
  EXPECT_EQ(line_from_linetable_310("\x08", 10, 0), -1);   // half a pair
  EXPECT_EQ(line_from_locations("\xf0", 10, 0), 10);       // long form cut short: delta 0
}

// 3.13's own description of its layout (_Py_DebugOffsets), with the offsets measured on 3.13.0
// (all of the block's fields: tests/unit/python_layout_test.cpp).
TEST(PythonLayout, DebugOffsetsOf313) {
  std::vector<uint64_t> w(73, 0);
  std::memcpy(w.data(), "xdebugpy", 8);
  w[1] = 0x030d00f0;
  w[5] = 632, w[9] = 7344, w[21] = 8, w[23] = 72, w[25] = 160;
  w[28] = 80, w[29] = 8, w[30] = 0, w[31] = 56, w[33] = 70;
  w[34] = 208, w[35] = 112, w[37] = 128, w[38] = 136, w[39] = 68, w[43] = 200;
  w[44] = 16, w[45] = 8, w[52] = 16, w[65] = 16, w[66] = 32, w[68] = 32, w[69] = 16, w[70] = 40;
  const std::string_view raw(reinterpret_cast<const char*>(w.data()), w.size() * 8);
  auto got = layout_from_debug_offsets(raw);
  ASSERT_TRUE(got.ok()) << got.error().line();
  const gw_py_layout& l = got->first;
  EXPECT_EQ(l.interp_head, 632);
  EXPECT_EQ(l.threads_head, 7344);
  EXPECT_EQ(l.tstate_frame, 72);
  EXPECT_EQ(l.tstate_id, 160);
  EXPECT_EQ(l.cframe_frame, GW_PY_NONE);
  EXPECT_EQ(l.frame_instr, 56);
  EXPECT_EQ(l.frame_owner, 70);
  EXPECT_EQ(l.code_adaptive, 200);
  EXPECT_EQ(l.frame_read, 78);
  EXPECT_EQ(got->second.name, 128u);  // co_qualname
  EXPECT_EQ(got->second.linetable, 136u);

  w[2] = 1;  // free-threaded
  EXPECT_FALSE(layout_from_debug_offsets(raw).ok());
  w[2] = 0;
  w[1] = 0x030e00f0;  // 3.14: another format, larger than this block
  EXPECT_FALSE(layout_from_debug_offsets(raw).ok());
  EXPECT_FALSE(layout_from_debug_offsets(raw.substr(0, 100)).ok());

  // An offset past 0xffff is clamped to GW_PY_NONE: + 8 must not wrap to 7 and pass the check
  // (fuzz_python_lines).
  w[1] = 0x030d00f0;
  w[31] = uint64_t{1} << 48;
  EXPECT_FALSE(layout_from_debug_offsets(raw).ok());
}

// Tables read from a damaged or reused code object: lines that overflow are no line, never
// undefined behaviour (fuzz_python_lines found both under UBSan).
TEST(PythonLines, LinesThatOverflowAreNoLine) {
  EXPECT_EQ(line_from_linetable_310("\x02\x7f", INT_MAX, 0), -1);     // INT_MAX + 127
  EXPECT_EQ(line_from_linetable_310("\x02\x7f", INT_MAX - 127, 1), INT_MAX);
  // Two long-form entries each adding -(2^62 - 1) lines (code 14, svarint 0x7fff...f).
  std::string big = "\xf0";
  big += std::string(10, '\x7f') + '\x3f';  // 66 bits of ones (bit 0: negative)
  big += "\x00\x00\x00";
  EXPECT_EQ(line_from_locations(big + big, 10, 1), -1);
  EXPECT_EQ(line_from_locations(big, 10, 0), -1);
}

}  // namespace
}  // namespace gpuwhy::discover
