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

constexpr uint16_t k310 = 0x030a, k311 = 0x030b, k312 = 0x030c, k313 = 0x030d;

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
    case k310: return PyCodeLayout{104, 112, 40, 120, 48, 72, false};  // name: co_name
    case k311: return PyCodeLayout{112, 128, 72, 136, 48, 72, true};
    case k312: return PyCodeLayout{112, 128, 68, 136, 40, 56, true};
    default: return std::nullopt;
  }
}

Result<std::pair<gw_py_layout, PyCodeLayout>> layout_from_debug_offsets(std::string_view raw) {
  // _Py_DebugOffsets as 3.13 defines it (Include/internal/pycore_runtime.h), in u64 words.
  constexpr size_t kWords = 44;
  if (raw.size() < kWords * 8) return Error{"the interpreter's debug offsets could not be read"};
  if (raw.substr(0, 8) != "xdebugpy")
    return Error{"no debug offsets at _PyRuntime (cookie missing)"};
  const uint64_t version = u64_at(raw, 1);
  if (((version >> 16) & 0xffff) != k313)
    return Error{"debug offsets of Python " + minor_text((version >> 16) & 0xffff) +
                 ": only 3.13's layout is known"};
  if (u64_at(raw, 2) != 0)
    return Error{"a free-threaded build (3.13t): its frames are not walked"};
  auto off = [&](size_t i) { return static_cast<uint16_t>(std::min<uint64_t>(u64_at(raw, i), GW_PY_NONE)); };
  gw_py_layout l{};
  l.interp_head = off(5);
  l.threads_head = off(9);
  l.tstate_next = off(21);
  l.tstate_frame = off(23);
  l.tstate_id = off(25);
  l.cframe_frame = GW_PY_NONE;
  l.frame_prev = off(29);
  l.frame_code = off(30);
  l.frame_instr = off(31);
  l.frame_owner = off(33);
  l.code_adaptive = off(43);
  // In int: an offset clamped to GW_PY_NONE (0xffff) plus 8 must not wrap to a small uint16_t
  // and pass the check below (found by tests/fuzz/fuzz_python_lines).
  const int frame_end = std::max({l.frame_prev, l.frame_code, l.frame_instr, l.frame_owner}) + 8;
  if (frame_end > GW_PY_READ_FRAME || l.tstate_id + 8 > GW_PY_READ_TSTATE ||
      l.tstate_frame + 8 > GW_PY_READ_TSTATE || l.tstate_next + 8 > GW_PY_READ_TSTATE)
    return Error{"the interpreter's frame or thread layout lies beyond what the probe reads"};
  l.frame_read = static_cast<uint8_t>(frame_end);
  PyCodeLayout c{static_cast<uint32_t>(u64_at(raw, 35)), static_cast<uint32_t>(u64_at(raw, 37)),
                 static_cast<uint32_t>(u64_at(raw, 39)), static_cast<uint32_t>(u64_at(raw, 38)),
                 40, 56, true};
  return std::make_pair(l, c);
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
      if (s.name == "_PyRuntime") runtime = &s;
      else if (s.name == "Py_Version") py_version = &s;
      else if (s.name == "PyCode_Type") code_type = &s;
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
    for (const LoadSegment& seg : elf->load_segments) first_vaddr = std::min(first_vaddr, seg.vaddr);
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
    } else if (p.minor_hex == k313) {
      std::string raw(44 * 8, '\0');
      auto got = read_process_memory(pid, runtime_addr, raw.data(), raw.size())
                     ? layout_from_debug_offsets(raw)
                     : Result<std::pair<gw_py_layout, PyCodeLayout>>(
                           Error{"the interpreter's debug offsets could not be read"});
      if (got) {
        p.layout = got->first;
        p.code = got->second;
        p.supported = true;
      } else {
        p.why_not = got.error().what;
      }
    } else {
      p.why_not = "Python " + (p.version.empty() ? std::string("of unknown version") : p.version) +
                  " is not supported (3.10 to 3.13 are)";
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
