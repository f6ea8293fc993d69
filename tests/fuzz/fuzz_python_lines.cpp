// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: CPython line tables (src/discover/python_lines.cpp) and 3.13's
// _Py_DebugOffsets (python_layout.cpp). Both are read out of a traced process's memory, which
// may be freed, reused or hostile: any bytes and any first line must give a line or -1 (a layout
// whose frame fields lie within what the probe reads, or an Error), never undefined behaviour.
// Input: 4 bytes first line, 4 bytes instruction index, then the table (also given whole to the
// _Py_DebugOffsets parser).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "discover/python.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuwhy::discover;
  if (size < 8) return 0;
  int32_t firstlineno, index;
  std::memcpy(&firstlineno, data, 4);
  std::memcpy(&index, data + 4, 4);
  const std::string_view table(reinterpret_cast<const char*>(data + 8), size - 8);
  for (const int at : {index, 0, static_cast<int>(table.size()) * 4}) {
    // A damaged table may add up to any line: only "no crash, no overflow" is checked.
    (void)line_from_linetable_310(table, firstlineno, at);
    (void)line_from_locations(table, firstlineno, at);
  }
  // An accepted layout must keep every frame field it names inside the bytes the probe reads.
  auto got = layout_from_debug_offsets(std::string_view(reinterpret_cast<const char*>(data), size));
  if (got) {
    const gw_py_layout& l = got->first;
    if (l.frame_read > GW_PY_READ_FRAME) std::abort();
    for (const unsigned off : {l.frame_prev, l.frame_code, l.frame_instr, l.frame_owner})
      if (off + 8 > l.frame_read) std::abort();
  }
  return 0;
}
