// SPDX-License-Identifier: Apache-2.0
// `gpuwhy check` as data: what this host offers for tracing (kernel, BTF, privileges, BPF
// features) and which GPU runtime libraries and processes there are to trace. Gathering and
// judging are separate so that tests can judge made-up hosts; the CLI only renders the report.
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/discover.hpp"

namespace gpuwhy::discover {

// Capability numbers from linux/capability.h.
inline constexpr int kCapSysPtrace = 19;
inline constexpr int kCapSysAdmin = 21;
inline constexpr int kCapSysResource = 24;
inline constexpr int kCapPerfmon = 38;
inline constexpr int kCapBpf = 39;

// The CapEff mask from the text of /proc/PID/status; nullopt when absent or malformed.
std::optional<uint64_t> parse_cap_eff(std::string_view proc_status);

struct KernelRelease {
  int major = 0, minor = 0, patch = 0;
  bool at_least(int ma, int mi) const { return major > ma || (major == ma && minor >= mi); }
};
// "6.18.44-fc-v509" -> {6, 18, 44}.
std::optional<KernelRelease> parse_kernel_release(std::string_view release);

struct LibraryCheck {
  LibraryFile file;
  bool on_host = false;        // found by the host directory scan
  std::vector<uint32_t> pids;  // running processes that map it
  size_t exported = 0;         // catalogue functions of its family that it exports
  size_t catalogued = 0;       // catalogue functions of its family
  // The catalogue functions of its family it does not export, in catalogue order: what tracing
  // this library will not see (an older runtime without cudaEventRecordWithFlags, a stub).
  std::vector<std::string> missing;
  size_t shifted = 0;          // entry probes placed past an endbr64
  std::string error;           // why its probe sites could not be resolved, if they could not
};

struct ProcessCheck {
  ProcessInfo info;
  std::vector<std::string> libraries;  // host-visible paths of the GPU libraries it maps
  std::vector<SkippedLibrary> skipped;
  // "Python 3.11.7 (libpython3.11.so.1.0): supported, Python lines recorded (layout: built-in
  // table; tested on a live interpreter)", or why not (python_check_line); empty when the
  // process runs no CPython.
  std::string python;
  std::string python_version;  // "3.14.0t"; empty: no CPython
  bool python_supported = false;
  std::string python_tested;  // python_tested(): live, from the published layout, or empty
};

// Result of a feature probe that was not run.
inline constexpr int kNotProbed = INT_MIN;

struct HostFacts {
  std::string kernel_release, kernel_version, machine;  // uname -r, -v, -m
  std::string btf_path = "/sys/kernel/btf/vmlinux";
  bool btf = false;
  uint32_t euid = 0;
  std::optional<uint64_t> cap_eff;
  std::string tracefs_path;  // where tracefs is mounted; empty when it is not
  bool tracefs_uprobe_events = false;
  int ringbuf = kNotProbed;    // 1 supported, 0 map creation failed, < 0 -errno
  int cpu_clock = kNotProbed;  // a cpu-clock perf event (trace's CPU samples): 1 opens, < 0 -errno
  int uprobe_multi = kNotProbed;  // the kernel has uprobe_multi links (Linux 6.6): 1, or 0
  int uprobe_session = kNotProbed;  // and uprobe sessions (Linux 6.13): 1, or 0
  int uprobe_pmu_type = -1;       // perf PMU type of uprobes; -1 when the kernel has none
  // BPF helpers trace's programs call that this kernel lacks ("bpf_loop (Linux 5.17)"); probed
  // only when privileged (helpers_probed).
  bool helpers_probed = false;
  std::vector<std::string> missing_helpers;
  uint64_t memlock_cur = 0;  // RLIMIT_MEMLOCK (RLIM_INFINITY when unlimited)
  uint64_t memlock_max = 0;
  // The host C library's dlopen, where `trace` (no syscall family) hangs its library hint; empty
  // with the reason in dlopen_error when there is none.
  std::string dlopen_library, dlopen_error;
  std::vector<LibraryCheck> libraries;
  std::vector<ProcessCheck> processes;  // those that map at least one GPU library
  size_t processes_scanned = 0;
  std::vector<uint32_t> unreadable_pids;  // maps not readable to us (other users, hardened)

  bool has_cap(int cap) const { return cap_eff && ((*cap_eff >> cap) & 1) != 0; }
  // May load BPF programs and open perf events (uprobes): CAP_BPF + CAP_PERFMON, or
  // CAP_SYS_ADMIN which implies both; euid 0 only when the capability set is unknown.
  bool privileged() const;
};

enum class Severity : uint8_t { Info, Warning, Problem };

// One line of the verdict: "what is the case; what to do". Problems make tracing impossible.
struct Finding {
  Severity severity = Severity::Info;
  std::string topic;  // "kernel", "btf", "privileges", "ringbuf", "uprobes", "tracefs", ...
  std::string message;
};

struct CheckReport {
  HostFacts facts;
  std::vector<Finding> findings;
  bool can_trace = false;  // no Problem among the findings
};

struct CheckOptions {
  // Runs libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL). Injected because this module
  // reads files only and does not link libbpf; unset leaves the ring buffer unprobed.
  std::function<int()> probe_ringbuf;
  // Opens (and closes) a cpu-clock perf event on CPU 0: 1, or -errno. Unset: not probed.
  std::function<int()> probe_cpu_clock;
  // The helpers trace needs that the kernel lacks, by name and first kernel (libbpf's helper
  // probe, injected like the ring buffer's). Unset: not probed.
  std::function<std::vector<std::string>()> probe_missing_helpers;
  // Whether the kernel has uprobe_multi links (from its BTF). Unset: not probed.
  std::function<bool()> probe_uprobe_multi;
  // Whether it has uprobe sessions (from its BTF). Unset: not probed.
  std::function<bool()> probe_uprobe_session;
  bool scan_host = true;       // look for installed libraries
  bool scan_processes = true;  // look into every running process's maps
};

HostFacts gather_host_facts(const CheckOptions& opts);
// Pure: the findings for a set of facts.
std::vector<Finding> evaluate(const HostFacts& facts);
CheckReport run_check(const CheckOptions& opts);

}  // namespace gpuwhy::discover
