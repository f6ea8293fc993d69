// SPDX-License-Identifier: Apache-2.0
// tightest_limit(): a template, so that tests walk a made-up cgroup tree.
#pragma once

namespace gpuwhy::discover {

template <class Read>
std::optional<CpuLimit> tightest_limit(const std::string& mount, std::string path, int version,
                                       Read&& read) {
  std::optional<CpuLimit> best;
  while (true) {
    const std::string dir = mount + (path == "/" ? "" : path);
    std::optional<std::pair<int64_t, int64_t>> l;
    if (version == 2) {
      if (auto t = read(dir + "/cpu.max")) l = parse_cpu_max(*t);
    } else {
      auto q = read(dir + "/cpu.cfs_quota_us");
      auto p = read(dir + "/cpu.cfs_period_us");
      if (q && p) l = parse_cfs_quota(*q, *p);
    }
    if (l) {
      CpuLimit c{path, l->first, l->second, version};
      if (!best || c.cpus() < best->cpus()) best = c;
    }
    if (path.empty() || path == "/") break;
    const size_t slash = path.rfind('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return best;
}

}  // namespace gpuwhy::discover
