// SPDX-License-Identifier: Apache-2.0
// The CPU quota a process runs under: the tightest CFS bandwidth limit (cgroup v2 `cpu.max`,
// v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`) on its cgroup or any ancestor. What a container's
// CPU limit (Kubernetes resources.limits.cpu) becomes on the host; explain names it when the
// scheduler says a GPU thread was throttled (offcpu.throttled).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuwhy::discover {

struct CpuLimit {
  std::string cgroup;     // the cgroup that sets it, as /proc/PID/cgroup names it
  int64_t quota_us = 0;   // CPU time allowed per period, over all CPUs
  int64_t period_us = 0;  // the period
  int version = 0;        // 1 or 2: the cgroup hierarchy it comes from
  double cpus() const { return period_us > 0 ? static_cast<double>(quota_us) / period_us : 0; }
};

// Where each hierarchy is mounted (from /proc/self/mountinfo): the v2 mount, and the v1 mount
// that has the `cpu` controller. Empty when absent.
struct CgroupMounts {
  std::string v2;
  std::string v1_cpu;
};
CgroupMounts parse_cgroup_mounts(std::string_view mountinfo);

// The cgroup path of the hierarchy that holds the cpu controller, from /proc/PID/cgroup's text:
// the v1 line listing `cpu`, else the v2 line ("0::/path"). Sets `version`.
std::optional<std::string> cpu_cgroup_path(std::string_view proc_cgroup, bool have_v1_cpu,
                                           int& version);

// One limit file's text to (quota, period): v2 "max 100000" (none) or "20000 100000"; v1 passes
// the quota file (-1: none) and the period file. nullopt: no limit.
std::optional<std::pair<int64_t, int64_t>> parse_cpu_max(std::string_view text);
std::optional<std::pair<int64_t, int64_t>> parse_cfs_quota(std::string_view quota,
                                                           std::string_view period);

// The tightest limit over `path` and its ancestors under `mount`, reading the files with `read`
// (a path -> contents function, so tests give a fake tree). nullopt: none is set.
template <class Read>
std::optional<CpuLimit> tightest_limit(const std::string& mount, std::string path, int version,
                                       Read&& read);

// For a live process: nullopt when it has no limit, or its cgroup files cannot be read.
std::optional<CpuLimit> read_cpu_limit(uint32_t pid);

}  // namespace gpuwhy::discover

#include "discover/cpu_limit_impl.hpp"
