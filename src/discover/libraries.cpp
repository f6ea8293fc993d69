// SPDX-License-Identifier: Apache-2.0
// GPU runtime library files: describing one, and finding those installed on the host.
#include <dirent.h>
#include <glob.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>

#include "discover/discover.hpp"
#include "discover/proc_util.hpp"

namespace gpuwhy::discover {
namespace {

constexpr int kMaxSymlinkHops = 40;  // the kernel's own limit

// The real file's name. Through /proc/PID/root an absolute link target must stay inside that
// root, so the links are followed by hand there; elsewhere realpath() does it.
std::string real_path_of(const std::string& path) {
  const std::string_view root = proc_root_prefix(path);
  if (root.empty()) {
    char buf[PATH_MAX];
    return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
  }
  std::string p = path;
  for (int hop = 0; hop < kMaxSymlinkHops; ++hop) {
    const auto target = read_link(p);
    if (!target) break;
    if (!target->empty() && (*target)[0] == '/') {
      p = std::string(root) + *target;
    } else {
      p = p.substr(0, p.size() - base_name(p).size()) + *target;
    }
  }
  return p;
}

bool is_stubs_path(std::string_view path) {
  // CUDA's stubs/ hold link-time placeholders (libcuda.so) that no process runs.
  return path.find("/stubs/") != std::string_view::npos || path.ends_with("/stubs");
}

std::vector<std::string> expand(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(pattern.c_str(), GLOB_ONLYDIR | GLOB_NOSORT, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

// A user's home directory from /etc/passwd, read with fgetpwent_r rather than getpwnam: the
// gpuwhy binary is static (cmake/StaticLink.cmake), and getpwnam would load the host's NSS
// modules, which only work with the exact glibc gpuwhy was linked with. A user known only to a
// directory service (LDAP, sssd) is not found: their ~/.local runtimes are then found when a
// process maps them, like any runtime at a new path.
std::string passwd_home(const char* user) {
  FILE* f = std::fopen("/etc/passwd", "re");
  if (f == nullptr) return {};
  std::string home;
  passwd pw{};
  passwd* found = nullptr;
  char buf[4096];
  while (::fgetpwent_r(f, &pw, buf, sizeof buf, &found) == 0 && found != nullptr) {
    if (std::strcmp(pw.pw_name, user) == 0) {
      if (pw.pw_dir != nullptr) home = pw.pw_dir;
      break;
    }
  }
  std::fclose(f);
  return home;
}

// Home directories whose ~/.local may hold pip --user wheels: ours, and the invoking user's when
// we run under sudo (HOME is then root's).
std::vector<std::string> home_dirs() {
  std::vector<std::string> homes;
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    homes.emplace_back(home);
  }
  if (const char* user = std::getenv("SUDO_USER"); user != nullptr && *user != '\0') {
    if (std::string home = passwd_home(user); !home.empty()) homes.push_back(std::move(home));
  }
  return homes;
}

// Directory patterns, most specific first. Each is a glob of fixed depth: no recursive walk.
std::vector<std::string> search_patterns() {
  std::vector<std::string> p = {
      "/usr/local/cuda*/lib",
      "/usr/local/cuda*/lib64",
      "/usr/local/cuda*/targets/*/lib",
      "/opt/rocm*/lib",
      "/opt/rocm*/lib64",
      "/usr/lib/*-linux-gnu",
      "/usr/lib64",
      "/usr/lib",
      "/lib/*-linux-gnu",
      "/lib64",
      "/usr/lib/wsl/lib",  // WSL2 puts libcuda.so.1 here
      "/opt/conda*/lib",
      "/opt/conda*/envs/*/lib",  // conda's cudatoolkit / nccl packages
  };
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) {
    std::string_view rest = ld;
    while (!rest.empty()) {
      const size_t sep = std::min(rest.find(':'), rest.size());
      const std::string_view dir = rest.substr(0, sep);
      if (!dir.empty() && dir[0] == '/') p.emplace_back(dir);  // relative entries depend on cwd
      rest.remove_prefix(std::min(sep + 1, rest.size()));
    }
  }
  // ldconfig's list names vendor directories (/usr/local/cuda-X/targets/..., /opt/rocm/lib).
  glob_t g{};
  if (::glob("/etc/ld.so.conf.d/*.conf", 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      auto text = read_small_file(g.gl_pathv[i]);
      if (!text) continue;
      std::string_view t = *text;
      while (!t.empty()) {
        const size_t nl = std::min(t.find('\n'), t.size());
        std::string_view line = t.substr(0, nl);
        while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
        if (!line.empty() && line[0] == '/') p.emplace_back(line);  // not "include" lines
        t.remove_prefix(std::min(nl + 1, t.size()));
      }
    }
  }
  ::globfree(&g);
  // Python wheels: nvidia-*-cu1x packages put each runtime in site-packages/nvidia/<pkg>/lib,
  // PyTorch in torch/lib.
  std::vector<std::string> py_roots = {"/usr/lib/python3*", "/usr/local/lib/python3*",
                                       "/opt/conda*/lib/python3*",
                                       "/opt/conda*/envs/*/lib/python3*"};
  for (const std::string& home : home_dirs()) {
    py_roots.push_back(home + "/.local/lib/python3*");
    py_roots.push_back(home + "/.pyenv/versions/*/lib/python3*");
  }
  for (const std::string& root : py_roots) {
    for (const char* pkgs : {"site-packages", "dist-packages"}) {
      p.push_back(root + "/" + pkgs + "/nvidia/*/lib");
      p.push_back(root + "/" + pkgs + "/torch/lib");
    }
  }
  return p;
}

}  // namespace

std::string version_from_file_name(std::string_view file_name) {
  const size_t so = file_name.find(".so.");
  return so == std::string_view::npos ? std::string() : std::string(file_name.substr(so + 4));
}

Result<LibraryFile> describe_library(const std::string& path, const std::string& map_path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno_error("cannot stat " + path);
  if (!S_ISREG(st.st_mode)) return Error{path + ": not a regular file"};

  const std::string real = real_path_of(path);
  std::optional<Family> family;
  for (std::string_view name : {base_name(map_path), base_name(path), base_name(real)}) {
    if (!name.empty() && (family = family_of_library(name))) break;
  }
  if (!family) {
    return Error{path + ": not a GPU runtime library by its name",
                 "expected libcudart*, libcuda.so*, libnccl* or libamdhip64*"};
  }
  auto elf = read_elf(path);
  if (!elf) return elf.error();

  LibraryFile lib;
  lib.path = path;
  lib.map_path = map_path;
  lib.family = *family;
  lib.dev = st.st_dev;
  lib.inode = st.st_ino;
  lib.soname = std::move(elf->soname);
  lib.build_id = std::move(elf->build_id);
  lib.version = version_from_file_name(base_name(real));
  return lib;
}

std::vector<std::string> library_search_dirs() {
  std::vector<std::string> dirs;
  std::set<std::string> seen;
  for (const std::string& pattern : search_patterns()) {
    for (const std::string& dir : expand(pattern)) {
      char buf[PATH_MAX];
      if (::realpath(dir.c_str(), buf) == nullptr) continue;
      const std::string real = buf;
      if (is_stubs_path(real) || !seen.insert(real).second) continue;
      dirs.push_back(real);
    }
  }
  return dirs;
}

Result<std::string> host_dlopen_library() {
  static constexpr std::string_view kCandidates[] = {
      "/lib/x86_64-linux-gnu/libc.so.6",   "/usr/lib/x86_64-linux-gnu/libc.so.6",
      "/lib/aarch64-linux-gnu/libc.so.6",  "/usr/lib/aarch64-linux-gnu/libc.so.6",
      "/lib64/libc.so.6",                  "/usr/lib64/libc.so.6",
      "/lib/x86_64-linux-gnu/libdl.so.2",  "/lib64/libdl.so.2"};
  std::string tried;
  for (std::string_view c : kCandidates) {
    char buf[PATH_MAX];
    if (::realpath(std::string(c).c_str(), buf) == nullptr) continue;
    auto elf = read_elf(buf);
    if (elf && find_function(*elf, "dlopen") != nullptr) return std::string(buf);
    tried += (tried.empty() ? "" : ", ") + std::string(c);
  }
  return Error{"no C library exporting dlopen found" + (tried.empty() ? "" : " (" + tried + ")"),
               "libraries loaded with dlopen will be found by the periodic scan only"};
}

Result<std::string> host_dynamic_linker() {
  static constexpr std::string_view kCandidates[] = {
      "/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
      "/lib/ld-linux-aarch64.so.1", "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1"};
  std::string tried;
  for (std::string_view c : kCandidates) {
    char buf[PATH_MAX];
    if (::realpath(std::string(c).c_str(), buf) != nullptr) return std::string(buf);
    tried += (tried.empty() ? "" : ", ") + std::string(c);
  }
  return Error{"no dynamic linker found (" + tried + ")",
               "runtimes at new paths will be found by the scans, after their first calls"};
}

std::vector<LibraryFile> host_gpu_libraries(const std::vector<std::string>& dirs) {
  std::vector<LibraryFile> libs;
  std::set<std::pair<uint64_t, uint64_t>> seen;
  for (const std::string& dir : dirs) {
    if (is_stubs_path(dir)) continue;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) continue;
    std::vector<std::string> names;
    while (const dirent* ent = ::readdir(d)) {
      if (family_of_library(ent->d_name)) names.emplace_back(ent->d_name);
    }
    ::closedir(d);
    // Sorted so that which alias (libcudart.so or libcudart.so.13) is seen first is stable.
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      const std::string found = dir + "/" + name;
      char buf[PATH_MAX];
      if (::realpath(found.c_str(), buf) == nullptr) continue;  // dangling link
      const std::string real = buf;
      struct stat st {};
      if (is_stubs_path(real) || ::stat(real.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (!seen.insert({st.st_dev, st.st_ino}).second) continue;
      auto lib = describe_library(real, found);
      if (lib) libs.push_back(std::move(*lib));  // not an ELF (a linker script?): not a runtime
    }
  }
  return libs;
}

std::vector<LibraryFile> host_gpu_libraries() { return host_gpu_libraries(library_search_dirs()); }

}  // namespace gpuwhy::discover
