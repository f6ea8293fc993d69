// SPDX-License-Identifier: Apache-2.0
// Which CPython a process runs and where its interpreter keeps threads and frames.
#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "discover/discover.hpp"
#include "discover/proc_util.hpp"
#include "discover/python.hpp"

namespace gpuwhy::discover {
namespace {

constexpr uint16_t k310 = 0x030a, k311 = 0x030b, k312 = 0x030c, k313 = 0x030d, k314 = 0x030e;

std::string minor_text(uint16_t minor_hex) {
  return std::to_string(minor_hex >> 8) + "." + std::to_string(minor_hex & 0xff);
}

// "libpython3.10.so.1.0" or "python3.10" -> 0x030a; 0 when the name carries no version.
uint16_t minor_from_name(std::string_view name) {
  const size_t at = name.find("python3.");
  if (at == std::string_view::npos) return 0;
  int minor = 0;
  size_t i = at + 8;
  if (i >= name.size() || name[i] < '0' || name[i] > '9') return 0;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') {
    minor = minor * 10 + (name[i++] - '0');
    // Any file name can be mapped: "python3.266" is no 3.10, and a long run of digits must not
    // overflow.
    if (minor > 0xff) return 0;
  }
  return static_cast<uint16_t>(0x0300 | minor);
}

bool interpreter_name(std::string_view base) {
  return base.starts_with("libpython3") || base.starts_with("python3");
}

uint64_t u64_at(std::string_view raw, size_t index) {
  uint64_t v = 0;
  std::memcpy(&v, raw.data() + index * 8, 8);
  return v;
}

}  // namespace

bool read_process_memory(uint32_t pid, uint64_t addr, void* out, size_t len) {
  iovec local{out, len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  return process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0) ==
         static_cast<ssize_t>(len);
}

std::optional<gw_py_layout> builtin_py_layout(uint16_t minor_hex) {
  gw_py_layout l{};
  l.frame_tlbc = l.code_tlbc = GW_PY_NONE;  // no per-thread bytecode before 3.14t
  l.tstate_next = 8;
  l.frame_read = 72;
  switch (minor_hex) {
    case k310:
      l.interp_head = 32, l.threads_head = 8, l.tstate_id = 176, l.tstate_frame = 24;
      l.cframe_frame = GW_PY_NONE;
      l.frame_code = 32, l.frame_prev = 24, l.frame_instr = 96, l.frame_owner = GW_PY_NONE;
      l.code_adaptive = GW_PY_NONE;
      l.id_is_fsbase = 1;  // thread_id is pthread_self(): the thread's fs base on x86-64
      l.frame_read = 104;
      return l;
    case k311:
      l.interp_head = 40, l.threads_head = 16, l.tstate_id = 160, l.tstate_frame = 56;
      l.cframe_frame = 8;
      // 3.11 has no shim frames; its owner byte never says "C stack".
      l.frame_code = 32, l.frame_prev = 48, l.frame_instr = 56, l.frame_owner = GW_PY_NONE;
      l.code_adaptive = 184;
      return l;
    case k312:
      l.interp_head = 40, l.threads_head = 72, l.tstate_id = 144, l.tstate_frame = 56;
      l.cframe_frame = 0;
      l.frame_code = 0, l.frame_prev = 8, l.frame_instr = 56, l.frame_owner = 70;
      l.code_adaptive = 192;
      return l;
    default:
      return std::nullopt;
  }
}

std::optional<PyCodeLayout> builtin_code_layout(uint16_t minor_hex) {
  switch (minor_hex) {
    case k310:
      return PyCodeLayout{104, 112, 40, 120, 48, 72, false};  // name: co_name
    case k311:
      return PyCodeLayout{112, 128, 72, 136, 48, 72, true};
    case k312:
      return PyCodeLayout{112, 128, 68, 136, 40, 56, true};
    default:
      return std::nullopt;
  }
}

namespace {

// Where a _Py_DebugOffsets format keeps the offsets read here: indices of u64 words from its
// start (cookie = word 0, version = 1, free_threaded = 2). kNo: the format has no such field.
constexpr size_t kNo = SIZE_MAX;
struct DebugFormat {
  uint16_t minor;
  size_t words;  // the struct's size in words
  size_t interp_head, threads_head;
  size_t ts_next, ts_frame, ts_native_id;
  size_t fr_size, fr_previous, fr_executable, fr_instr, fr_owner, fr_tlbc;
  size_t co_size, co_filename, co_qualname, co_linetable, co_firstlineno, co_adaptive, co_tlbc;
  size_t ob_size_of, ob_type, var_size;  // pyobject.size, pyobject.ob_type, tuple_object.ob_size
  size_t bytes_size, bytes_data;
  size_t str_state, str_length, str_ascii_size;
};

// 3.13: Include/internal/pycore_runtime.h (struct _Py_DebugOffsets, 73 words).
constexpr DebugFormat k313Format{
    k313, 73, 5, 9,               // runtime_state.interpreters_head, interpreter_state.threads_head
    21, 23, 25,                   // thread_state: next, current_frame, native_thread_id
    28, 29, 30, 31, 33, kNo,      // interpreter_frame: size, previous, executable, instr_ptr, owner
    34, 35, 37, 38, 39, 43, kNo,  // code_object: size, filename, qualname, linetable, firstlineno,
                                  // co_code_adaptive
    44, 45, 52,                   // pyobject.size, pyobject.ob_type, tuple_object.ob_size
    65, 66,                       // bytes_object: ob_size, ob_sval
    68, 69, 70};                  // unicode_object: state, length, asciiobject_size

// 3.14: Include/internal/pycore_debug_offsets.h (95 words): interpreter_state gained
// threads_main, code_object_generation and tlbc_generation; interpreter_frame stackpointer and
// tlbc_index; code_object co_tlbc (both 0 in a GIL build); set_object, gen_object, llist_node and
// debugger_support are new. Checked word by word against CPython 3.14.10's header (Debian's
// libpython3.14-dev 3.14.10-1) and the block its _Py_DebugOffsets_INIT builds, GIL and
// Py_GIL_DISABLED (tests/unit/python_layout_test.cpp builds its images to those values).
constexpr DebugFormat k314Format{k314, 95, 5,  9,  24, 26, 28, 31, 32, 33, 34, 36, 38, 39,
                                 40,   42, 43, 44, 48, 49, 50, 51, 58, 75, 76, 78, 79, 80};

const DebugFormat* debug_format(uint16_t minor_hex) {
  if (minor_hex == k313) return &k313Format;
  if (minor_hex == k314) return &k314Format;
  return nullptr;
}

}  // namespace

size_t code_head_size(const PyCodeLayout& c) {
  return std::max({c.filename, c.name, c.firstlineno, c.linetable, c.ob_type, c.ob_size}) + 8;
}

std::string python_tested(uint16_t minor_hex, bool free_threaded) {
  if (minor_hex >= k310 && minor_hex <= k313 && !free_threaded)
    return "tested on a live interpreter";
  if (minor_hex == k314) return "tested from the published layout";
  return {};
}

std::string python_detail(const PythonProcess& p) {
  if (!p.supported) return p.why_not;
  const std::string out = "layout: " + p.layout_from;
  const std::string tested = python_tested(p.minor_hex, p.free_threaded);
  return tested.empty() ? out : out + "; " + tested;
}

std::string python_check_line(const PythonProcess& p) {
  std::string out = "Python " + (p.version.empty() ? std::string("?") : p.version) + " (" +
                    p.interpreter.substr(p.interpreter.rfind('/') + 1) + "): ";
  if (!p.supported) return out + "not supported, no Python lines: " + p.why_not;
  return out + "supported, Python lines recorded (" + python_detail(p) + ")";
}

Result<std::pair<gw_py_layout, PyCodeLayout>> layout_from_debug_offsets(std::string_view raw,
                                                                        bool* free_threaded) {
  if (raw.size() < 3 * 8) return Error{"the interpreter's debug offsets could not be read"};
  if (raw.substr(0, 8) != "xdebugpy")
    return Error{"no debug offsets at _PyRuntime (cookie missing)"};
  const uint64_t version = u64_at(raw, 1);
  const uint16_t minor = static_cast<uint16_t>((version >> 16) & 0xffff);
  const DebugFormat* f = debug_format(minor);
  if (!f)
    return Error{"debug offsets of Python " + minor_text(minor) +
                 ": their format is known for 3.13 and 3.14 only"};
  if (raw.size() < f->words * 8) return Error{"the interpreter's debug offsets could not be read"};
  const uint64_t ft = u64_at(raw, 2);
  if (ft > 1) return Error{"the interpreter's debug offsets are damaged (free_threaded)"};
  if (free_threaded) *free_threaded = ft == 1;
  // 3.13t executes no per-thread bytecode but tags its frames' references differently: not read.
  if (ft && minor == k313) return Error{"a free-threaded build (3.13t): its frames are not walked"};

  // Offsets past what any layout has are no layout (a damaged block, a format read wrong):
  // every one must be small, and the frame's and code object's fields inside their sizes.
  auto word = [&](size_t i) { return i == kNo ? uint64_t{0} : u64_at(raw, i); };
  const uint64_t fr_size = word(f->fr_size), co_size = word(f->co_size);
  const uint64_t ob_type = word(f->ob_type), head = word(f->ob_size_of);
  // PyObject's header: 16 bytes (ob_refcnt, ob_type) or, free-threaded, 32 (ob_tid, ob_flags,
  // ob_mutex, ob_gc_bits, ob_ref_local, ob_ref_shared, ob_type: Include/object.h, 3.13 and
  // 3.14.10).
  if (head != (ft ? 32u : 16u) || ob_type != head - 8)
    return Error{"the interpreter's debug offsets are no layout known here (PyObject header)"};
  for (size_t i : {f->fr_previous, f->fr_executable, f->fr_instr, f->fr_owner, f->fr_tlbc})
    if (i != kNo && word(i) >= fr_size && !(i == f->fr_tlbc && !ft))
      return Error{"the interpreter's debug offsets are no layout known here (frame)"};
  for (size_t i : {f->co_filename, f->co_qualname, f->co_linetable, f->co_firstlineno,
                   f->co_adaptive, f->co_tlbc})
    if (i != kNo && (word(i) >= co_size || co_size > 4096) && !(i == f->co_tlbc && !ft))
      return Error{"the interpreter's debug offsets are no layout known here (code object)"};

  auto off = [&](size_t i) {
    return static_cast<uint16_t>(std::min<uint64_t>(word(i), GW_PY_NONE));
  };
  gw_py_layout l{};
  l.interp_head = off(f->interp_head);
  l.threads_head = off(f->threads_head);
  l.tstate_next = off(f->ts_next);
  l.tstate_frame = off(f->ts_frame);
  l.tstate_id = off(f->ts_native_id);
  l.cframe_frame = GW_PY_NONE;
  l.frame_prev = off(f->fr_previous);
  l.frame_code = off(f->fr_executable);
  l.frame_instr = off(f->fr_instr);
  l.frame_owner = off(f->fr_owner);
  l.code_adaptive = off(f->co_adaptive);
  l.frame_tlbc = l.code_tlbc = GW_PY_NONE;
  if (minor >= k314) {
    // f_executable is a _PyStackRef: its low bits are a tag, Py_TAG_BITS (Include/internal/
    // pycore_stackref.h, 3.14.10: 1 with Py_GIL_DISABLED, 3 in the default build, whose
    // Py_INT_TAG is 3). Objects are 8-byte aligned: masking 3 bits covers both.
    l.code_tag = 3;
    if (ft) {
      // The thread's bytecode copy (Include/internal/pycore_interpframe_structs.h: int32_t
      // tlbc_index, Py_GIL_DISABLED only; Include/cpython/code.h: _PyCodeArray *co_tlbc, an
      // array {Py_ssize_t size; char *entries[]} whose entries[0] is co_code_adaptive),
      // published in 3.14t's offsets.
      l.frame_tlbc = off(f->fr_tlbc);
      l.code_tlbc = off(f->co_tlbc);
      if (!l.frame_tlbc || !l.code_tlbc)
        return Error{"a free-threaded build whose debug offsets name no per-thread bytecode"};
    }
  }
  // In int: an offset clamped to GW_PY_NONE (0xffff) plus 8 must not wrap to a small uint16_t
  // and pass the check below (found by tests/fuzz/fuzz_python_lines).
  int frame_end = std::max({l.frame_prev, l.frame_code, l.frame_instr, l.frame_owner}) + 8;
  if (l.frame_tlbc != GW_PY_NONE) frame_end = std::max(frame_end, l.frame_tlbc + 8);
  if (frame_end > GW_PY_READ_FRAME || l.tstate_id + 8 > GW_PY_READ_TSTATE ||
      l.tstate_frame + 8 > GW_PY_READ_TSTATE || l.tstate_next + 8 > GW_PY_READ_TSTATE)
    return Error{"the interpreter's frame or thread layout lies beyond what the probe reads"};
  l.frame_read = static_cast<uint8_t>(frame_end);

  PyCodeLayout c;
  c.filename = static_cast<uint32_t>(word(f->co_filename));
  c.name = static_cast<uint32_t>(word(f->co_qualname));
  c.firstlineno = static_cast<uint32_t>(word(f->co_firstlineno));
  c.linetable = static_cast<uint32_t>(word(f->co_linetable));
  c.location_table = true;
  c.ob_type = static_cast<uint32_t>(ob_type);
  c.ob_size = static_cast<uint32_t>(word(f->var_size));
  c.bytes_size = static_cast<uint32_t>(word(f->bytes_size));
  c.bytes_data = static_cast<uint32_t>(word(f->bytes_data));
  c.str_length = static_cast<uint32_t>(word(f->str_length));
  c.str_state = static_cast<uint32_t>(word(f->str_state));
  c.unicode_ascii = static_cast<uint32_t>(word(f->str_ascii_size));
  // Not published: PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject (16
  // bytes), and a free-threaded build's `interned` is an unsigned char, not 2 bits, before
  // `kind:3`, `compact:1`, `ascii:1` (Include/cpython/unicodeobject.h, 3.13 and 3.14.10).
  c.unicode_compact = c.unicode_ascii + 16;
  c.str_kind_shift = ft ? 8 : 2;
  for (uint32_t v : {c.ob_size, c.bytes_size, c.bytes_data, c.str_length, c.unicode_ascii})
    if (v > 256) return Error{"the interpreter's debug offsets are no layout known here (objects)"};
  if (c.str_state + 4 > c.unicode_ascii)
    return Error{"the interpreter's debug offsets are no layout known here (str)"};
  return std::make_pair(l, c);
}

std::optional<std::vector<gw_py_frame>> walk_python_thread(const gw_py_layout& l,
                                                           const MemoryReader& read,
                                                           uint64_t thread_id) {
  auto u64 = [&](uint64_t addr, uint64_t* v) { return read(addr, v, 8); };
  auto in = [](const uint8_t* b, size_t size, unsigned off) {
    uint64_t v = 0;
    if (off + 8 <= size) std::memcpy(&v, b + off, 8);
    return v;
  };
  uint64_t interp = 0, ts = 0;
  if (!u64(l.runtime + l.interp_head, &interp) || !interp || !u64(interp + l.threads_head, &ts))
    return std::nullopt;
  uint8_t tstate[GW_PY_READ_TSTATE];
  bool found = false;
  for (int i = 0; i < 64 && ts && !found; ++i) {  // GW_PY_MAX_THREADS
    if (!read(ts, tstate, sizeof(tstate))) return std::nullopt;
    found = in(tstate, sizeof(tstate), l.tstate_id) == thread_id;
    if (!found) ts = in(tstate, sizeof(tstate), l.tstate_next);
  }
  if (!found) return std::nullopt;
  uint64_t fp = in(tstate, sizeof(tstate), l.tstate_frame);
  if (fp && l.cframe_frame != GW_PY_NONE && !u64(fp + l.cframe_frame, &fp)) return std::nullopt;
  std::vector<gw_py_frame> out;
  const size_t len = l.frame_read;
  if (len < 8 || len > GW_PY_READ_FRAME) return std::nullopt;
  for (int step = 0; step < 64 && fp && out.size() < GW_PY_MAX_FRAMES; ++step) {  // MAX_STEPS
    uint8_t fr[GW_PY_READ_FRAME];
    if (!read(fp, fr, len)) return std::nullopt;
    const uint64_t code = in(fr, len, l.frame_code) & ~uint64_t{l.code_tag};
    const uint64_t prev = in(fr, len, l.frame_prev);
    fp = prev;
    if (l.frame_owner < len && fr[l.frame_owner] >= 3) continue;  // GW_PY_OWNER_NOT_CODE
    int64_t instr;
    if (l.code_adaptive == GW_PY_NONE) {
      instr = static_cast<int32_t>(in(fr, len, l.frame_instr));
    } else {
      uint64_t bytecode = code + l.code_adaptive;
      if (l.frame_tlbc < len) {
        const int32_t idx = static_cast<int32_t>(in(fr, len, l.frame_tlbc));
        if (idx != 0) {
          uint64_t arr = 0, size = 0, entry = 0;
          if (idx < 0 || idx >= 4096 || l.code_tlbc == GW_PY_NONE ||  // GW_PY_MAX_TLBC
              !u64(code + l.code_tlbc, &arr) || !arr || !u64(arr, &size) ||
              static_cast<uint64_t>(idx) >= size ||
              !u64(arr + 8 + 8 * static_cast<uint64_t>(idx), &entry))
            return std::nullopt;
          bytecode = entry;
        }
      }
      instr = static_cast<int64_t>(in(fr, len, l.frame_instr) - bytecode) >> 1;
    }
    out.push_back({code, static_cast<int32_t>(instr), 0});
  }
  return out;
}

std::optional<PythonProcess> find_python(uint32_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  auto text = read_small_file(proc + "/maps");
  if (!text) return std::nullopt;
  const std::vector<MapEntry> maps = parse_maps(*text);

  // Candidates: a libpython mapped, or the executable itself when it is named python3* (a
  // statically linked interpreter: Debian's /usr/bin/python3.11).
  std::vector<std::string> seen;
  for (const MapEntry& m : maps) {
    if (m.path.empty() || m.path[0] != '/' || m.deleted) continue;
    if (!interpreter_name(base_name(m.path))) continue;
    if (std::find(seen.begin(), seen.end(), m.path) != seen.end()) continue;
    seen.push_back(m.path);
    // The file as this process sees it (containers): through its root.
    auto elf = read_elf(proc + "/root" + m.path, ElfRead::Dynamic);
    if (!elf) continue;
    const ElfSymbol* runtime = nullptr;
    const ElfSymbol* py_version = nullptr;
    const ElfSymbol* code_type = nullptr;
    for (const ElfSymbol& s : elf->dynamic_symbols) {
      if (s.name == "_PyRuntime")
        runtime = &s;
      else if (s.name == "Py_Version")
        py_version = &s;
      else if (s.name == "PyCode_Type")
        code_type = &s;
    }
    if (!runtime) continue;  // python3 executable linking libpython: the library holds it

    // Load bias: where the file's offset-0 mapping starts, less its first segment's page.
    uint64_t start = 0;
    for (const MapEntry& e : maps)
      if (e.path == m.path && e.offset == 0) {
        start = e.start;
        break;
      }
    uint64_t first_vaddr = UINT64_MAX;
    for (const LoadSegment& seg : elf->load_segments)
      first_vaddr = std::min(first_vaddr, seg.vaddr);
    if (!start || first_vaddr == UINT64_MAX) continue;
    const uint64_t bias = start - (first_vaddr & ~uint64_t{0xfff});

    PythonProcess p;
    p.pid = pid;
    p.interpreter = m.path;
    p.minor_hex = minor_from_name(base_name(m.path));
    p.version = p.minor_hex ? minor_text(p.minor_hex) : "";
    uint32_t hex = 0;
    if (py_version && read_process_memory(pid, bias + py_version->vaddr, &hex, sizeof(hex))) {
      p.minor_hex = static_cast<uint16_t>(hex >> 16);
      p.version = minor_text(p.minor_hex) + "." + std::to_string((hex >> 8) & 0xff);
    }
    p.code_type = code_type ? bias + code_type->vaddr : 0;
    const uint64_t runtime_addr = bias + runtime->vaddr;
    p.runtime_addr = runtime_addr;
    p.runtime_size = runtime->size;

    if (p.minor_hex >= k310 && p.minor_hex <= k312) {
      p.layout = *builtin_py_layout(p.minor_hex);
      p.code = *builtin_code_layout(p.minor_hex);
      p.supported = true;
      p.layout_from = "built-in table";
    } else if (p.minor_hex >= k313) {
      // From the interpreter's own _Py_DebugOffsets alone: no table for these versions.
      std::string raw(kDebugOffsetsRead, '\0');
      auto got = read_process_memory(pid, runtime_addr, raw.data(), raw.size())
                     ? layout_from_debug_offsets(raw, &p.free_threaded)
                     : Result<std::pair<gw_py_layout, PyCodeLayout>>(
                           Error{"the interpreter's debug offsets could not be read"});
      if (got && ((u64_at(raw, 1) >> 16) & 0xffff) != p.minor_hex) {
        got = Error{"the interpreter's debug offsets name another version than its Py_Version"};
      }
      if (got) {
        p.layout = got->first;
        p.code = got->second;
        p.supported = true;
        p.layout_from = "_Py_DebugOffsets";
      } else {
        p.why_not = got.error().what;
      }
      if (p.free_threaded) p.version += "t";  // as CPython names the build: 3.14.0t
    } else {
      p.why_not = "Python " + (p.version.empty() ? std::string("of unknown version") : p.version) +
                  " is not supported (3.10 to 3.14 are)";
    }
    if (p.supported && !p.code_type) {
      p.supported = false;
      p.why_not = "PyCode_Type is not in the interpreter's dynamic symbols";
    }
    if (!p.supported && p.why_not.empty()) p.why_not = "unsupported interpreter";
    p.layout.runtime = runtime_addr;
    p.layout.version = p.minor_hex;
    return p;
  }
  return std::nullopt;
}

}  // namespace gpuwhy::discover
