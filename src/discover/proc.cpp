// SPDX-License-Identifier: Apache-2.0
// /proc parsing: memory maps, process identity, and the GPU libraries a process has mapped.
#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <utility>

#include "core/clock.hpp"
#include "discover/discover.hpp"
#include "discover/proc_util.hpp"

namespace gpuwhy::discover {
namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";

// Consumes one whitespace-separated token from the front of `s`.
std::string_view next_token(std::string_view& s) {
  const size_t begin = s.find_first_not_of(' ');
  if (begin == std::string_view::npos) {
    s = {};
    return {};
  }
  s.remove_prefix(begin);
  const size_t end = std::min(s.find(' '), s.size());
  const std::string_view tok = s.substr(0, end);
  s.remove_prefix(end);
  return tok;
}

template <class T>
bool parse_num(std::string_view s, T& out, int base = 10) {
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

std::optional<MapEntry> parse_map_line(std::string_view line) {
  MapEntry m;
  const std::string_view range = next_token(line);
  const size_t dash = range.find('-');
  if (dash == std::string_view::npos || !parse_num(range.substr(0, dash), m.start, 16) ||
      !parse_num(range.substr(dash + 1), m.end, 16)) {
    return std::nullopt;
  }
  m.perms = std::string(next_token(line));
  if (m.perms.size() != 4 || !parse_num(next_token(line), m.offset, 16)) return std::nullopt;
  const std::string_view dev = next_token(line);
  const size_t colon = dev.find(':');
  if (colon == std::string_view::npos || !parse_num(dev.substr(0, colon), m.dev_major, 16) ||
      !parse_num(dev.substr(colon + 1), m.dev_minor, 16) || !parse_num(next_token(line), m.inode)) {
    return std::nullopt;
  }
  // The kernel pads to a column and then prints the path verbatim: it may contain spaces, so
  // the path is everything after the padding, not a token.
  const size_t begin = line.find_first_not_of(' ');
  if (begin != std::string_view::npos) m.path = std::string(line.substr(begin));
  m.deleted = m.path.size() > kDeletedSuffix.size() && m.path.ends_with(kDeletedSuffix);
  return m;
}

// Wall-clock ns at boot, for converting "ticks since boot". CLOCK_BOOTTIME, like the kernel's
// start_boottime behind stat field 22, counts time spent suspended.
int64_t boot_wall_ns() {
  timespec boot{};
  const int64_t wall = wall_ns();  // the clock every stored time uses (core/clock)
  clock_gettime(CLOCK_BOOTTIME, &boot);
  return wall - (static_cast<int64_t>(boot.tv_sec) * 1'000'000'000 + boot.tv_nsec);
}

std::string proc_path(uint32_t pid, const char* leaf) {
  return "/proc/" + std::to_string(pid) + "/" + leaf;
}

// Whether the process sees another mount namespace than ours: then its map paths name files
// inside its own root and must be opened through /proc/PID/root. nullopt when unknown.
std::optional<bool> other_mount_ns(uint32_t pid) {
  struct stat self {
  }, other{};
  if (::stat("/proc/self/ns/mnt", &self) != 0 || ::stat(proc_path(pid, "ns/mnt").c_str(), &other)) {
    return std::nullopt;
  }
  return self.st_ino != other.st_ino || self.st_dev != other.st_dev;
}

}  // namespace

std::vector<MapEntry> parse_maps(std::string_view text) {
  std::vector<MapEntry> out;
  while (!text.empty()) {
    const size_t nl = std::min(text.find('\n'), text.size());
    if (auto m = parse_map_line(text.substr(0, nl))) out.push_back(std::move(*m));
    text.remove_prefix(std::min(nl + 1, text.size()));
  }
  return out;
}

Result<ProcStat> parse_proc_stat(std::string_view text) {
  // "pid (comm) state ppid ...": comm is whatever the task named itself, ')' and spaces
  // included, so the fields resume after the *last* ')'.
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return Error{"malformed /proc/PID/stat line"};
  }
  ProcStat st;
  std::string_view pid_text = text.substr(0, open);
  while (!pid_text.empty() && pid_text.back() == ' ') pid_text.remove_suffix(1);
  if (!parse_num(pid_text, st.pid)) return Error{"malformed pid in /proc/PID/stat"};
  st.comm = std::string(text.substr(open + 1, close - open - 1));

  std::string_view rest = text.substr(close + 1);
  // Field numbers as in proc(5): 3 = state, 4 = ppid, 22 = starttime.
  for (int field = 3; field <= 22; ++field) {
    std::string_view tok = next_token(rest);
    while (!tok.empty() && (tok.back() == '\n')) tok.remove_suffix(1);
    if (tok.empty()) return Error{"truncated /proc/PID/stat line"};
    if (field == 3) st.state = tok[0];
    if (field == 4 && !parse_num(tok, st.ppid)) return Error{"malformed ppid in /proc/PID/stat"};
    if (field == 22 && !parse_num(tok, st.start_ticks)) {
      return Error{"malformed start time in /proc/PID/stat"};
    }
  }
  return st;
}

Result<ProcessInfo> read_process(uint32_t pid) {
  auto stat_text = read_small_file(proc_path(pid, "stat"));
  if (!stat_text) return stat_text.error();
  auto st = parse_proc_stat(*stat_text);
  if (!st) return st.error();

  ProcessInfo info;
  info.pid = st->pid;
  info.ppid = st->ppid;
  info.comm = st->comm;
  info.start_ticks = st->start_ticks;
  static const int64_t ticks_per_s = std::max<long>(1, sysconf(_SC_CLK_TCK));
  info.start_ns =
      boot_wall_ns() + static_cast<int64_t>(st->start_ticks) * (1'000'000'000 / ticks_per_s);

  // The rest is best effort: kernel threads have no exe or cmdline, and another user's
  // process may hide its exe link from us.
  info.exe = read_link(proc_path(pid, "exe")).value_or("");
  if (auto cmd = read_small_file(proc_path(pid, "cmdline"))) {
    std::string& c = *cmd;
    while (!c.empty() && c.back() == '\0') c.pop_back();
    std::replace(c.begin(), c.end(), '\0', ' ');
    info.cmdline = std::move(c);
  }
  if (auto cg = read_small_file(proc_path(pid, "cgroup"))) {
    // "hierarchy-ID:controllers:path"; the path itself may contain ':'.
    const std::string_view first = std::string_view(*cg).substr(0, cg->find('\n'));
    const size_t c1 = first.find(':');
    const size_t c2 = c1 == std::string_view::npos ? c1 : first.find(':', c1 + 1);
    if (c2 != std::string_view::npos) info.cgroup = std::string(first.substr(c2 + 1));
  }
  info.cpu_limit = read_cpu_limit(pid);
  return info;
}

std::vector<uint32_t> list_pids() {
  std::vector<uint32_t> ids;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return ids;
  while (const dirent* ent = ::readdir(dir)) {
    uint32_t id = 0;
    if (parse_num(std::string_view(ent->d_name), id) && id > 0) ids.push_back(id);
  }
  ::closedir(dir);
  std::sort(ids.begin(), ids.end());
  return ids;
}

Result<std::vector<LibraryFile>> gpu_libraries_of(uint32_t pid,
                                                  std::vector<SkippedLibrary>* skipped) {
  auto maps_text = read_small_file(proc_path(pid, "maps"));
  if (!maps_text) return maps_text.error();
  const bool via_root = other_mount_ns(pid).value_or(false);
  auto skip = [&](const std::string& path, std::string reason) {
    if (skipped != nullptr) skipped->push_back({path, std::move(reason)});
  };

  std::vector<LibraryFile> libs;
  std::set<std::pair<uint64_t, uint64_t>> seen_maps, seen_files;
  for (const MapEntry& m : parse_maps(*maps_text)) {
    if (!m.executable() || m.path.empty() || m.path[0] != '/') continue;
    std::string_view map_path = m.path;
    if (m.deleted) map_path.remove_suffix(kDeletedSuffix.size());
    if (!family_of_library(base_name(map_path))) continue;
    // A library can have several executable mappings; look at each file once.
    const uint64_t map_dev = makedev(m.dev_major, m.dev_minor);
    if (!seen_maps.insert({map_dev, m.inode}).second) continue;
    if (m.deleted) {
      skip(std::string(map_path),
           "file was deleted or replaced after the process mapped it (library upgraded?); "
           "restart the process to trace it");
      continue;
    }

    const std::string host_path =
        via_root ? proc_path(pid, "root") + std::string(map_path) : std::string(map_path);
    auto lib = describe_library(host_path, std::string(map_path));
    if (!lib) {
      skip(std::string(map_path), lib.error().line());
      continue;
    }
    lib->map_dev = map_dev;
    lib->map_inode = m.inode;
    // stat() and the maps agree on the inode unless overlayfs remaps it (xino); the device
    // differs on overlayfs and btrfs. A different inode on the same device means the path names
    // another file for us than for the process (a mount namespace we could not identify, or a
    // file replaced just now): a probe there would never fire in this process.
    if (lib->inode != m.inode && lib->dev == map_dev) {
      skip(std::string(map_path),
           "this path names another file for gpuwhy than for the process (another mount "
           "namespace, or the file was just replaced)");
      continue;
    }
    if (!seen_files.insert({lib->dev, lib->inode}).second) continue;
    libs.push_back(std::move(*lib));
  }
  return libs;
}

AllowedCpus parse_allowed_cpus(std::string_view text) {
  constexpr std::string_view kKey = "Cpus_allowed_list:";
  AllowedCpus out;
  size_t at = 0;
  while (at < text.size() && text.compare(at, kKey.size(), kKey) != 0) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) return out;
    at = nl + 1;
  }
  if (at >= text.size()) return out;
  std::string_view line = text.substr(at + kKey.size());
  line = line.substr(0, line.find('\n'));
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  out.list = std::string(line);
  // Ranges "a-b" and single CPUs "c", comma-separated.
  uint32_t count = 0;
  size_t i = 0;
  while (i < line.size()) {
    uint64_t lo = 0, hi = 0;
    size_t j = i;
    while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j])))
      lo = lo * 10 + static_cast<uint64_t>(line[j++] - '0');
    if (j == i) return {};  // not a CPU list
    hi = lo;
    if (j < line.size() && line[j] == '-') {
      const size_t k = ++j;
      hi = 0;
      while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j])))
        hi = hi * 10 + static_cast<uint64_t>(line[j++] - '0');
      if (j == k || hi < lo || hi - lo > 1u << 20) return {};
    }
    count += static_cast<uint32_t>(hi - lo + 1);
    if (j < line.size() && line[j] != ',') return {};
    i = j + 1;
  }
  out.count = count;
  return out;
}

AllowedCpus read_allowed_cpus(uint32_t pid, uint32_t tid) {
  auto text =
      read_small_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/status");
  return text ? parse_allowed_cpus(*text) : AllowedCpus{};
}

}  // namespace gpuwhy::discover
