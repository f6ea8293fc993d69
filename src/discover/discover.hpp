// SPDX-License-Identifier: Apache-2.0
// Finding GPU runtime libraries and the processes that use them: ELF reading (symbols, versions,
// build-id, probe placement), /proc parsing, container paths. Pure reading; attaches nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/api_catalog.hpp"
#include "core/result.hpp"
#include "discover/cpu_limit.hpp"

namespace gpuwhy::discover {

// ---- ELF ----------------------------------------------------------------------------------

struct ElfSymbol {
  std::string name;
  std::string version;          // "libcudart.so.13", "hip_4.2", or empty when unversioned
  bool default_version = true;  // '@@' (default) vs '@' (hidden/older)
  uint64_t vaddr = 0;
  uint64_t size = 0;
  uint64_t file_offset = 0;  // what a uprobe takes
  bool is_function = false;
  bool is_weak = false;
};

// A PT_LOAD program header: how the file is mapped, which is what turns a symbol's virtual
// address into the file offset a uprobe needs.
struct LoadSegment {
  uint64_t vaddr = 0;
  uint64_t file_offset = 0;
  uint64_t file_size = 0;
  uint64_t mem_size = 0;
  bool executable = false;
};

struct ElfInfo {
  std::string soname;
  std::string build_id;  // lower-case hex, empty if none
  uint16_t machine = 0;  // e_machine (EM_X86_64 = 62): entry decoding is per architecture
  std::vector<LoadSegment> load_segments;
  std::vector<ElfSymbol> dynamic_symbols;  // defined (not undefined) dynamic symbols only
  // Defined functions of .symtab (name, vaddr, size only), read when asked for: a program's own
  // functions, which .dynsym does not export; empty for a stripped file.
  std::vector<ElfSymbol> symtab_functions;
};

enum class ElfRead : uint8_t {
  Dynamic,     // what probing needs: .dynsym is required
  WithSymtab,  // symbolizing: .symtab too, and a file without .dynsym (an executable) is fine
};
Result<ElfInfo> read_elf(const std::string& path, ElfRead what = ElfRead::Dynamic);

// The function a probe on `name` should use: the default ('@@') version when there is one,
// else the first non-default ('@') one. Null when the file defines no such function.
const ElfSymbol* find_function(const ElfInfo& info, std::string_view name);

// File offset of a virtual address, through the PT_LOAD segment whose file-backed part holds it;
// nullopt when no segment does (.bss, TLS, absolute symbols).
std::optional<uint64_t> file_offset_of(const std::vector<LoadSegment>& segments, uint64_t vaddr);

// Bytes to step over at a function's entry so the probe lands on an instruction the kernel can
// emulate or optimise instead of single-stepping it out of line (endbr64 -> 4). 0 otherwise.
uint32_t entry_skip_bytes(const uint8_t* code, size_t len);

// Reads up to `len` bytes at a file offset (for entry_skip_bytes); fewer near the end of the file.
Result<std::vector<uint8_t>> read_file_bytes(const std::string& path, uint64_t offset, size_t len);

// ---- probe sites --------------------------------------------------------------------------

struct ProbeSite {
  const ApiInfo* api = nullptr;
  std::string symbol_version;
  uint64_t symbol_offset = 0;  // file offset of the function
  uint32_t skipped_bytes = 0;  // probe goes at symbol_offset + skipped_bytes
  uint64_t probe_offset() const { return symbol_offset + skipped_bytes; }
};

// Every catalogue API of `family` the file exports (default version preferred), with placement.
Result<std::vector<ProbeSite>> resolve_probe_sites(const std::string& path, Family family);

// The file offset a probe on one exported function should use, with the same placement.
Result<uint64_t> function_probe_offset(const std::string& path, std::string_view name);

// ---- libraries and processes ----------------------------------------------------------------

struct LibraryFile {
  std::string path;      // host-visible path to open and attach (may go through /proc/PID/root)
  std::string map_path;  // the path as the process maps it (host scan: the name it was found under)
  Family family = Family::Cudart;
  uint64_t dev = 0;  // st_dev of the file as the host sees it
  uint64_t inode = 0;
  // The identity /proc/PID/maps shows (0 for host scans). On overlayfs (containers) and btrfs it
  // differs from stat()'s dev (and, with overlay xino, the inode): it names the real inode that a
  // uprobe attaches to, so two containers running one image layer share it while their stat()
  // identities differ. Use it to avoid attaching the same real file twice.
  uint64_t map_dev = 0;  // makedev(major, minor)
  uint64_t map_inode = 0;
  std::string soname;
  std::string version;  // from the real file name (libamdhip64.so.5.2.21153 -> 5.2.21153)
  std::string build_id;
};

// Fills soname, version, build_id, dev and inode for a file path; family from its name (map_path's
// name first, then the path's, then the real file's).
Result<LibraryFile> describe_library(const std::string& path, const std::string& map_path = {});

// "libamdhip64.so.5.2.21153" -> "5.2.21153", "libcudart-d0da41ae.so.11.0" -> "11.0", else "".
std::string version_from_file_name(std::string_view file_name);

struct MapEntry {
  uint64_t start = 0, end = 0, offset = 0;
  std::string perms;  // "r-xp"
  uint32_t dev_major = 0, dev_minor = 0;
  uint64_t inode = 0;
  std::string path;      // may be empty, "[heap]", or end in " (deleted)"
  bool deleted = false;  // path ends in " (deleted)": the file was unlinked after being mapped

  bool executable() const { return perms.size() > 2 && perms[2] == 'x'; }
};

std::vector<MapEntry> parse_maps(std::string_view text);

struct ProcessInfo {
  uint32_t pid = 0;
  uint32_t ppid = 0;
  std::string comm;
  std::string exe;
  std::string cmdline;       // arguments joined by spaces
  std::string cgroup;        // first line of /proc/PID/cgroup, path part
  std::optional<CpuLimit> cpu_limit;  // the tightest CPU quota over its cgroup's ancestors
  int64_t start_ns = 0;      // wall-clock ns
  uint64_t start_ticks = 0;  // stat field 22 as read: stable, so (pid, start_ticks) is an identity
};

// The fields of /proc/PID/stat that identify a process. comm may hold spaces and parentheses,
// so it runs from the first '(' to the last ')'.
struct ProcStat {
  uint32_t pid = 0;
  std::string comm;
  char state = '?';
  uint32_t ppid = 0;
  uint64_t start_ticks = 0;  // field 22: clock ticks after boot
};
Result<ProcStat> parse_proc_stat(std::string_view text);

Result<ProcessInfo> read_process(uint32_t pid);
std::vector<uint32_t> list_pids();

// The CPUs a thread may run on, from the Cpus_allowed_list line of /proc/PID/task/TID/status
// ("0-3,8"): the list as written and how many CPUs it names (0 when there is no such line).
struct AllowedCpus {
  std::string list;
  uint32_t count = 0;
};
AllowedCpus parse_allowed_cpus(std::string_view status_text);
// The same for a live thread; count 0 when it is gone.
AllowedCpus read_allowed_cpus(uint32_t pid, uint32_t tid);

// A GPU library mapping that could not be used, and why.
struct SkippedLibrary {
  std::string map_path;
  std::string reason;
};

// GPU runtime libraries (by file name, catalogue families) a process maps executable,
// deduplicated by (dev, inode). Mappings that cannot be traced (deleted files, unreadable
// paths) go to `skipped` with a reason when it is given.
Result<std::vector<LibraryFile>> gpu_libraries_of(uint32_t pid,
                                                  std::vector<SkippedLibrary>* skipped = nullptr);

// The existing directories host_gpu_libraries() lists (globs expanded, symlinks resolved,
// duplicates and `stubs` directories removed).
std::vector<std::string> library_search_dirs();

// GPU runtime libraries installed on the host (well-known directories, LD_LIBRARY_PATH,
// Python site-packages wheels), deduplicated by (dev, inode), symlinks followed to real files.
std::vector<LibraryFile> host_gpu_libraries();
// The same over the given directories only (not recursive).
std::vector<LibraryFile> host_gpu_libraries(const std::vector<std::string>& dirs);

// The host's C library file that exports dlopen (libc.so.6 since glibc 2.34, libdl.so.2 before),
// resolved to its real path; an error naming the paths tried when there is none (musl, a
// distribution layout this does not know). Processes with their own libc (containers) use
// another file and are not covered by a probe on this one.
Result<std::string> host_dlopen_library();

// The host's dynamic linker (ld.so, the interpreter of its dynamically linked programs), resolved
// to its real path; an error naming the paths tried when there is none.
Result<std::string> host_dynamic_linker();

}  // namespace gpuwhy::discover
