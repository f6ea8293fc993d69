// SPDX-License-Identifier: Apache-2.0
// The Python side of a traced process: which CPython runs it and where its interpreter keeps
// threads and frames (for the BPF stack walk, bpf/python.bpf.h), and turning the {code object,
// instruction} pairs that walk copies into file, function, line and source text.
//
// Layouts, x86-64 (measured with offsetof on the pyenv builds 3.10.13, 3.11.7, 3.12.1, 3.13.0;
// 3.13 and later publish theirs in _Py_DebugOffsets at _PyRuntime + 0, which is read instead).
// Versions are told apart by Py_Version (3.11+) or the interpreter file's name (3.10).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.hpp"
#include "gpuwhy/abi/events.h"

namespace gpuwhy::discover {

// Where a code object keeps what naming a frame needs (bytes from the object's start).
struct PyCodeLayout {
  uint32_t filename = 0, name = 0, firstlineno = 0, linetable = 0;
  uint32_t unicode_ascii = 0;    // sizeof(PyASCIIObject): an ASCII string's text follows it
  uint32_t unicode_compact = 0;  // sizeof(PyCompactUnicodeObject): other compact strings' text
  bool location_table = true;    // 3.11+ location table; false: 3.10's co_linetable
};

struct PythonProcess {
  uint32_t pid = 0;
  std::string interpreter;  // the file holding it as the process maps it
  std::string version;      // "3.11.7" (3.10: "3.10", its file name's)
  uint16_t minor_hex = 0;   // 0x030b
  bool supported = false;
  std::string why_not;      // when not supported: what, and what to do
  gw_py_layout layout{};    // for the BPF map (supported only)
  PyCodeLayout code{};
  uint64_t code_type = 0;   // address of PyCode_Type: a code object's ob_type
  // Where the interpreter's state `_PyRuntime` lies in the process (its symbol's size): the GIL
  // and its condition variables are inside it on every CPython, so a futex wait there is a wait
  // for the interpreter (explain's Gil bucket). 0: not found.
  uint64_t runtime_addr = 0, runtime_size = 0;
};

// The CPython of process `pid`: nullopt when it runs none (no libpython mapped, an executable
// without _PyRuntime). A Python gpuwhy cannot walk comes back with supported = false and why.
std::optional<PythonProcess> find_python(uint32_t pid);

// The layout of a version whose offsets are known here (3.10-3.12; 3.13 is read from the
// process). nullopt for others.
std::optional<gw_py_layout> builtin_py_layout(uint16_t minor_hex);
std::optional<PyCodeLayout> builtin_code_layout(uint16_t minor_hex);

// The layout 3.13's _Py_DebugOffsets gives (`raw`: its bytes from the start, at least 352).
// An Error says what is wrong (cookie, version, free-threaded build).
Result<std::pair<gw_py_layout, PyCodeLayout>> layout_from_debug_offsets(std::string_view raw);

// ---- line tables (pure) ----------------------------------------------------------------------

// The line of the instruction at byte offset `byte_offset` in a 3.10 co_linetable; -1: none.
int line_from_linetable_310(std::string_view table, int firstlineno, int byte_offset);
// The line of the instruction at code-unit index `index` in a 3.11+ location table
// (CPython's Objects/locations.md); -1: none.
int line_from_locations(std::string_view table, int firstlineno, int index);

// ---- naming frames ---------------------------------------------------------------------------

struct PyFrameName {
  bool resolved = false;  // false: the code object could not be read (process gone, freed)
  std::string file, function, source;
  int line = -1;
};

// Reads code objects of traced processes (process_vm_readv) once per (pid, address) and names
// frames. add_process() from the discovery thread; name() from one other thread.
class PythonNamer {
 public:
  void add_process(const PythonProcess& p);
  bool knows(uint32_t pid);
  PyFrameName name(uint32_t pid, uint64_t code, int32_t instr);

 private:
  struct Code {
    bool ok = false;
    std::string file, function, linetable;
    int firstlineno = 0;
    uint64_t units = 0;      // 3.11+: instructions (code units) in the object; 0: not known
    uint64_t code_type = 0;  // the process image's PyCode_Type when read: an exec starts anew
  };
  std::optional<PythonProcess> process(uint32_t pid);
  Code read_code(const PythonProcess& p, uint64_t addr);
  std::string source_line(uint32_t pid, const std::string& file, int line);

  std::mutex mu_;  // guards procs_
  std::map<uint32_t, PythonProcess> procs_;
  std::map<std::pair<uint32_t, uint64_t>, Code> codes_;
  std::map<std::pair<uint32_t, std::string>, std::vector<std::string>> files_;
};

// Bytes of process memory; false when any of it cannot be read.
bool read_process_memory(uint32_t pid, uint64_t addr, void* out, size_t len);

}  // namespace gpuwhy::discover
