// SPDX-License-Identifier: Apache-2.0
#include "discover/symbolize.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "discover/proc_util.hpp"

namespace gpuwhy::discover {
namespace {

// The link /proc/PID/map_files/START-END opens the very file mapped there (root only).
std::string map_file_path(uint32_t pid, const MapEntry& m) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "/proc/%u/map_files/%llx-%llx", pid,
                static_cast<unsigned long long>(m.start), static_cast<unsigned long long>(m.end));
  return buf;
}

// The virtual address a file offset is loaded at, through the PT_LOAD segment holding it.
std::optional<uint64_t> vaddr_of(const std::vector<LoadSegment>& segments, uint64_t offset) {
  for (const LoadSegment& s : segments) {
    if (offset >= s.file_offset && offset < s.file_offset + s.file_size)
      return s.vaddr + (offset - s.file_offset);
  }
  return std::nullopt;
}

// "gw::Trainer::step(unsigned long)" for "_ZN2gw7Trainer4stepEm"; other names as they are.
std::string demangled(const std::string& name) {
  if (!name.starts_with("_Z")) return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string result = status == 0 && out ? out : name;
  std::free(out);
  return result;
}

std::vector<MapEntry> read_maps(uint32_t pid) {
  auto text = read_small_file("/proc/" + std::to_string(pid) + "/maps");
  return text ? parse_maps(*text) : std::vector<MapEntry>{};
}

}  // namespace

bool is_runtime_file(std::string_view base) {
  for (std::string_view p : {"libcudart", "libcuda.", "libnccl", "libamdhip64", "libhsa-runtime",
                             "libc.so", "libc-", "libpthread", "ld-linux", "libstdc++",
                             "libgcc_s", "libm.so"})
    if (base.starts_with(p)) return true;
  return false;
}

size_t call_site_depth(const std::vector<Frame>& frames) {
  for (size_t d = 0; d < frames.size(); ++d) {
    const std::string& m = frames[d].module;
    if (m.empty()) continue;  // unknown: cannot say it is the application's
    if (!is_runtime_file(std::string_view(m).substr(m.rfind('/') + 1))) return d;
  }
  return frames.size();
}

std::string symbol_at(const std::vector<ElfSymbol>& functions, uint64_t vaddr) {
  auto it = std::upper_bound(functions.begin(), functions.end(), vaddr,
                             [](uint64_t v, const ElfSymbol& s) { return v < s.vaddr; });
  if (it == functions.begin()) return {};
  const ElfSymbol& s = *std::prev(it);
  if (vaddr >= s.vaddr + std::max<uint64_t>(s.size, 1)) return {};
  char off[24];
  std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(vaddr - s.vaddr));
  return demangled(s.name) + off;
}

void Symbolizer::remember(uint32_t pid) {
  std::vector<MapEntry> maps = read_maps(pid);
  if (maps.empty()) return;  // gone already: keep what an earlier look saw
  std::lock_guard lock(mu_);
  maps_[pid] = std::move(maps);
}

std::optional<MapEntry> Symbolizer::mapping_of(uint32_t pid, uint64_t addr) {
  auto holding = [addr](const std::vector<MapEntry>& maps) -> std::optional<MapEntry> {
    for (const MapEntry& m : maps)
      if (addr >= m.start && addr < m.end) return m;
    return std::nullopt;
  };
  {
    std::lock_guard lock(mu_);
    if (auto it = maps_.find(pid); it != maps_.end())
      if (auto m = holding(it->second)) return m;
  }
  // Never looked at, or mapped since (a dlopen): read again; a process gone keeps what was seen.
  std::vector<MapEntry> fresh = read_maps(pid);
  if (fresh.empty()) return std::nullopt;
  std::optional<MapEntry> m = holding(fresh);
  std::lock_guard lock(mu_);
  maps_[pid] = std::move(fresh);
  return m;
}

const Symbolizer::Functions* Symbolizer::functions_of(uint32_t pid, const MapEntry& m) {
  const std::pair<uint64_t, uint64_t> key{(uint64_t{m.dev_major} << 32) | m.dev_minor, m.inode};
  auto it = files_.find(key);
  if (it != files_.end()) return it->second.get();
  std::unique_ptr<Functions> f;
  auto elf = read_elf(map_file_path(pid, m), ElfRead::WithSymtab);
  if (!elf && !m.path.empty() && !m.deleted)
    elf = read_elf(m.path, ElfRead::WithSymtab);  // map_files needs root
  if (elf) {
    f = std::make_unique<Functions>();
    f->segments = std::move(elf->load_segments);
    for (ElfSymbol& s : elf->dynamic_symbols)
      if (s.is_function) f->functions.push_back(std::move(s));
    for (ElfSymbol& s : elf->symtab_functions) f->functions.push_back(std::move(s));
    std::sort(f->functions.begin(), f->functions.end(),
              [](const ElfSymbol& a, const ElfSymbol& b) { return a.vaddr < b.vaddr; });
  }
  return files_.emplace(key, std::move(f)).first->second.get();
}

Frame Symbolizer::resolve(uint32_t pid, uint64_t addr) {
  Frame fr;
  fr.addr = addr;
  const std::optional<MapEntry> m = mapping_of(pid, addr);
  if (!m || !m->executable()) return fr;
  fr.module = m->path;
  fr.offset = addr - m->start + m->offset;
  if (m->inode == 0) return fr;  // anonymous code (a JIT): no file to read
  const Functions* f = functions_of(pid, *m);
  if (!f) return fr;
  if (auto v = vaddr_of(f->segments, *fr.offset)) fr.symbol = symbol_at(f->functions, *v);
  return fr;
}

}  // namespace gpuwhy::discover
