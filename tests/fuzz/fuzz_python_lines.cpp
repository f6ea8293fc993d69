// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: CPython line tables (src/discover/python_lines.cpp), the _Py_DebugOffsets of
// 3.13 and 3.14/3.14t (python_layout.cpp), and the frame walk and code-object reading over a
// process image (walk_python_thread, PythonNamer). All of it is read out of a traced process's
// memory, which may be freed, reused or hostile: any bytes and any first line must give a line
// or -1 (a layout whose frame fields lie within what the probe reads, or an Error; frames or
// nullopt; a name or "unresolved"), never undefined behaviour.
// Input: 4 bytes first line, 4 bytes instruction index, then the table (also given whole to the
// _Py_DebugOffsets parser, and as the memory image the walk reads, at kBase, with the layouts of
// 3.14 and 3.14t).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "discover/python.hpp"

namespace {

using namespace gpuwhy::discover;

constexpr uint64_t kBase = 0x10000;

// A valid 3.14 block (free-threaded or not), as tests/unit/python_layout_test.cpp builds it.
std::string block_314(bool ft) {
  std::vector<uint64_t> w(95, 0);
  const uint64_t h = ft ? 32 : 16, cf = ft ? 128 : 112;
  w[1] = 0x030e00f0, w[2] = ft, w[5] = 16, w[9] = 24, w[24] = 8, w[26] = 72, w[28] = 160;
  w[31] = 88, w[32] = 8, w[33] = 0, w[34] = 56, w[36] = ft ? 78 : 74, w[38] = ft ? 72 : 0;
  w[39] = ft ? 240 : 216, w[40] = cf, w[41] = cf + 8, w[42] = cf + 16, w[43] = cf + 24;
  w[44] = ft ? 84 : 68, w[48] = ft ? 232 : 208, w[49] = ft ? 224 : 0;
  w[50] = h, w[51] = h - 8, w[58] = h, w[75] = h, w[76] = h + 16;
  w[78] = h + 16, w[79] = h, w[80] = ft ? 56 : 40;
  std::string b(reinterpret_cast<const char*>(w.data()), w.size() * 8);
  std::memcpy(b.data(), "xdebugpy", 8);
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
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
    if (l.frame_tlbc != GW_PY_NONE && l.frame_tlbc + 8u > l.frame_read) std::abort();
    if (code_head_size(got->second) > 512) std::abort();
  }
  // The input as a process's memory: the walk and the namer read only what it holds.
  const MemoryReader read = [&](uint64_t addr, void* out, size_t len) {
    if (addr < kBase || addr - kBase > size || len > size - (addr - kBase)) return false;
    std::memcpy(out, data + (addr - kBase), len);
    return true;
  };
  for (const bool ft : {false, true}) {
    auto l = layout_from_debug_offsets(block_314(ft));
    if (!l) std::abort();  // the fuzzer's own layouts must be accepted
    l->first.runtime = kBase;
    auto frames = walk_python_thread(l->first, read, static_cast<uint32_t>(index));
    if (!frames) continue;
    if (frames->size() > GW_PY_MAX_FRAMES) std::abort();
    PythonNamer namer([&](uint32_t, uint64_t a, void* out, size_t n) { return read(a, out, n); });
    PythonProcess p;
    p.pid = 0;  // no /proc/0: source lines are never read from this machine's files
    p.supported = true;
    p.layout = l->first;
    p.code = l->second;
    p.code_type = kBase + 8;
    namer.add_process(p);
    for (const gw_py_frame& f : *frames) (void)namer.name(0, f.code, f.instr);
  }
  return 0;
}
