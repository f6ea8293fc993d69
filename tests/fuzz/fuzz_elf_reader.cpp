// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: ELF files (src/discover/elf_reader.cpp), read through a memfd as the agent
// reads a library from disk, with and without .symtab; and the entry decoder of probe_sites.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "discover/discover.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuwhy::discover;
  static const int fd = memfd_create("gw-fuzz-elf", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  for (ElfRead what : {ElfRead::Dynamic, ElfRead::WithSymtab}) {
    auto info = read_elf(path, what);
    if (!info) continue;
    (void)find_function(*info, "cudaLaunchKernel");
    for (const auto& s : info->dynamic_symbols) (void)file_offset_of(info->load_segments, s.vaddr);
  }
  (void)entry_skip_bytes(data, size);
  return 0;
}
