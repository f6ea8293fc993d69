// SPDX-License-Identifier: Apache-2.0
#include "probes/probes.hpp"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

#include "core/log.hpp"
#include "gpuwhy_bpf.skel.h"
#include "probes/uprobe_multi.hpp"

namespace gpuwhy::probes {
namespace {

int libbpf_to_spdlog(enum libbpf_print_level level, const char* fmt, va_list args) {
  if (level == LIBBPF_DEBUG && !spdlog::should_log(spdlog::level::trace)) return 0;
  // Whole: a verifier log (the one thing that says why a program was refused) runs to pages.
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, again);
  va_end(again);
  std::string line(n > 0 ? static_cast<size_t>(n) + 1 : 1, '\0');
  std::vsnprintf(line.data(), line.size(), fmt, args);
  line.resize(n > 0 ? static_cast<size_t>(n) : 0);
  while (!line.empty() && line.back() == '\n') line.pop_back();
  if (level == LIBBPF_WARN)
    spdlog::debug("libbpf: {}", line);  // reported via our own errors
  else
    spdlog::trace("libbpf: {}", line);
  return 0;
}

bool is_power_of_two(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Whether the running kernel has a kfunc (looked up in its BTF).
bool kernel_has_function(const char* name) {
  btf* vmlinux = btf__load_vmlinux_btf();
  if (!vmlinux) return false;
  const bool has = btf__find_by_name_kind(vmlinux, name, BTF_KIND_FUNC) > 0;
  btf__free(vmlinux);
  return has;
}

// The key of gw_known_libs (bpf/proc.bpf.h).
struct FileKey {
  uint64_t inode;
  uint32_t dev;  // the kernel's dev_t: major << 20 | minor
  uint32_t pad;
};

}  // namespace

std::string_view host_family_name(HostFamily f) {
  switch (f) {
    case HostFamily::Sched:
      return "sched";
    case HostFamily::Proc:
      return "proc";
    case HostFamily::Syscalls:
      return "syscalls";
    case HostFamily::BlockIo:
      return "block_io";
    case HostFamily::Tcp:
      return "tcp";
    case HostFamily::Reclaim:
      return "reclaim";
    case HostFamily::CpuSamples:
      return "cpu_samples";
    case HostFamily::DriverIoctls:
      return "driver_ioctls";
  }
  return "?";
}

std::string driver_path_prefix() {
  const char* test = std::getenv("GPUWHY_TEST_DRIVER_PATH");  // tests only: a stand-in path
  return test != nullptr && *test != '\0' ? test : "/dev/nvidia";
}

namespace {

// Whether any file of the driver exists: "/dev/nvidia" -> is there a /dev/nvidia* file?
bool driver_present(const std::string& prefix) {
  const size_t slash = prefix.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : prefix.substr(0, slash);
  const std::string name = prefix.substr(slash + 1);
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(d)) found = found || std::string_view(e->d_name).starts_with(name);
  closedir(d);
  return found;
}

}  // namespace

Status preflight() {
  // Privileges are the kernel's to judge at load time (root, or CAP_BPF + CAP_PERFMON); BTF is
  // what CO-RE and the BTF tracepoints cannot do without.
  struct stat st {};
  if (stat("/sys/kernel/btf/vmlinux", &st) != 0)
    return Error{"kernel has no BTF (/sys/kernel/btf/vmlinux missing)",
                 "use a kernel built with CONFIG_DEBUG_INFO_BTF=y"};
  return {};
}

Result<std::unique_ptr<Probes>> Probes::load(const ProbeConfig& cfg) {
  libbpf_set_print(libbpf_to_spdlog);
  if (Status pre = preflight(); !pre) return pre.error();
  if (!is_power_of_two(cfg.events_ring_bytes) || cfg.events_ring_bytes < 4096)
    return Error{"ring buffer size must be a power of two of at least 4096 bytes",
                 "pass e.g. --ring-mb 32"};

  std::unique_ptr<Probes> p(new Probes());
  p->skel_ = gpuwhy_bpf__open();
  if (!p->skel_) return errno_error("cannot open the BPF object", errno);

  auto& ro = p->skel_->rodata->gw_cfg;
  ro.min_offcpu_ns = cfg.min_offcpu_ns;
  ro.min_syscall_ns = cfg.min_syscall_ns;
  ro.filter_pids = cfg.filter_pids ? 1 : 0;
  ro.capture_stacks = cfg.capture_stacks ? 1 : 0;
  ro.launch_read_mask = cfg.launch_read_mask;
  ro.wakeup_bytes = cfg.events_ring_bytes / 4;  // wake the reader early when a quarter is full
  ro.self_pid = cfg.self_pid ? cfg.self_pid : static_cast<uint32_t>(getpid());
  ro.sample_period_ns = cfg.sample_hz ? 1'000'000'000ull / cfg.sample_hz : 0;
  ro.python_stacks = cfg.python_stacks ? 1 : 0;
  ro.sample_stacks = cfg.sample_stacks && cfg.sample_hz > 0 ? 1 : 0;
  // Driver ioctls: the prefix's file-name part and its directory's last component, as the
  // kernel's dentries name them (each at most 15 characters).
  const std::string driver = driver_path_prefix();
  const size_t slash = driver.rfind('/');
  const std::string driver_name = driver.substr(slash + 1);
  std::string driver_dir = slash == std::string::npos ? "" : driver.substr(0, slash);
  driver_dir = driver_dir.substr(driver_dir.rfind('/') + 1);
  std::string driver_off;  // why the family is off; empty: on
  if (!cfg.driver_ioctls)
    driver_off = "off by default (--with driver-ioctls)";
  else if (driver_name.empty() || driver_name.size() > 15 || driver_dir.empty() ||
           driver_dir.size() > 15)
    driver_off = "driver path " + driver + " is not DIR/NAME of at most 15 characters each";
  else if (!driver_present(driver))
    driver_off = "no driver device files (" + driver + "*)";
  const bool driver_on = driver_off.empty();
  ro.syscalls = cfg.syscalls ? 1 : 0;
  ro.driver_ioctls = driver_on ? 1 : 0;
  std::memcpy(const_cast<char*>(ro.driver_dir), driver_dir.data(),
              std::min<size_t>(driver_dir.size(), 15));
  std::memcpy(const_cast<char*>(ro.driver_name), driver_name.data(),
              std::min<size_t>(driver_name.size(), 15));
  p->driver_ioctls_ = driver_on;
  if (!driver_on) p->note_family(HostFamily::DriverIoctls, "off", driver_off);

  bpf_map__set_max_entries(p->skel_->maps.gw_events, cfg.events_ring_bytes);
  bpf_map__set_max_entries(p->skel_->maps.gw_lifecycle, cfg.lifecycle_ring_bytes);
  // Every call's stack with --stacks; by default only the native threads' CPU samples, whose
  // distinct stacks are far fewer (4 MiB of map: each slot holds 127 frames).
  bpf_map__set_max_entries(p->skel_->maps.gw_stacks, cfg.capture_stacks ? 16384
                                                     : ro.sample_stacks ? 4096
                                                                        : 1);
  // One run-queue wait count per CPU (bpf/cpu_runs.bpf.h), indexed by the kernel's CPU number.
  bpf_map__set_max_entries(p->skel_->maps.gw_cpu_wait,
                           static_cast<uint32_t>(std::max(libbpf_num_possible_cpus(), 1)));

  // Load one pair of API programs: the uprobe_multi pair where the kernel has it.
  p->multi_ = cfg.uprobe_multi && kernel_has_uprobe_multi();
  p->entry_only_ = cfg.entry_only_categories;
  p->launch_batch_ = cfg.launch_batch;
  auto* pr = &p->skel_->progs;
  // The dynamic linker's hook walks a process's mappings with the VMA iterator (Linux 6.7).
  p->rtld_hook_ = kernel_has_function("bpf_iter_task_vma_new");
  if (!p->rtld_hook_) p->rtld_detail_ = "the kernel has no VMA iterator (Linux 6.7)";
  bpf_program__set_autoload(pr->gw_rtld_debug_state, p->rtld_hook_);
  p->skel_->rodata->gw_hold_new_libs = cfg.hold_new_libs ? 1 : 0;
  bpf_program__set_autoload(pr->gw_api_entry, !p->multi_);
  bpf_program__set_autoload(pr->gw_api_return, !p->multi_);
  bpf_program__set_autoload(pr->gw_api_entry_multi, p->multi_);
  bpf_program__set_autoload(pr->gw_api_return_multi, p->multi_);
  if (p->multi_) {
    const auto multi = static_cast<enum bpf_attach_type>(kAttachUprobeMulti);
    bpf_program__set_expected_attach_type(pr->gw_api_entry_multi, multi);
    bpf_program__set_expected_attach_type(pr->gw_api_return_multi, multi);
  }
  // The driver launches' session program only where the kernel has sessions (6.13): elsewhere it
  // is not loaded, and its weak kfunc stays unresolved.
  p->session_ = p->multi_ && cfg.uprobe_session && kernel_has_uprobe_session();
  bpf_program__set_autoload(pr->gw_launch_session, p->session_);
  // Adaptive launch timing skips a launch's return through the session program, and only a
  // batched launch takes that path (GW_COOKIE_BATCHED).
  if (p->session_ && p->launch_batch_ && cfg.launch_untimed_per_s) {
    p->untimed_per_s_ = cfg.launch_untimed_per_s;
    const uint64_t per_window =
        (uint64_t{cfg.launch_untimed_per_s} << GW_LAUNCH_RATE_SHIFT) / 1'000'000'000ull;
    ro.launch_untimed_min = static_cast<uint32_t>(std::max<uint64_t>(per_window, 1));
  }
  if (p->session_)
    bpf_program__set_expected_attach_type(pr->gw_launch_session,
                                          static_cast<enum bpf_attach_type>(kAttachUprobeSession));

  if (int err = gpuwhy_bpf__load(p->skel_); err != 0) {
    const int e = -err;
    if (e == EPERM)
      return Error{"the kernel refused to load BPF programs (operation not permitted)",
                   "run as root (sudo), or grant CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN (start-up "
                   "uprobes need it on current kernels; docs/install.md)"};
    // The verifier answers EACCES for an access it judges unsafe: a program of this build does
    // not pass this kernel's verifier, which no privilege changes.
    if (e == EACCES)
      return Error{
          "this kernel's BPF verifier refused a gpuwhy program (an access it judged "
          "unsafe)",
          "'gpuwhy -vv trace' prints the verifier's log; report it with 'gpuwhy check "
          "--json'"};
    return errno_error("loading the BPF programs failed", e,
                       "run 'gpuwhy check' to see which kernel feature is missing");
  }

  // The per-API capture specs come from the catalogue, the single source of truth.
  for (const ApiInfo& api : api_catalog()) {
    gw_api_spec spec = make_spec(api);
    spec.entry_only = p->entry_only(api) ? 1 : 0;
    uint32_t key = api.id;
    if (bpf_map__update_elem(p->skel_->maps.gw_api_specs, &key, sizeof(key), &spec, sizeof(spec),
                             BPF_ANY) != 0)
      return errno_error("cannot fill the API spec map", errno);
  }
  if (Status s = p->attach_host_families(cfg); !s) return s.error();
  return p;
}

Status Probes::attach_host_families(const ProbeConfig& cfg) {
  struct Entry {
    HostFamily family;
    bpf_program* prog;
    bool wanted;
    bool required;
  };
  auto* pr = &skel_->progs;
  const Entry entries[] = {
      // Interrupt context first, exits before entries: no entry is seen without its exit, so a
      // CPU's depth never sticks above zero (sched.bpf.h, gw_irq_ctx).
      {HostFamily::Sched, pr->gw_hrtimer_exit, true, true},
      {HostFamily::Sched, pr->gw_softirq_exit, true, true},
      {HostFamily::Sched, pr->gw_hardirq_exit, true, true},
      {HostFamily::Sched, pr->gw_hrtimer_entry, true, true},
      {HostFamily::Sched, pr->gw_softirq_entry, true, true},
      {HostFamily::Sched, pr->gw_hardirq_entry, true, true},
      {HostFamily::Sched, pr->gw_sched_switch, true, true},
      {HostFamily::Sched, pr->gw_sched_waking, true, true},
      {HostFamily::Sched, pr->gw_sched_wakeup, true, true},
      {HostFamily::Sched, pr->gw_sched_migrate, true, true},
      {HostFamily::Proc, pr->gw_exec, true, true},
      {HostFamily::Proc, pr->gw_fork, true, true},
      {HostFamily::Proc, pr->gw_exit, true, true},
      {HostFamily::Proc, pr->gw_task_rename, true, true},
      // sys_enter also carries the library-mapping hint; without it, a dlopen probe gives one.
      {HostFamily::Syscalls, pr->gw_sys_enter, cfg.syscalls || driver_ioctls_, false},
      {HostFamily::Syscalls, pr->gw_sys_exit, cfg.syscalls || driver_ioctls_, false},
      {HostFamily::BlockIo, pr->gw_block_issue, cfg.block_io, false},
      {HostFamily::BlockIo, pr->gw_block_complete, cfg.block_io, false},
      {HostFamily::Tcp, pr->gw_tcp_retransmit, cfg.tcp, false},
      {HostFamily::Reclaim, pr->gw_reclaim_begin, cfg.reclaim, false},
      {HostFamily::Reclaim, pr->gw_reclaim_end, cfg.reclaim, false},
  };
  for (const Entry& e : entries) {
    // The syscall tracepoints serve both syscall families: each is noted for what was asked.
    const bool sys = e.family == HostFamily::Syscalls;
    if (sys && e.wanted && !cfg.syscalls)
      note_family(HostFamily::Syscalls, "off", "off by default (--with syscalls)");
    if (!e.wanted) {
      note_family(e.family, "off",
                  host_family_on_by_default(e.family)
                      ? "left out (--without)"
                      : "off by default (--with " + std::string(host_family_name(e.family)) + ")");
      continue;
    }
    bpf_link* link = bpf_program__attach(e.prog);
    if (!link) {
      const int err = errno;
      std::string what = std::string("cannot attach ") + bpf_program__name(e.prog) + " (" +
                         std::string(host_family_name(e.family)) + "): " + std::strerror(err);
      if (e.required) return Error{what, "run 'gpuwhy check' for kernel support"};
      warnings_.push_back(what + "; that family is off for this trace");
      if (!sys || cfg.syscalls) note_family(e.family, "failed", what);
      if (sys && driver_ioctls_) note_family(HostFamily::DriverIoctls, "failed", what);
      continue;
    }
    links_.push_back(link);
    if (!sys || cfg.syscalls) note_family(e.family, "on", "");
    if (sys && driver_ioctls_) note_family(HostFamily::DriverIoctls, "on", "");
  }
  // The linker's hook sees every library a process maps, dlopen()ed ones included; the dlopen
  // return probe (one more uretprobe per dlopen on the host) only stands in for it.
  if (!attach_rtld_hook() && !cfg.syscalls && !driver_ioctls_) attach_dlopen_hint();
  if (cfg.sample_hz)
    attach_cpu_sampling(cfg.sample_hz);
  else
    note_family(HostFamily::CpuSamples, "off", "left out (--sample-hz 0)");
  return {};
}

namespace {

// A cpu-clock event sampling every `period_ns` of CPU time on `cpu`, any task: a timer, so it
// works in VMs without a hardware PMU. A descriptor, or -1 with errno.
int open_cpu_clock(int cpu, uint64_t period_ns) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.sample_period = period_ns;
  return static_cast<int>(syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

}  // namespace

int probe_cpu_clock() {
  const int fd = open_cpu_clock(0, 1'000'000'000ull / kDefaultSampleHz);
  if (fd < 0) return -errno;
  close(fd);
  return 1;
}

void Probes::attach_cpu_sampling(uint32_t hz) {
  const int cpus = libbpf_num_possible_cpus();
  const size_t first = links_.size();
  std::string failure;
  for (int cpu = 0; cpu < cpus && failure.empty(); ++cpu) {
    const int fd = open_cpu_clock(cpu, 1'000'000'000ull / hz);
    if (fd < 0) {
      if (errno == ENODEV) continue;  // a possible CPU that is offline
      failure = std::string("perf_event_open on CPU ") + std::to_string(cpu) + ": " +
                std::strerror(errno);
      break;
    }
    bpf_link* link = bpf_program__attach_perf_event(skel_->progs.gw_cpu_sample, fd);
    if (!link) {
      failure = std::string("cannot attach gw_cpu_sample: ") + std::strerror(errno);
      close(fd);
      break;
    }
    links_.push_back(link);
  }
  if (failure.empty() && links_.size() == first) failure = "no online CPU to sample";
  if (failure.empty()) {
    note_family(HostFamily::CpuSamples, "on", "");
    return;
  }
  // Some CPUs sampled and others not would look like threads that never ran there: none.
  for (size_t i = first; i < links_.size(); ++i) bpf_link__destroy(links_[i]);
  links_.resize(first);
  warnings_.push_back(failure + "; CPU samples are off for this trace");
  note_family(HostFamily::CpuSamples, "failed", failure);
}

// A family is as good as its worst program: one that failed makes it "failed" whatever the others
// did (sys_exit without sys_enter records nothing).
void Probes::note_family(HostFamily f, std::string state, std::string detail) {
  for (FamilyState& s : families_) {
    if (s.family != f) continue;
    if (s.state == "on" && state != "on") {
      s.state = std::move(state);
      s.detail = std::move(detail);
    }
    return;
  }
  families_.push_back({f, std::move(state), std::move(detail)});
}

// Without sys_enter there is no mmap hint: a return probe on the host libc's dlopen tells user
// space when a process may have loaded a GPU runtime. Not fatal: the periodic scan remains.
void Probes::attach_dlopen_hint() {
  auto warn = [&](const std::string& why) {
    warnings_.push_back("no dlopen hint (" + why +
                        "): runtimes loaded later are found by the "
                        "periodic scan, up to 10 s late");
  };
  auto libc = discover::host_dlopen_library();
  if (!libc) return warn(libc.error().what);
  auto offset = discover::function_probe_offset(*libc, "dlopen");
  if (!offset) return warn(offset.error().what);
  LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = true);
  bpf_link* link = bpf_program__attach_uprobe_opts(skel_->progs.gw_dlopen_return, -1, libc->c_str(),
                                                   *offset, &opts);
  if (!link) return warn(*libc + ": " + std::strerror(errno));
  links_.push_back(link);
}

bool Probes::attach_rtld_hook() {
  if (!rtld_hook_) return false;
  rtld_hook_ = false;
  auto ld = discover::host_dynamic_linker();
  if (!ld) {
    rtld_detail_ = ld.error().what;
    return false;
  }
  auto offset = discover::function_probe_offset(*ld, "_dl_debug_state");
  if (!offset) {
    rtld_detail_ = *ld + ": " + offset.error().what;
    return false;
  }
  LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = false);
  bpf_link* link = bpf_program__attach_uprobe_opts(skel_->progs.gw_rtld_debug_state, -1,
                                                   ld->c_str(), *offset, &opts);
  if (!link) {
    rtld_detail_ = *ld + ": " + std::strerror(errno);
    return false;
  }
  links_.push_back(link);
  rtld_hook_ = true;
  rtld_detail_ = *ld;
  return true;
}

int Probes::held_pids_map_fd() const { return bpf_map__fd(skel_->maps.gw_held_pids); }

Status Probes::mark_known(uint32_t dev_major, uint32_t dev_minor, uint64_t inode) {
  const FileKey key{inode, (dev_major << 20) | dev_minor, 0};
  const uint32_t one = 1;
  if (bpf_map__update_elem(skel_->maps.gw_known_libs, &key, sizeof(key), &one, sizeof(one),
                           BPF_ANY) != 0)
    return errno_error("cannot mark a library known", errno);
  return {};
}

bool Probes::is_tracked(uint32_t pid) const {
  uint32_t v = 0;
  return bpf_map__lookup_elem(skel_->maps.gw_tracked, &pid, sizeof(pid), &v, sizeof(v), 0) == 0;
}

std::vector<AttachedSite> Probes::attach_library(const discover::LibraryFile& lib,
                                                 uint16_t lib_id) {
  auto sites = discover::resolve_probe_sites(lib.path, lib.family);
  if (!sites) return {{nullptr, 0, 0, sites.error().line()}};
  if (!multi_) return attach_library_single(lib, lib_id, *sites);

  std::vector<uint64_t> offsets, cookies, ret_offsets, ret_cookies, ses_offsets, ses_cookies;
  std::vector<AttachedSite> out;
  for (const discover::ProbeSite& site : *sites) {
    const uint64_t offset = site.probe_offset(), c = cookie(*site.api, lib_id);
    if (by_session(*site.api)) {
      ses_offsets.push_back(offset);
      ses_cookies.push_back(c);
    } else {
      offsets.push_back(offset);
      cookies.push_back(c);
      if (!entry_only(*site.api)) {
        ret_offsets.push_back(offset);
        ret_cookies.push_back(c);
      }
    }
    out.push_back({site.api, site.probe_offset(), site.skipped_bytes, {}});
  }
  // Each link only where it has functions: every one here may be entry-only, or a driver launch.
  // A return probe placed after endbr64 works too: the stack is untouched by then.
  Result<int> entry = -1, ret = -1, session = -1;
  if (!offsets.empty())
    entry = attach_uprobe_multi(bpf_program__fd(skel_->progs.gw_api_entry_multi), lib.path, offsets,
                                cookies, false);
  if (entry && !ret_offsets.empty())
    ret = attach_uprobe_multi(bpf_program__fd(skel_->progs.gw_api_return_multi), lib.path,
                              ret_offsets, ret_cookies, true);
  if (entry && ret && !ses_offsets.empty())
    session = attach_uprobe_session(bpf_program__fd(skel_->progs.gw_launch_session), lib.path,
                                    ses_offsets, ses_cookies);
  if (!entry || !ret || !session) {
    const std::string why = (!entry ? entry.error() : !ret ? ret.error() : session.error()).line();
    for (Result<int>* r : {&entry, &ret})
      if (*r && **r >= 0) close(**r);
    for (auto& site : out) site.error = why;
    return out;
  }
  for (int fd : {*entry, *ret, *session})
    if (fd >= 0) multi_fds_.push_back(fd);
  return out;
}

std::vector<AttachedSite> Probes::attach_library_single(
    const discover::LibraryFile& lib, uint16_t lib_id,
    const std::vector<discover::ProbeSite>& sites) {
  std::vector<AttachedSite> out;
  for (const discover::ProbeSite& site : sites) {
    AttachedSite r{site.api, site.probe_offset(), site.skipped_bytes, {}};
    const uint64_t site_cookie = cookie(*site.api, lib_id);
    LIBBPF_OPTS(bpf_uprobe_opts, entry_opts, .bpf_cookie = site_cookie, .retprobe = false);
    LIBBPF_OPTS(bpf_uprobe_opts, ret_opts, .bpf_cookie = site_cookie, .retprobe = true);
    // pid -1: every process mapping this file, now and later.
    bpf_link* entry = bpf_program__attach_uprobe_opts(skel_->progs.gw_api_entry, -1,
                                                      lib.path.c_str(), r.offset, &entry_opts);
    if (!entry) {
      r.error = std::string("entry probe: ") + std::strerror(errno);
      out.push_back(std::move(r));
      continue;
    }
    const bool want_return = !entry_only(*site.api);
    bpf_link* ret = nullptr;
    if (want_return)
      ret = bpf_program__attach_uprobe_opts(skel_->progs.gw_api_return, -1, lib.path.c_str(),
                                            r.offset, &ret_opts);
    if (!ret && want_return) {
      r.error = std::string("return probe: ") + std::strerror(errno);
      bpf_link__destroy(entry);
      out.push_back(std::move(r));
      continue;
    }
    links_.push_back(entry);
    if (ret) links_.push_back(ret);
    out.push_back(std::move(r));
  }
  return out;
}

Status Probes::track_pid(uint32_t pid) {
  uint32_t one = 1;
  if (bpf_map__update_elem(skel_->maps.gw_tracked, &pid, sizeof(pid), &one, sizeof(one), BPF_ANY) !=
      0)
    return errno_error("cannot track pid " + std::to_string(pid), errno);
  return {};
}

int Probes::events_ring_fd() const { return bpf_map__fd(skel_->maps.gw_events); }
int Probes::lifecycle_ring_fd() const { return bpf_map__fd(skel_->maps.gw_lifecycle); }

std::array<uint64_t, GW_CNT__MAX> Probes::read_counters() const {
  std::array<uint64_t, GW_CNT__MAX> sums{};
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return sums;
  std::vector<uint64_t> per_cpu(static_cast<size_t>(ncpu));
  for (uint32_t i = 0; i < GW_CNT__MAX; ++i) {
    if (bpf_map__lookup_elem(skel_->maps.gw_counters, &i, sizeof(i), per_cpu.data(),
                             per_cpu.size() * sizeof(uint64_t), 0) != 0)
      continue;
    for (uint64_t v : per_cpu) sums[i] += v;
  }
  return sums;
}

namespace {

// The kernel id of a BPF link fd; 0 when the fd is not a link (a perf event attached by ioctl,
// which its close detaches at once).
uint32_t link_id(int fd) {
  bpf_link_info info{};
  uint32_t len = sizeof(info);
  return fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.id : 0;
}

// Closing a link's last fd does not detach its program at once: the kernel frees the link from a
// work queue, and until then the program still runs (seen: a switch-out program writing a launch
// batch after detach_all had returned, which the stop then read as empty). Waits until every
// link is gone from the kernel's id table (bounded), then a moment for the detach that follows.
void wait_until_released(const std::vector<uint32_t>& ids) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  bool waited = false;
  for (uint32_t id : ids) {
    while (id != 0 && std::chrono::steady_clock::now() < deadline) {
      const int fd = bpf_link_get_fd_by_id(id);
      if (fd < 0) break;  // freed
      close(fd);
      waited = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (waited) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

}  // namespace

void Probes::detach_all() {
  // Each removal waits for an RCU grace period (~0.1 s here), serialised in the kernel: that is
  // why API probes use one uprobe_multi link per library where the kernel has them.
  std::vector<uint32_t> ids;
  for (int fd : multi_fds_) {
    ids.push_back(link_id(fd));
    close(fd);
  }
  multi_fds_.clear();
  for (auto it = links_.rbegin(); it != links_.rend(); ++it) {
    ids.push_back(link_id(bpf_link__fd(*it)));
    bpf_link__destroy(*it);
  }
  links_.clear();
  wait_until_released(ids);
}

std::vector<uint64_t> Probes::user_stack(int32_t id) const {
  constexpr size_t kDepth = 127;  // the map's value size (bpf/api.bpf.h)
  std::vector<uint64_t> ips(kDepth, 0);
  const uint32_t key = static_cast<uint32_t>(id);
  if (id < 0 || bpf_map__lookup_elem(skel_->maps.gw_stacks, &key, sizeof(key), ips.data(),
                                     ips.size() * sizeof(uint64_t), 0) != 0)
    return {};
  ips.resize(static_cast<size_t>(std::find(ips.begin(), ips.end(), 0) - ips.begin()));
  return ips;
}

Status Probes::set_python_layout(uint32_t pid, const gw_py_layout& layout) {
  if (bpf_map__update_elem(skel_->maps.gw_py_procs, &pid, sizeof(pid), &layout, sizeof(layout),
                           BPF_ANY) != 0)
    return errno_error("cannot set the Python layout of pid " + std::to_string(pid), errno);
  return {};
}

bool Probes::python_stack(uint64_t key, gw_py_stack* out) const {
  return bpf_map__lookup_elem(skel_->maps.gw_py_stacks, &key, sizeof(key), out, sizeof(*out), 0) ==
         0;
}

Probes::~Probes() {
  detach_all();
  if (skel_) gpuwhy_bpf__destroy(skel_);
}

}  // namespace gpuwhy::probes
