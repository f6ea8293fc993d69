// SPDX-License-Identifier: Apache-2.0
// Turning a user-space address of a traced process into a frame: the mapped file that holds it,
// the offset in that file, and the ELF function covering it. Runs on the traced host while the
// process lives (the files are read through /proc/PID/map_files, which also reaches files inside
// containers and files deleted after they were mapped), so the trace carries names and a copied
// file can be read anywhere.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/discover.hpp"

namespace gpuwhy::discover {

struct Frame {
  uint64_t addr = 0;
  std::string module;            // the mapped file's path as the process sees it; empty: unknown
  std::optional<uint64_t> offset;  // in that file
  std::string symbol;            // "cudaLaunchKernel+0x4"; empty when no symbol covers it
};

// remember() may run on one thread while resolve() runs on another; resolve() itself on one thread
// only. The lock guards the kept maps alone: reading an ELF file never holds it, so a thread that
// only remembers is never kept waiting behind a large library's symbol table.
class Symbolizer {
 public:
  // Reads /proc/PID/maps now and keeps it: called as soon as a new stack of `pid` is seen, so a
  // process that exits before its stack is resolved is still resolved (its files are read by
  // path then).
  void remember(uint32_t pid);
  // Uses the pid's kept maps, reading /proc/PID/maps if there are none or none holds `addr` (a
  // library loaded since); a process that is gone and was never remembered gives the address.
  Frame resolve(uint32_t pid, uint64_t addr);

 private:
  struct Functions {  // an ELF file's defined functions, sorted by address
    std::vector<LoadSegment> segments;
    std::vector<ElfSymbol> functions;
  };
  // The mapping of `pid` holding `addr`, from the kept maps or, failing that, maps read now.
  std::optional<MapEntry> mapping_of(uint32_t pid, uint64_t addr);
  const Functions* functions_of(uint32_t pid, const MapEntry& m);

  std::mutex mu_;                                   // guards maps_
  std::map<uint32_t, std::vector<MapEntry>> maps_;
  std::map<std::pair<uint64_t, uint64_t>, std::unique_ptr<Functions>> files_;  // (dev, inode)
};

// A GPU runtime's own file (libcudart.so.13, libcuda.so.1, libnccl.so.2, libamdhip64.so.5...)
// or the C/C++ runtime's (libc's pwrite64 under a sampled write), by base name: frames inside
// them are not where the application called from.
bool is_runtime_file(std::string_view base_name);

// The frame of a stack (innermost first) that is its call site: the first outside the runtimes;
// frames.size() when there is none.
size_t call_site_depth(const std::vector<Frame>& frames);

// "name+0x1c": the function of `functions` (sorted by vaddr) holding `vaddr`, C++ names
// demangled; empty when none.
std::string symbol_at(const std::vector<ElfSymbol>& functions, uint64_t vaddr);

}  // namespace gpuwhy::discover
