// SPDX-License-Identifier: Apache-2.0
#include "discover/cpu_limit.hpp"

#include <charconv>

#include "discover/proc_util.hpp"

namespace gpuwhy::discover {
namespace {

std::string_view limit_trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

std::optional<int64_t> limit_i64(std::string_view s) {
  s = limit_trim(s);
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// The i-th space-separated field of a line.
std::string_view mount_field(std::string_view line, size_t i) {
  size_t b = 0;
  for (size_t k = 0; k < i; ++k) {
    b = line.find(' ', b);
    if (b == std::string_view::npos) return {};
    ++b;
  }
  return line.substr(b, line.find(' ', b) - b);
}

}  // namespace

CgroupMounts parse_cgroup_mounts(std::string_view mountinfo) {
  CgroupMounts m;
  while (!mountinfo.empty()) {
    const size_t nl = mountinfo.find('\n');
    const std::string_view line = mountinfo.substr(0, nl);
    mountinfo.remove_prefix(nl == std::string_view::npos ? mountinfo.size() : nl + 1);
    // "id parent maj:min root mountpoint opts [optional...] - fstype source superopts"
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    const std::string_view tail = line.substr(dash + 3);
    const std::string_view fstype = mount_field(tail, 0);
    const std::string_view point = mount_field(line, 4);
    if (fstype == "cgroup2" && m.v2.empty()) {
      m.v2 = std::string(point);
    } else if (fstype == "cgroup" && m.v1_cpu.empty()) {
      std::string_view opts = mount_field(tail, 2);
      while (!opts.empty()) {
        const size_t c = opts.find(',');
        if (opts.substr(0, c) == "cpu") m.v1_cpu = std::string(point);
        opts.remove_prefix(c == std::string_view::npos ? opts.size() : c + 1);
      }
    }
  }
  return m;
}

std::optional<std::string> cpu_cgroup_path(std::string_view text, bool have_v1_cpu, int& version) {
  std::optional<std::string> v2;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    // "hierarchy-ID:controllers:path"; the path itself may contain ':'.
    const size_t c1 = line.find(':');
    const size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    std::string_view ctl = line.substr(c1 + 1, c2 - c1 - 1);
    const std::string path(line.substr(c2 + 1));
    if (ctl.empty()) {
      v2 = path;
      continue;
    }
    if (!have_v1_cpu) continue;
    while (!ctl.empty()) {
      const size_t c = ctl.find(',');
      if (ctl.substr(0, c) == "cpu") {
        version = 1;
        return path;
      }
      ctl.remove_prefix(c == std::string_view::npos ? ctl.size() : c + 1);
    }
  }
  if (v2) version = 2;
  return v2;
}

std::optional<std::pair<int64_t, int64_t>> parse_cpu_max(std::string_view text) {
  text = limit_trim(text);
  const size_t sp = text.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  const auto quota = limit_i64(text.substr(0, sp));  // "max": no limit
  const auto period = limit_i64(text.substr(sp + 1));
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return std::pair{*quota, *period};
}

std::optional<std::pair<int64_t, int64_t>> parse_cfs_quota(std::string_view quota,
                                                           std::string_view period) {
  const auto q = limit_i64(quota), p = limit_i64(period);  // quota -1: no limit
  if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;
  return std::pair{*q, *p};
}

std::optional<CpuLimit> read_cpu_limit(uint32_t pid) {
  // The mounts as this agent sees them: the process's cgroup paths are relative to the agent's
  // cgroup namespace, the host's when it runs there.
  static const CgroupMounts mounts = [] {
    auto mi = read_small_file("/proc/self/mountinfo");
    return mi ? parse_cgroup_mounts(*mi) : CgroupMounts{};
  }();
  auto cg = read_small_file("/proc/" + std::to_string(pid) + "/cgroup");
  if (!cg) return std::nullopt;
  int version = 0;
  auto path = cpu_cgroup_path(*cg, !mounts.v1_cpu.empty(), version);
  if (!path) return std::nullopt;
  const std::string& mount = version == 1 ? mounts.v1_cpu : mounts.v2;
  if (mount.empty()) return std::nullopt;
  return tightest_limit(mount, *path, version, [](const std::string& f) {
    auto r = read_small_file(f);
    return r ? std::optional<std::string>(std::move(*r)) : std::nullopt;
  });
}

}  // namespace gpuwhy::discover
