// SPDX-License-Identifier: Apache-2.0
// Where each catalogue API gets its entry probe in a given library file.
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>

#include "discover/discover.hpp"

namespace gpuwhy::discover {
namespace {

constexpr uint16_t kEmX86_64 = 62;  // EM_X86_64
// endbr64. CET builds (-fcf-protection, the default on Ubuntu and Fedora) start every function that
// may be reached indirectly with it. The kernel cannot emulate it, so a uprobe there is stepped
// out of line (~13x dearer); the instruction after it can be emulated or optimised.
constexpr std::array<uint8_t, 4> kEndbr64{0xf3, 0x0f, 0x1e, 0xfa};
// Enough bytes to decide; only the first instruction is looked at.
constexpr size_t kEntryBytes = 16;

}  // namespace

const ElfSymbol* find_function(const ElfInfo& info, std::string_view name) {
  const ElfSymbol* fallback = nullptr;
  for (const ElfSymbol& s : info.dynamic_symbols) {
    // No file offset (0 is the ELF header) means nothing a uprobe could be placed on.
    if (s.name != name || !s.is_function || s.file_offset == 0) continue;
    if (s.default_version) return &s;
    if (fallback == nullptr) fallback = &s;
  }
  return fallback;
}

uint32_t entry_skip_bytes(const uint8_t* code, size_t len) {
  // Exactly one pattern, matched byte for byte: a wrong skip would put the probe in the middle
  // of an instruction and corrupt the traced program, so anything not certain returns 0.
  if (code == nullptr || len < kEndbr64.size()) return 0;
  for (size_t i = 0; i < kEndbr64.size(); ++i) {
    if (code[i] != kEndbr64[i]) return 0;
  }
  return static_cast<uint32_t>(kEndbr64.size());
}

namespace {

// Bytes to skip at `sym`'s entry in the open file `fd` (0 when not x86-64 or not certain).
uint32_t entry_skip_of(int fd, const ElfInfo& elf, const ElfSymbol& sym) {
  if (elf.machine != kEmX86_64) return 0;
  std::array<uint8_t, kEntryBytes> code{};
  const ssize_t n = ::pread(fd, code.data(), code.size(), static_cast<off_t>(sym.file_offset));
  const uint32_t skip = n > 0 ? entry_skip_bytes(code.data(), static_cast<size_t>(n)) : 0;
  // A symbol no longer than the skipped instruction is not a real function body: stay put.
  return sym.size == 0 || sym.size > skip ? skip : 0;
}

}  // namespace

Result<uint64_t> function_probe_offset(const std::string& path, std::string_view name) {
  auto elf = read_elf(path);
  if (!elf) return elf.error();
  const ElfSymbol* sym = find_function(*elf, name);
  if (sym == nullptr) return Error{path + " exports no function " + std::string(name)};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error("cannot open " + path);
  const uint64_t offset = sym->file_offset + entry_skip_of(fd, *elf, *sym);
  ::close(fd);
  return offset;
}

Result<std::vector<ProbeSite>> resolve_probe_sites(const std::string& path, Family family) {
  auto elf = read_elf(path);
  if (!elf) return elf.error();

  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error("cannot open " + path);
  std::vector<ProbeSite> sites;
  for (const ApiInfo& api : api_catalog()) {
    if (api.family != family) continue;
    const ElfSymbol* sym = find_function(*elf, api.name);
    if (sym == nullptr) continue;

    ProbeSite site;
    site.api = &api;
    site.symbol_version = sym->version;
    site.symbol_offset = sym->file_offset;
    site.skipped_bytes = entry_skip_of(fd, *elf, *sym);
    sites.push_back(site);
  }
  ::close(fd);
  return sites;
}

}  // namespace gpuwhy::discover
