// SPDX-License-Identifier: Apache-2.0
// The Python side of a traced process: which CPython runs it and where its interpreter keeps
// threads and frames (for the BPF stack walk, bpf/python.bpf.h), and turning the {code object,
// instruction} pairs that walk copies into file, function, line and source text.
//
// Layouts, x86-64: 3.10-3.12 from tables here (measured with offsetof on the pyenv builds
// 3.10.13, 3.11.7, 3.12.1); 3.13 and 3.14 (and the free-threaded 3.14t) from the _Py_DebugOffsets
// the running interpreter publishes at _PyRuntime + 0, checked against its cookie and version,
// plus the little it does not publish (3.14's tag bits on f_executable, the frame owners, the
// per-thread bytecode of free-threaded builds), each written from the CPython header that says it.
// Versions are told apart by Py_Version (3.11+) or the interpreter file's name (3.10).
//
// Tested on a live interpreter: 3.10-3.13 (pyenv builds and Debian's static 3.11). Tested from
// the published layout only (no such interpreter on the machines of this project): 3.14, 3.14t:
// frames, code objects and strings built in memory as the 3.14 headers lay them out, the offsets
// checked with offsetof and _Py_DebugOffsets_INIT on CPython 3.14.10's headers
// (tests/unit/python_layout_test.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
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

// Where a code object keeps what naming a frame needs (bytes from the object's start), and where
// the objects it points at keep theirs. The object header's fields default to a GIL build's
// (a free-threaded build's header is 32 bytes: ob_tid, ob_flags, ob_mutex, ob_gc_bits,
// ob_ref_local, ob_ref_shared come before ob_type).
struct PyCodeLayout {
  uint32_t filename = 0, name = 0, firstlineno = 0, linetable = 0;
  uint32_t unicode_ascii = 0;    // sizeof(PyASCIIObject): an ASCII string's text follows it
  uint32_t unicode_compact = 0;  // sizeof(PyCompactUnicodeObject): other compact strings' text
  bool location_table = true;    // 3.11+ location table; false: 3.10's co_linetable
  uint32_t ob_type = 8;          // PyObject: ob_type
  uint32_t ob_size = 16;         // PyVarObject: ob_size (a code object's: its code units)
  uint32_t bytes_size = 16, bytes_data = 32;  // PyBytesObject: ob_size, ob_sval
  uint32_t str_length = 16, str_state = 32;   // PyASCIIObject: length, state
  uint32_t str_kind_shift = 2;  // state's bit of `kind`: 8 where `interned` is a byte (3.14t)
};

// The bytes of a code object's start that hold every field `c` names.
size_t code_head_size(const PyCodeLayout& c);

struct PythonProcess {
  uint32_t pid = 0;
  std::string interpreter;  // the file holding it as the process maps it
  std::string version;      // "3.11.7" (3.10: "3.10", its file name's)
  uint16_t minor_hex = 0;   // 0x030b
  bool supported = false;
  std::string why_not;    // when not supported: what, and what to do
  gw_py_layout layout{};  // for the BPF map (supported only)
  PyCodeLayout code{};
  uint64_t code_type = 0;      // address of PyCode_Type: a code object's ob_type
  bool free_threaded = false;  // a build without the GIL (3.14t), as its debug offsets say
  std::string layout_from;     // "_Py_DebugOffsets" or "built-in table" (supported only)
  // Where the interpreter's state `_PyRuntime` lies in the process (its symbol's size): the GIL
  // and its condition variables are inside it on every CPython, so a futex wait there is a wait
  // for the interpreter (explain's Gil bucket). 0: not found.
  uint64_t runtime_addr = 0, runtime_size = 0;
};

// How gpuwhy's reading of a version is tested: "tested on a live interpreter" (3.10-3.13),
// "tested from the published layout" (3.14, 3.14t: no such interpreter here), or empty for a
// version it does not read.
std::string python_tested(uint16_t minor_hex, bool free_threaded);

// What was found of a process's Python (python_processes.detail): "layout: built-in table;
// tested on a live interpreter" (supported), or why not.
std::string python_detail(const PythonProcess& p);

// What `gpuwhy check` says of a process's Python: "Python 3.12.1 (libpython3.12.so.1.0):
// supported, Python lines recorded (layout: built-in table; tested on a live interpreter)", or
// "...: not supported, no Python lines: <why>".
std::string python_check_line(const PythonProcess& p);

// The CPython of process `pid`: nullopt when it runs none (no libpython mapped, an executable
// without _PyRuntime). A Python gpuwhy cannot walk comes back with supported = false and why.
std::optional<PythonProcess> find_python(uint32_t pid);

// The layout of a version whose offsets are known here (3.10-3.12; 3.13 is read from the
// process). nullopt for others.
std::optional<gw_py_layout> builtin_py_layout(uint16_t minor_hex);
std::optional<PyCodeLayout> builtin_code_layout(uint16_t minor_hex);

// The _Py_DebugOffsets formats known here: 3.13's and 3.14's (Include/internal/
// pycore_runtime.h in 3.13, pycore_debug_offsets.h in 3.14), in bytes.
constexpr size_t kDebugOffsetsRead = 95 * 8;  // read at _PyRuntime: the largest format known

// The layout a 3.13+ interpreter's _Py_DebugOffsets gives (`raw`: its bytes from _PyRuntime + 0,
// kDebugOffsetsRead of them, or at least its format's size), with what the offsets do not
// publish added for its version; `free_threaded` (when given) is set from the offsets. An Error
// says what is wrong (cookie, a version whose format is not known, offsets that are no layout).
Result<std::pair<gw_py_layout, PyCodeLayout>> layout_from_debug_offsets(
    std::string_view raw, bool* free_threaded = nullptr);

// ---- the probe's walk, in C++ ----------------------------------------------------------------

// Bytes of a process's memory at `addr`; false when any of it cannot be read.
using MemoryReader = std::function<bool(uint64_t addr, void* out, size_t len)>;

// The frames the probe (bpf/python.bpf.h) copies for the thread whose thread state holds
// `thread_id` (native_thread_id; 3.10: its pthread_self()), walked the same way through `read`:
// the interpreter's thread list, shims and owners >= 3 skipped, 3.14's tag bits masked, 3.14t's
// per-thread bytecode. For tests (memory images built to a version's headers, live processes)
// and checks; nullopt when the thread state is not found or a frame cannot be read.
std::optional<std::vector<gw_py_frame>> walk_python_thread(const gw_py_layout& l,
                                                           const MemoryReader& read,
                                                           uint64_t thread_id);

// ---- line tables (pure) ----------------------------------------------------------------------

// The line of the instruction at byte offset `byte_offset` in a 3.10 co_linetable; -1: none.
int line_from_linetable_310(std::string_view table, int firstlineno, int byte_offset);
// The line of the instruction at code-unit index `index` in a 3.11+ location table
// (CPython's Objects/locations.md); -1: none.
int line_from_locations(std::string_view table, int firstlineno, int index);

// ---- naming frames ---------------------------------------------------------------------------

// Bytes of process memory; false when any of it cannot be read.
bool read_process_memory(uint32_t pid, uint64_t addr, void* out, size_t len);

// Why a frame has no name, each counted apart in the trace's losses (python/<name>).
enum class PyUnnamed : uint8_t {
  kNone = 0,
  kNoProcess,        // "frame_no_process": its process is not a Python process named here
  kUnreadable,       // "frame_unreadable": the code object's memory could not be read (gone)
  kNotCode,          // "frame_not_code": no code object there any more (freed, reused)
  kNamesUnreadable,  // "frame_names_unreadable": its file, name or line table unreadable
};
inline constexpr int kPyUnnamedReasons = 5;
// The losses cause of a reason ("frame_not_code"); "" for kNone.
const char* py_unnamed_cause(PyUnnamed why);

struct PyFrameName {
  bool resolved = false;  // false: the code object could not be read (process gone, freed)
  PyUnnamed why = PyUnnamed::kNone;  // when not resolved
  std::string file, function, source;
  int line = -1;
  // Which code object at this address named it: a later one made at the same address after
  // this one was freed has a higher generation (generation()).
  uint32_t generation = 0;
};

// Reads code objects of traced processes (process_vm_readv) once per (pid, address) and names
// frames. add_process() from the discovery thread; name() from one other thread.
class PythonNamer {
 public:
  using Reader = std::function<bool(uint32_t pid, uint64_t addr, void* out, size_t len)>;
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // `read`: process memory (process_vm_readv; tests give a memory image); `clock`: the time
  // generation() measures its rechecks by.
  explicit PythonNamer(Reader read = read_process_memory,
                       Clock clock = std::chrono::steady_clock::now)
      : read_(std::move(read)), clock_(std::move(clock)) {}
  void add_process(const PythonProcess& p);
  bool knows(uint32_t pid);
  // `with_source`: also the line's text, read from the file the process ran (once per file);
  // without, source_line() gives it later, from another thread.
  PyFrameName name(uint32_t pid, uint64_t code, int32_t instr, bool with_source = true);
  // The text of `line` of `file` as process `pid` sees it, whitespace-stripped; "" when not
  // read. Any one thread at a time, not necessarily name()'s: it touches only the file cache.
  std::string source_line(uint32_t pid, const std::string& file, int line);
  // The generation of the code object at `code` as name() gave it, or a higher one when another
  // code object has been made there since (the old one freed): its frames need naming again.
  // The object is read again only when it was last read `recheck` or longer ago, so a stack
  // seen on every call costs a few reads a second. 0 for an address never named.
  uint32_t generation(uint32_t pid, uint64_t code, std::chrono::steady_clock::duration recheck);

 private:
  struct Code {
    bool ok = false;
    PyUnnamed why = PyUnnamed::kNone;  // when not ok
    uint32_t generation = 1;           // + 1 each time another code object is found there
    std::chrono::steady_clock::time_point checked{};  // when last read or compared
    std::string file, function, linetable;
    int firstlineno = 0;
    uint64_t units = 0;      // 3.11+: instructions (code units) in the object; 0: not known
    uint64_t code_type = 0;  // the process image's PyCode_Type when read: an exec starts anew
    // What the object pointed at when read: a code object made later at the same address (code
    // compiled and dropped again and again, exec'd or generated) points elsewhere.
    uint64_t file_ptr = 0, name_ptr = 0, table_ptr = 0;
  };
  // Whether the code object at `addr` is still the one `c` was read from; false only when a
  // code object there now points at other names or another line table, or its names read
  // otherwise (a freed object, no longer readable or no longer a code object, keeps its name:
  // the frame ran it).
  bool same_code(const PythonProcess& p, uint64_t addr, const Code& c);
  // The cached reading of the code object at `code_addr`, compared with the process's memory
  // again (and read anew, with the next generation, when another object is there) when it was
  // last compared `recheck` or longer ago.
  Code* current(const PythonProcess& p, uint64_t code_addr,
                std::chrono::steady_clock::time_point now,
                std::chrono::steady_clock::duration recheck);
  std::optional<PythonProcess> process(uint32_t pid);
  Code read_code(const PythonProcess& p, uint64_t addr);

  Reader read_;
  Clock clock_;
  std::mutex mu_;  // guards procs_
  std::map<uint32_t, PythonProcess> procs_;
  std::map<std::pair<uint32_t, uint64_t>, Code> codes_;
  std::map<std::pair<uint32_t, std::string>, std::vector<std::string>> files_;
};

}  // namespace gpuwhy::discover
