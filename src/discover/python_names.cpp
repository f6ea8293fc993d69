// SPDX-License-Identifier: Apache-2.0
// Naming the frames of Python stacks: a code object's file, function and line table, read from
// the live process once per (pid, address); the line's source text from the file it ran.
#include <algorithm>
#include <cstring>

#include "discover/proc_util.hpp"
#include "discover/python.hpp"

namespace gpuwhy::discover {
namespace {

constexpr size_t kCodeHead = 512;         // every field read lies in a code object's first bytes
constexpr uint64_t kMaxString = 4096;     // file and function names
constexpr uint64_t kMaxTable = 1 << 20;   // a line table
constexpr size_t kMaxSource = 32u << 20;  // source files read for their lines

template <class T>
T at(const uint8_t* p, size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof(v));
  return v;
}

void append_utf8(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 63));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 63));
    out += static_cast<char>(0x80 | (c & 63));
  } else {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 63));
    out += static_cast<char>(0x80 | ((c >> 6) & 63));
    out += static_cast<char>(0x80 | (c & 63));
  }
}

// A str object's text as UTF-8: compact strings only (what code objects hold).
std::optional<std::string> read_unicode(const PythonNamer::Reader& read, uint32_t pid,
                                        uint64_t addr, const PyCodeLayout& c) {
  uint8_t head[64];
  if (!addr || c.str_state + 4 > sizeof(head) || c.str_length + 8 > sizeof(head) ||
      !read(pid, addr, head, c.str_state + 4))
    return std::nullopt;
  const uint64_t length = at<uint64_t>(head, c.str_length);
  const uint32_t state = at<uint32_t>(head, c.str_state) >> c.str_kind_shift;
  const unsigned kind = state & 7, compact = (state >> 3) & 1, ascii = (state >> 4) & 1;
  if (!compact || length > kMaxString || (kind != 1 && kind != 2 && kind != 4)) return std::nullopt;
  const uint64_t data = addr + (ascii ? c.unicode_ascii : c.unicode_compact);
  std::string raw(length * kind, '\0');
  if (length && !read(pid, data, raw.data(), raw.size())) return std::nullopt;
  if (kind == 1 && ascii) return raw;
  std::string out;
  for (uint64_t i = 0; i < length; ++i) {
    uint32_t ch = 0;
    std::memcpy(&ch, raw.data() + i * kind, kind);
    append_utf8(out, ch);
  }
  return out;
}

// Whether the str at `addr` still reads `text`: one read where `text` is ASCII (a compact ASCII
// string's header and text lie together), else as read_unicode. A string that cannot be read
// does (a freed object keeps its name).
bool unicode_is(const PythonNamer::Reader& read, uint32_t pid, uint64_t addr, const PyCodeLayout& c,
                const std::string& text) {
  const bool ascii = std::all_of(text.begin(), text.end(),
                                 [](char ch) { return static_cast<unsigned char>(ch) < 0x80; });
  if (!ascii || c.str_state + 4 > c.unicode_ascii || c.str_length + 8 > c.unicode_ascii) {
    auto now = read_unicode(read, pid, addr, c);
    return !now || *now == text;
  }
  std::string raw(c.unicode_ascii + text.size(), '\0');
  if (!read(pid, addr, raw.data(), raw.size())) return true;
  const auto* p = reinterpret_cast<const uint8_t*>(raw.data());
  const uint32_t state = at<uint32_t>(p, c.str_state) >> c.str_kind_shift;
  const bool compact_ascii = (state & 7) == 1 && ((state >> 3) & 1) && ((state >> 4) & 1);
  return compact_ascii && at<uint64_t>(p, c.str_length) == text.size() &&
         raw.compare(c.unicode_ascii, text.size(), text) == 0;
}

// A bytes object's contents.
std::optional<std::string> read_bytes(const PythonNamer::Reader& read, uint32_t pid, uint64_t addr,
                                      const PyCodeLayout& c) {
  int64_t size = 0;
  if (!addr || !read(pid, addr + c.bytes_size, &size, sizeof(size))) return std::nullopt;
  if (size < 0 || static_cast<uint64_t>(size) > kMaxTable) return std::nullopt;
  std::string out(static_cast<size_t>(size), '\0');
  if (size && !read(pid, addr + c.bytes_data, out.data(), out.size())) return std::nullopt;
  return out;
}

std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n\f\v");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r\n\f\v");
  return std::string(s.substr(b, e - b + 1));
}

}  // namespace

void PythonNamer::add_process(const PythonProcess& p) {
  std::lock_guard lock(mu_);
  procs_[p.pid] = p;
}

bool PythonNamer::knows(uint32_t pid) {
  std::lock_guard lock(mu_);
  return procs_.count(pid) != 0;
}

std::optional<PythonProcess> PythonNamer::process(uint32_t pid) {
  std::lock_guard lock(mu_);
  auto it = procs_.find(pid);
  if (it == procs_.end()) return std::nullopt;
  return it->second;
}

PythonNamer::Code PythonNamer::read_code(const PythonProcess& p, uint64_t addr) {
  Code code;
  code.code_type = p.code_type;
  const PyCodeLayout& c = p.code;
  uint8_t head[kCodeHead];
  const size_t head_size = code_head_size(c);
  code.why = PyUnnamed::kUnreadable;
  if (head_size > sizeof(head) || !read_(p.pid, addr, head, head_size)) return code;
  // A freed object, or one reused for something else, is not a code object: no name rather
  // than a wrong one.
  code.why = PyUnnamed::kNotCode;
  if (at<uint64_t>(head, c.ob_type) != p.code_type) return code;
  auto file = read_unicode(read_, p.pid, at<uint64_t>(head, c.filename), c);
  auto function = read_unicode(read_, p.pid, at<uint64_t>(head, c.name), c);
  auto table = read_bytes(read_, p.pid, at<uint64_t>(head, c.linetable), c);
  code.why = PyUnnamed::kNamesUnreadable;
  if (!file || !function || !table) return code;
  code.why = PyUnnamed::kNone;
  code.ok = true;
  code.file_ptr = at<uint64_t>(head, c.filename);
  code.name_ptr = at<uint64_t>(head, c.name);
  code.table_ptr = at<uint64_t>(head, c.linetable);
  code.file = std::move(*file);
  code.function = std::move(*function);
  code.linetable = std::move(*table);
  code.firstlineno = at<int32_t>(head, c.firstlineno);
  if (c.location_table) code.units = at<uint64_t>(head, c.ob_size);  // 3.11+: in code units
  return code;
}

std::string PythonNamer::source_line(uint32_t pid, const std::string& file, int line) {
  if (line <= 0 || file.empty() || file[0] == '<') return {};
  auto key = std::make_pair(pid, file);
  auto it = files_.find(key);
  if (it == files_.end()) {
    // The file the process ran, as it sees it: through its root (containers), or its working
    // directory for a relative name.
    const std::string proc = "/proc/" + std::to_string(pid);
    const std::string path = file[0] == '/' ? proc + "/root" + file : proc + "/cwd/" + file;
    std::vector<std::string> lines;
    if (auto text = read_small_file(path); text && text->size() <= kMaxSource) {
      size_t i = 0;
      while (i <= text->size()) {
        const size_t nl = text->find('\n', i);
        lines.push_back(text->substr(i, nl == std::string::npos ? std::string::npos : nl - i));
        if (nl == std::string::npos) break;
        i = nl + 1;
      }
    }
    it = files_.emplace(std::move(key), std::move(lines)).first;
  }
  if (static_cast<size_t>(line) > it->second.size()) return {};
  return trim(it->second[static_cast<size_t>(line) - 1]);
}

bool PythonNamer::same_code(const PythonProcess& p, uint64_t addr, const Code& code) {
  const PyCodeLayout& c = p.code;
  uint8_t head[kCodeHead];
  const size_t head_size = code_head_size(c);
  if (!code.ok || head_size > sizeof(head) || !read_(p.pid, addr, head, head_size)) return true;
  if (at<uint64_t>(head, c.ob_type) != p.code_type) return true;
  if (at<uint64_t>(head, c.filename) != code.file_ptr ||
      at<uint64_t>(head, c.name) != code.name_ptr ||
      at<uint64_t>(head, c.linetable) != code.table_ptr ||
      at<int32_t>(head, c.firstlineno) != code.firstlineno)
    return false;
  // The same pointers can be new objects made where freed ones were: code made by exec in a
  // loop gets a new file name string each time, at the last one's address. The names must
  // match too (a table that differs under the same file, name and first line is not seen).
  return unicode_is(read_, p.pid, code.file_ptr, c, code.file) &&
         unicode_is(read_, p.pid, code.name_ptr, c, code.function);
}

const char* py_unnamed_cause(PyUnnamed why) {
  switch (why) {
    case PyUnnamed::kNone:
      return "";
    case PyUnnamed::kNoProcess:
      return "frame_no_process";
    case PyUnnamed::kUnreadable:
      return "frame_unreadable";
    case PyUnnamed::kNotCode:
      return "frame_not_code";
    case PyUnnamed::kNamesUnreadable:
      return "frame_names_unreadable";
  }
  return "";
}

PythonNamer::Code* PythonNamer::current(const PythonProcess& p, uint64_t code_addr,
                                        std::chrono::steady_clock::time_point now,
                                        std::chrono::steady_clock::duration recheck) {
  auto key = std::make_pair(p.pid, code_addr);
  auto it = codes_.find(key);
  if (it == codes_.end()) {
    it = codes_.emplace(key, read_code(p, code_addr)).first;
    it->second.checked = now;
    return &it->second;
  }
  Code& old = it->second;
  if (now - old.checked < recheck) return &old;
  old.checked = now;
  if (old.ok && old.code_type == p.code_type &&  // not: the pid's program was replaced (exec)
      same_code(p, code_addr, old))              // not: another code object at the address
    return &old;
  Code fresh = read_code(p, code_addr);
  // Unnamed before and still: the same (no name), not a new generation that would have every
  // stack holding it named again on each look.
  fresh.generation = old.generation + (fresh.ok || old.ok ? 1 : 0);
  fresh.checked = now;
  old = std::move(fresh);
  return &old;
}

uint32_t PythonNamer::generation(uint32_t pid, uint64_t code_addr,
                                 std::chrono::steady_clock::duration recheck) {
  auto it = codes_.find({pid, code_addr});
  if (it == codes_.end()) return 0;
  const auto now = clock_();
  if (now - it->second.checked < recheck) return it->second.generation;  // the hot path
  auto p = process(pid);
  if (!p || !p->supported) return it->second.generation;
  return current(*p, code_addr, now, recheck)->generation;
}

PyFrameName PythonNamer::name(uint32_t pid, uint64_t code_addr, int32_t instr, bool with_source) {
  PyFrameName out;
  out.why = PyUnnamed::kNoProcess;
  auto p = process(pid);
  if (!p || !p->supported) return out;
  // A new stack: its code objects are compared with what was read before, whenever read.
  const Code& c = *current(*p, code_addr, clock_(), {});
  out.generation = c.generation;
  out.why = c.why;
  if (!c.ok) return out;
  out.resolved = true;
  out.file = c.file;
  out.function = c.function;
  // An index past the code object's end is not this object's: the address was reused.
  if (instr >= 0 && (c.units == 0 || static_cast<uint64_t>(instr) < c.units)) {
    out.line = p->code.location_table
                   ? line_from_locations(c.linetable, c.firstlineno, instr)
                   : line_from_linetable_310(c.linetable, c.firstlineno, instr * 2);
  }
  if (with_source) out.source = source_line(pid, out.file, out.line);
  return out;
}

}  // namespace gpuwhy::discover
