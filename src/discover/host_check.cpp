// SPDX-License-Identifier: Apache-2.0
#include "discover/host_check.hpp"
#include "discover/python.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <utility>

#include "discover/proc_util.hpp"

namespace gpuwhy::discover {
namespace {

constexpr const char* kUprobePmuType = "/sys/bus/event_source/devices/uprobe/type";

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Mount point of the first tracefs in our mount table ("" when none). mountinfo lines read
// "id parent maj:min root mountpoint options [tags] - fstype source superoptions".
std::string tracefs_mount_point() {
  auto text = read_small_file("/proc/self/mountinfo");
  if (!text) return {};
  std::string_view t = *text;
  while (!t.empty()) {
    const size_t nl = std::min(t.find('\n'), t.size());
    const std::string_view line = t.substr(0, nl);
    t.remove_prefix(std::min(nl + 1, t.size()));
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos || !line.substr(dash + 3).starts_with("tracefs ")) continue;
    std::string_view fields = line.substr(0, dash);
    for (int i = 0; i < 4; ++i) {  // skip id, parent, maj:min and root
      const size_t sp = fields.find(' ');
      if (sp == std::string_view::npos) return {};
      fields.remove_prefix(sp + 1);
    }
    return std::string(fields.substr(0, fields.find(' ')));
  }
  return {};
}

std::string kib(uint64_t bytes) {
  return bytes == RLIM_INFINITY ? "unlimited" : std::to_string(bytes / 1024) + " KiB";
}

void add_library(HostFacts& f, std::map<std::pair<uint64_t, uint64_t>, size_t>& index,
                 LibraryFile lib, bool on_host, uint32_t pid) {
  const auto key = std::make_pair(lib.dev, lib.inode);
  auto it = index.find(key);
  if (it == index.end()) {
    it = index.emplace(key, f.libraries.size()).first;
    f.libraries.push_back(LibraryCheck{std::move(lib)});
  }
  LibraryCheck& c = f.libraries[it->second];
  c.on_host = c.on_host || on_host;
  if (pid != 0) c.pids.push_back(pid);
}

void measure_probe_sites(LibraryCheck& c) {
  for (const ApiInfo& api : api_catalog()) c.catalogued += api.family == c.file.family;
  auto sites = resolve_probe_sites(c.file.path, c.file.family);
  if (!sites) {
    c.error = sites.error().line();
    return;
  }
  c.exported = sites->size();
  for (const ProbeSite& s : *sites) c.shifted += s.skipped_bytes > 0;
  for (const ApiInfo& api : api_catalog()) {
    if (api.family != c.file.family) continue;
    const bool found = std::any_of(sites->begin(), sites->end(),
                                   [&](const ProbeSite& s) { return s.api == &api; });
    if (!found) c.missing.emplace_back(api.name);
  }
}

void scan_processes(HostFacts& f, std::map<std::pair<uint64_t, uint64_t>, size_t>& index) {
  for (uint32_t pid : list_pids()) {
    ++f.processes_scanned;
    std::vector<SkippedLibrary> skipped;
    auto libs = gpu_libraries_of(pid, &skipped);
    if (!libs) {
      // A process that exited since the listing is no finding; one we may not read is.
      if (exists("/proc/" + std::to_string(pid))) f.unreadable_pids.push_back(pid);
      continue;
    }
    if (libs->empty() && skipped.empty()) continue;
    auto info = read_process(pid);
    if (!info) continue;
    ProcessCheck p{std::move(*info), {}, std::move(skipped), {}};
    if (auto py = find_python(pid)) {
      p.python = python_check_line(*py);
      p.python_version = py->version.empty() ? "?" : py->version;
      p.python_supported = py->supported;
      p.python_tested = python_tested(py->minor_hex, py->free_threaded);
    }
    for (LibraryFile& lib : *libs) {
      p.libraries.push_back(lib.path);
      add_library(f, index, std::move(lib), false, pid);
    }
    f.processes.push_back(std::move(p));
  }
}

}  // namespace

std::optional<uint64_t> parse_cap_eff(std::string_view status) {
  constexpr std::string_view kKey = "CapEff:";
  while (!status.empty()) {
    const size_t nl = std::min(status.find('\n'), status.size());
    std::string_view line = status.substr(0, nl);
    status.remove_prefix(std::min(nl + 1, status.size()));
    if (!line.starts_with(kKey)) continue;
    line.remove_prefix(kKey.size());
    line.remove_prefix(std::min(line.find_first_not_of(" \t"), line.size()));
    uint64_t mask = 0;
    const auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), mask, 16);
    if (ec != std::errc() || p != line.data() + line.size()) return std::nullopt;
    return mask;
  }
  return std::nullopt;
}

std::optional<KernelRelease> parse_kernel_release(std::string_view release) {
  KernelRelease k;
  int* parts[] = {&k.major, &k.minor, &k.patch};
  const char* p = release.data();
  const char* end = release.data() + release.size();
  int parsed = 0;
  while (parsed < 3) {
    const auto [next, ec] = std::from_chars(p, end, *parts[parsed]);
    if (ec != std::errc()) break;
    ++parsed;
    p = next;
    if (p == end || *p != '.') break;
    ++p;
  }
  if (parsed < 2) return std::nullopt;  // "6" alone is not a release
  return k;
}

bool HostFacts::privileged() const {
  if (!cap_eff) return euid == 0;
  return has_cap(kCapSysAdmin) || (has_cap(kCapBpf) && has_cap(kCapPerfmon));
}

HostFacts gather_host_facts(const CheckOptions& opts) {
  HostFacts f;
  utsname u{};
  if (::uname(&u) == 0) {
    f.kernel_release = u.release;
    f.kernel_version = u.version;
    f.machine = u.machine;
  }
  f.btf = exists(f.btf_path);
  f.euid = ::geteuid();
  if (auto status = read_small_file("/proc/self/status")) f.cap_eff = parse_cap_eff(*status);
  f.tracefs_path = tracefs_mount_point();
  f.tracefs_uprobe_events = !f.tracefs_path.empty() && exists(f.tracefs_path + "/uprobe_events");
  if (auto type = read_small_file(kUprobePmuType)) {
    int v = -1;
    const std::string& s = *type;
    if (std::from_chars(s.data(), s.data() + s.size(), v).ec == std::errc()) f.uprobe_pmu_type = v;
  }
  // libbpf's probe reports "unsupported" for any failure, EPERM included: only ask when
  // privileged, so that an unprivileged run does not blame the kernel.
  if (opts.probe_ringbuf && f.privileged()) f.ringbuf = opts.probe_ringbuf();
  if (opts.probe_cpu_clock && f.privileged()) f.cpu_clock = opts.probe_cpu_clock();
  if (opts.probe_missing_helpers && f.privileged()) {
    f.missing_helpers = opts.probe_missing_helpers();
    f.helpers_probed = true;
  }
  if (opts.probe_uprobe_multi) f.uprobe_multi = opts.probe_uprobe_multi() ? 1 : 0;
  if (opts.probe_uprobe_session) f.uprobe_session = opts.probe_uprobe_session() ? 1 : 0;
  rlimit rl{};
  if (::getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
    f.memlock_cur = rl.rlim_cur;
    f.memlock_max = rl.rlim_max;
  }

  if (auto libc = host_dlopen_library())
    f.dlopen_library = *libc;
  else
    f.dlopen_error = libc.error().what;

  std::map<std::pair<uint64_t, uint64_t>, size_t> index;
  if (opts.scan_host) {
    for (LibraryFile& lib : host_gpu_libraries()) add_library(f, index, std::move(lib), true, 0);
  }
  if (opts.scan_processes) scan_processes(f, index);
  for (LibraryCheck& c : f.libraries) measure_probe_sites(c);
  return f;
}

std::vector<Finding> evaluate(const HostFacts& f) {
  std::vector<Finding> out;
  auto add = [&](Severity s, const char* topic, std::string message) {
    out.push_back({s, topic, std::move(message)});
  };

  const auto release = parse_kernel_release(f.kernel_release);
  if (!release) {
    add(Severity::Warning, "kernel", "cannot parse kernel release '" + f.kernel_release + "'");
  } else if (!release->at_least(5, 8)) {
    add(Severity::Problem, "kernel",
        "kernel " + f.kernel_release +
            " is older than 5.8 (no BPF ring buffer, no CAP_BPF): upgrade to Linux 5.8 or newer");
  }
  if (!f.missing_helpers.empty()) {
    // A kernel version says little here (distribution kernels backport BPF): the probe decides.
    std::string list;
    for (const std::string& h : f.missing_helpers) list += (list.empty() ? "" : ", ") + h;
    add(Severity::Problem, "helpers",
        "the kernel lacks BPF helpers trace's programs call (" + list +
            "): trace cannot load; use a kernel that has them (upstream Linux 5.17 or newer)");
  }
  if (!f.btf) {
    add(Severity::Problem, "btf",
        "kernel has no BTF (" + f.btf_path +
            " missing): use a kernel built with CONFIG_DEBUG_INFO_BTF=y");
  }

  const bool priv = f.privileged();
  if (!priv && f.euid == 0) {
    add(Severity::Problem, "privileges",
        "running as root but without CAP_SYS_ADMIN or CAP_BPF+CAP_PERFMON (a restricted "
        "container?): run the container with --privileged, or add CAP_BPF and CAP_PERFMON");
  } else if (!priv) {
    add(Severity::Problem, "privileges",
        "not running as root and missing CAP_BPF+CAP_PERFMON: run with sudo");
  } else if (f.cap_eff && !f.has_cap(kCapSysPtrace) && f.euid != 0) {
    add(Severity::Warning, "privileges",
        "without CAP_SYS_PTRACE the processes of other users cannot be inspected: run with sudo "
        "to find them");
  }

  if (f.ringbuf == 0) {
    add(Severity::Problem, "ringbuf",
        "cannot create a BPF ring buffer map: the kernel lacks it (Linux < 5.8) or bpf() is "
        "blocked (container seccomp profile, LSM lockdown): allow bpf() or upgrade the kernel");
  } else if (f.ringbuf < 0 && f.ringbuf != kNotProbed) {
    add(Severity::Problem, "ringbuf",
        std::string("probing the BPF ring buffer failed (") + std::strerror(-f.ringbuf) +
            "): allow bpf() for gpuwhy");
  }

  if (f.cpu_clock == 1) {
    add(Severity::Info, "cpu_samples",
        "cpu-clock perf events open: trace samples what traced threads do on the CPU "
        "(--sample-hz, 199 per second per CPU by default)");
  } else if (f.cpu_clock != kNotProbed) {
    add(Severity::Warning, "cpu_samples",
        std::string("cannot open a cpu-clock perf event (") + std::strerror(-f.cpu_clock) +
            "): trace runs without CPU samples, so a syscall's time on the CPU is seen only "
            "with 'trace --with syscalls'; allow perf_event_open (kernel.perf_event_paranoid, "
            "seccomp) for gpuwhy");
  }

  if (f.uprobe_multi == 1) {
    add(Severity::Info, "uprobe_multi",
        "uprobe_multi links: trace attaches each library's probes with one link and removes "
        "them at once when it stops");
  } else if (f.uprobe_multi == 0) {
    add(Severity::Warning, "uprobe_multi",
        "no uprobe_multi links (Linux 6.6 has them): trace attaches one uprobe per function "
        "and stopping waits ~0.1 s per probed function (tens of seconds with every GPU "
        "runtime probed); tracing itself is unaffected");
  }
  // Sessions serve only over uprobe_multi links.
  if (f.uprobe_multi == 1 && f.uprobe_session == 1) {
    add(Severity::Info, "uprobe_session",
        "uprobe sessions: a driver launch made inside a runtime launch (NVIDIA's "
        "cudaLaunchKernel calls cuLaunchKernel) costs trace one trap and is not recorded "
        "(event_counts launch_nested_skipped)");
  } else if (f.uprobe_multi == 1 && f.uprobe_session == 0) {
    add(Severity::Info, "uprobe_session",
        "no uprobe sessions (Linux 6.13 has them): a driver launch made inside a runtime "
        "launch is probed and recorded like any call, one more probed call per kernel launch "
        "of NVIDIA's runtime");
  }

  if (f.uprobe_pmu_type < 0) {
    if (f.tracefs_uprobe_events) {
      add(Severity::Warning, "uprobes",
          std::string("kernel has no uprobe PMU (") + kUprobePmuType +
              " missing); libbpf falls back to " + f.tracefs_path +
              "/uprobe_events, which is slower to attach");
    } else {
      add(Severity::Problem, "uprobes",
          std::string("kernel has no uprobe PMU (") + kUprobePmuType +
              " missing): use a kernel built with CONFIG_UPROBE_EVENTS=y");
    }
  }

  add(Severity::Info, "tracefs",
      f.tracefs_path.empty()
          ? "tracefs not mounted: not needed, gpuwhy uses BTF tracepoints (other tools may want "
            "'mount -t tracefs nodev /sys/kernel/tracing')"
          : "tracefs mounted at " + f.tracefs_path + " (not needed: gpuwhy uses BTF tracepoints)");

  if (release && release->at_least(5, 11)) {
    add(Severity::Info, "memlock",
        "RLIMIT_MEMLOCK " + kib(f.memlock_cur) +
            " does not matter: this kernel charges BPF memory to the memory cgroup");
  } else if (f.memlock_cur != RLIM_INFINITY &&
             !(f.cap_eff ? f.has_cap(kCapSysResource) : f.euid == 0)) {
    add(Severity::Warning, "memlock",
        "RLIMIT_MEMLOCK is " + kib(f.memlock_cur) +
            ", this kernel charges BPF maps to it, and it cannot be raised without "
            "CAP_SYS_RESOURCE: run 'ulimit -l unlimited' first, or run with sudo");
  } else {
    add(Severity::Info, "memlock",
        "RLIMIT_MEMLOCK " + kib(f.memlock_cur) + ": libbpf raises it when loading the programs");
  }

  if (!f.dlopen_library.empty()) {
    add(Severity::Info, "dlopen",
        "dlopen in " + f.dlopen_library +
            ": runtimes a process loads later are found at once (without the syscall family, "
            "the default)");
  } else if (!f.dlopen_error.empty()) {
    add(Severity::Warning, "dlopen",
        f.dlopen_error +
            ": runtimes a process loads later are found by the exec hint or the "
            "10 s rescan only; 'trace --with syscalls' finds them at their mmap");
  }

  if (f.libraries.empty()) {
    add(Severity::Warning, "libraries",
        "no GPU runtime library found on the host or in running processes; a trace can still "
        "wait for GPU processes to start");
  }
  for (const LibraryCheck& c : f.libraries) {
    if (!c.error.empty()) {
      add(Severity::Warning, "libraries", "cannot read " + c.file.path + ": " + c.error);
    } else if (c.exported == 0) {
      add(Severity::Warning, "libraries",
          c.file.path + " exports none of the " + std::to_string(c.catalogued) + " " +
              std::string(family_name(c.file.family)) + " functions gpuwhy traces (a stub?)");
    }
  }
  if (!f.unreadable_pids.empty()) {
    std::string pids;
    for (size_t i = 0; i < f.unreadable_pids.size() && i < 8; ++i) {
      pids += (i ? "," : "") + std::to_string(f.unreadable_pids[i]);
    }
    if (f.unreadable_pids.size() > 8) pids += ",...";
    const std::string what = std::to_string(f.unreadable_pids.size()) +
                             (f.unreadable_pids.size() == 1 ? " process" : " processes") +
                             " could not be inspected (pid " + pids + ")";
    // Root can still be refused: processes owned by another user namespace, or PID 1 of a
    // sandbox. Only without privileges is "use sudo" the answer.
    add(Severity::Warning, "processes",
        f.euid == 0 || f.has_cap(kCapSysPtrace)
            ? what +
                  ": their /proc/PID/maps is closed to us (another user namespace?); GPU "
                  "libraries they use will not be listed"
            : what + ": run with sudo to see the processes of other users");
  }
  for (const ProcessCheck& p : f.processes) {
    for (const SkippedLibrary& s : p.skipped) {
      add(Severity::Warning, "processes",
          "pid " + std::to_string(p.info.pid) + " (" + p.info.comm + "): " + s.map_path + ": " +
              s.reason);
    }
  }
  return out;
}

CheckReport run_check(const CheckOptions& opts) {
  CheckReport r;
  r.facts = gather_host_facts(opts);
  r.findings = evaluate(r.facts);
  r.can_trace = std::none_of(r.findings.begin(), r.findings.end(),
                             [](const Finding& x) { return x.severity == Severity::Problem; });
  return r;
}

}  // namespace gpuwhy::discover
