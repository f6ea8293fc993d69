// SPDX-License-Identifier: Apache-2.0
// `gpuwhy check` as data: parsing helpers, the verdict on made-up hosts, and the real report on
// this machine.
#include <bpf/libbpf.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>

#include <algorithm>
#include <string>

#include "discover/host_check.hpp"

namespace gpuwhy::discover {
namespace {

constexpr const char* kCudart = "/usr/local/cuda/lib/libcudart.so.13";

// A host where everything needed is present and allowed.
HostFacts good_host() {
  HostFacts f;
  f.kernel_release = "6.8.0-45-generic";
  f.machine = "x86_64";
  f.btf = true;
  f.euid = 0;
  f.cap_eff = 0x1ffffffffffULL;
  f.ringbuf = 1;
  f.uprobe_pmu_type = 8;
  f.memlock_cur = f.memlock_max = 8ULL << 20;
  LibraryCheck lib;
  lib.file.path = "/usr/local/cuda/lib/libcudart.so.13";
  lib.file.family = Family::Cudart;
  lib.exported = 30;
  lib.catalogued = 30;
  f.libraries.push_back(lib);
  return f;
}

std::vector<Finding> problems(const HostFacts& f) {
  auto all = evaluate(f);
  all.erase(std::remove_if(all.begin(), all.end(),
                           [](const Finding& x) { return x.severity != Severity::Problem; }),
            all.end());
  return all;
}

bool has(const std::vector<Finding>& fs, Severity s, const std::string& topic,
         const std::string& text) {
  return std::any_of(fs.begin(), fs.end(), [&](const Finding& x) {
    return x.severity == s && x.topic == topic && x.message.find(text) != std::string::npos;
  });
}

TEST(CheckParse, CapEff) {
  const char* status =
      "Name:\tbash\nUmask:\t0022\nCapInh:\t0000000000000000\nCapPrm:\t000001fffeffffff\n"
      "CapEff:\t000001fffeffffff\nCapBnd:\t000001fffeffffff\n";
  ASSERT_TRUE(parse_cap_eff(status));
  EXPECT_EQ(*parse_cap_eff(status), 0x1fffeffffffULL);
  EXPECT_EQ(*parse_cap_eff("CapEff:\t0000000000000000\n"), 0u);
  EXPECT_FALSE(parse_cap_eff("Name:\tx\n"));
  EXPECT_FALSE(parse_cap_eff("CapEff:\tzz\n"));
  EXPECT_FALSE(parse_cap_eff("XCapEff:\t1\n"));
}

TEST(CheckParse, KernelRelease) {
  auto k = parse_kernel_release("6.18.44-fc-v509");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->major, 6);
  EXPECT_EQ(k->minor, 18);
  EXPECT_EQ(k->patch, 44);
  EXPECT_TRUE(k->at_least(5, 11));
  ASSERT_TRUE(parse_kernel_release("5.4"));
  EXPECT_FALSE(parse_kernel_release("5.4")->at_least(5, 8));
  EXPECT_FALSE(parse_kernel_release(""));
  EXPECT_FALSE(parse_kernel_release("6"));
  EXPECT_FALSE(parse_kernel_release("linux"));
}

TEST(CheckVerdict, GoodHostHasNoProblems) {
  const HostFacts f = good_host();
  EXPECT_TRUE(f.privileged());
  EXPECT_TRUE(problems(f).empty());
  const auto all = evaluate(f);
  // tracefs is never required, only mentioned.
  EXPECT_TRUE(has(all, Severity::Info, "tracefs", "not needed"));
  EXPECT_TRUE(has(all, Severity::Info, "memlock", "does not matter"));
}

TEST(CheckVerdict, MissingBtf) {
  HostFacts f = good_host();
  f.btf = false;
  const auto p = problems(f);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].message,
            "kernel has no BTF (/sys/kernel/btf/vmlinux missing): use a kernel built with "
            "CONFIG_DEBUG_INFO_BTF=y");
}

TEST(CheckVerdict, UnprivilegedUser) {
  HostFacts f = good_host();
  f.euid = 1000;
  f.cap_eff = 0;
  f.ringbuf = kNotProbed;
  const auto p = problems(f);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].message, "not running as root and missing CAP_BPF+CAP_PERFMON: run with sudo");
}

TEST(CheckVerdict, CapabilitiesWithoutRoot) {
  HostFacts f = good_host();
  f.euid = 1000;
  f.cap_eff = (1ULL << kCapBpf) | (1ULL << kCapPerfmon);
  EXPECT_TRUE(problems(f).empty());
  // It can trace, but cannot see other users' processes.
  EXPECT_TRUE(has(evaluate(f), Severity::Warning, "privileges", "CAP_SYS_PTRACE"));
  f.cap_eff = 1ULL << kCapBpf;  // CAP_PERFMON alone missing
  EXPECT_TRUE(has(problems(f), Severity::Problem, "privileges", "run with sudo"));
}

TEST(CheckVerdict, RestrictedRootInAContainer) {
  HostFacts f = good_host();
  f.cap_eff = 0xa80425fbULL;  // Docker's default set: no CAP_SYS_ADMIN, CAP_BPF or CAP_PERFMON
  EXPECT_TRUE(has(problems(f), Severity::Problem, "privileges", "--privileged"));
}

TEST(CheckVerdict, OldKernel) {
  HostFacts f = good_host();
  f.kernel_release = "5.4.0-150-generic";
  f.ringbuf = 0;
  EXPECT_TRUE(has(problems(f), Severity::Problem, "kernel", "older than 5.8"));
  EXPECT_TRUE(has(problems(f), Severity::Problem, "ringbuf", "ring buffer"));
  f.kernel_release = "5.10.0";
  f.ringbuf = 1;
  f.euid = 1000;
  f.cap_eff = (1ULL << kCapBpf) | (1ULL << kCapPerfmon);
  // Before 5.11 BPF memory counts against RLIMIT_MEMLOCK, which this user cannot raise.
  EXPECT_TRUE(has(evaluate(f), Severity::Warning, "memlock", "CAP_SYS_RESOURCE"));
  EXPECT_TRUE(problems(f).empty());
}

// A kernel that lacks a helper trace's programs call cannot load them, whatever its version says
// (distribution kernels backport BPF): the probe's verdict is a problem of its own.
TEST(CheckVerdict, MissingBpfHelpers) {
  HostFacts f = good_host();
  f.helpers_probed = true;
  EXPECT_TRUE(problems(f).empty());
  f.missing_helpers = {"bpf_loop (Linux 5.17)"};
  const auto p = problems(f);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].topic, "helpers");
  EXPECT_NE(p[0].message.find("bpf_loop (Linux 5.17)"), std::string::npos) << p[0].message;
}

TEST(CheckVerdict, UprobePmuMissing) {
  HostFacts f = good_host();
  f.uprobe_pmu_type = -1;
  EXPECT_TRUE(has(problems(f), Severity::Problem, "uprobes", "CONFIG_UPROBE_EVENTS=y"));
  // libbpf falls back to tracefs' uprobe_events when it can.
  f.tracefs_path = "/sys/kernel/tracing";
  f.tracefs_uprobe_events = true;
  EXPECT_TRUE(problems(f).empty());
  EXPECT_TRUE(has(evaluate(f), Severity::Warning, "uprobes", "uprobe_events"));
}

TEST(CheckVerdict, NoLibrariesIsOnlyAWarning) {
  HostFacts f = good_host();
  f.libraries.clear();
  EXPECT_TRUE(problems(f).empty());
  EXPECT_TRUE(has(evaluate(f), Severity::Warning, "libraries", "wait for GPU processes"));
}

// Without uprobe_multi links tracing works one uprobe per function; only stopping is slower.
TEST(CheckVerdict, UprobeMultiIsReportedAndItsAbsenceIsAWarningAboutStopping) {
  HostFacts f = good_host();
  EXPECT_FALSE(has(evaluate(f), Severity::Info, "uprobe_multi", ""));
  f.uprobe_multi = 1;
  EXPECT_TRUE(has(evaluate(f), Severity::Info, "uprobe_multi", "one link"));
  f.uprobe_multi = 0;
  EXPECT_TRUE(problems(f).empty());
  EXPECT_TRUE(has(evaluate(f), Severity::Warning, "uprobe_multi", "stopping"));
}

// Uprobe sessions (6.13) make a driver launch nested in a runtime launch one trap and no row;
// reported over uprobe_multi links only (a session link is one), never a problem.
TEST(CheckVerdict, UprobeSessionsAreReportedOverUprobeMulti) {
  HostFacts f = good_host();
  f.uprobe_multi = 1;
  EXPECT_FALSE(has(evaluate(f), Severity::Info, "uprobe_session", ""));
  f.uprobe_session = 1;
  EXPECT_TRUE(has(evaluate(f), Severity::Info, "uprobe_session", "one trap"));
  f.uprobe_session = 0;
  EXPECT_TRUE(problems(f).empty());
  EXPECT_TRUE(has(evaluate(f), Severity::Info, "uprobe_session", "recorded like any call"));
  f.uprobe_multi = 0;
  EXPECT_FALSE(has(evaluate(f), Severity::Info, "uprobe_session", ""));
}

// CPU samples are an option of tracing, not a condition: a refused cpu-clock event warns.
TEST(CheckVerdict, CpuSamplingIsReportedAndItsAbsenceIsAWarning) {
  HostFacts f = good_host();
  f.cpu_clock = 1;
  EXPECT_TRUE(has(evaluate(f), Severity::Info, "cpu_samples", "--sample-hz"));
  f.cpu_clock = -EACCES;
  EXPECT_TRUE(problems(f).empty());
  EXPECT_TRUE(has(evaluate(f), Severity::Warning, "cpu_samples", "Permission denied"));
  EXPECT_TRUE(has(evaluate(f), Severity::Warning, "cpu_samples", "--with syscalls"));
}

TEST(CheckVerdict, DlopenHintIsReportedAndItsAbsenceIsAWarning) {
  HostFacts f = good_host();
  f.dlopen_library = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  EXPECT_TRUE(has(evaluate(f), Severity::Info, "dlopen", "libc.so.6"));
  f.dlopen_library.clear();
  f.dlopen_error = "no C library exporting dlopen found";
  EXPECT_TRUE(problems(f).empty());
  EXPECT_TRUE(has(evaluate(f), Severity::Warning, "dlopen", "trace --with syscalls"));
}

// The real host: Debian's glibc exports dlopen from libc.so.6 (2.34 and later).
TEST(CheckFacts, ThisHostsLibcExportsDlopen) {
  auto libc = host_dlopen_library();
  ASSERT_TRUE(libc.ok()) << libc.error().line();
  EXPECT_NE(libc->find("libc.so.6"), std::string::npos) << *libc;
  auto offset = function_probe_offset(*libc, "dlopen");
  ASSERT_TRUE(offset.ok()) << offset.error().line();
  EXPECT_GT(*offset, 0u);
}

TEST(CheckVerdict, SkippedProcessLibrariesAreWarnings) {
  HostFacts f = good_host();
  ProcessCheck p;
  p.info.pid = 77;
  p.info.comm = "python";
  p.skipped.push_back({"/opt/x/libcudart.so.12", "file was deleted"});
  f.processes.push_back(p);
  EXPECT_TRUE(problems(f).empty());
  EXPECT_TRUE(has(evaluate(f), Severity::Warning, "processes", "pid 77 (python)"));
}

TEST(CheckOnThisMachine, RootWithBtfCanTrace) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (this checks the real host)";
  if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0) GTEST_SKIP() << "kernel has no BTF";

  // A process using libcudart, so that the process scan has something to find.
  const bool have_cudart = ::access(kCudart, R_OK) == 0;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = -1;
  if (have_cudart) {
    child = ::fork();
    if (child == 0) {
      ::close(fds[0]);
      const char ok = ::dlopen(kCudart, RTLD_NOW) != nullptr;
      (void)!::write(fds[1], &ok, 1);
      for (;;) ::pause();
    }
    char ok = 0;
    ASSERT_EQ(::read(fds[0], &ok, 1), 1);
    ASSERT_EQ(ok, 1);
  }
  ::close(fds[0]);
  ::close(fds[1]);

  CheckOptions opts;
  opts.probe_ringbuf = [] { return libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, nullptr); };
  const CheckReport r = run_check(opts);
  if (child > 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
  }

  for (const auto& x : r.findings) {
    EXPECT_NE(x.severity, Severity::Problem) << x.topic << ": " << x.message;
  }
  EXPECT_TRUE(r.can_trace);
  EXPECT_TRUE(r.facts.btf);
  EXPECT_TRUE(r.facts.privileged());
  EXPECT_EQ(r.facts.ringbuf, 1);
  EXPECT_GE(r.facts.uprobe_pmu_type, 0);
  EXPECT_FALSE(r.facts.kernel_release.empty());
  EXPECT_GT(r.facts.processes_scanned, 0u);
  if (!have_cudart) return;

  // The host's own file (another test may map a copy of libcudart.so.13 meanwhile: the host
  // traces everything, and that copy is a library of its own).
  struct stat want {};
  ASSERT_EQ(::stat(kCudart, &want), 0);
  const LibraryCheck* cudart = nullptr;
  for (const auto& c : r.facts.libraries) {
    if (c.file.soname == "libcudart.so.13" && c.file.inode == want.st_ino) cudart = &c;
  }
  ASSERT_NE(cudart, nullptr);
  EXPECT_TRUE(cudart->on_host);
  EXPECT_TRUE(cudart->error.empty()) << cudart->error;
  EXPECT_GT(cudart->exported, 0u);
  EXPECT_LE(cudart->exported, cudart->catalogued);
  // What it lacks is named: exported and missing make up the family's catalogue. CUDA 13's
  // runtime exports the polling and event-record entry points (nm -D).
  EXPECT_EQ(cudart->exported + cudart->missing.size(), cudart->catalogued);
  for (const char* fn : {"cudaEventQuery", "cudaStreamQuery", "cudaStreamQuery_ptsz",
                         "cudaEventRecord", "cudaEventRecordWithFlags_ptsz"})
    EXPECT_EQ(std::find(cudart->missing.begin(), cudart->missing.end(), fn), cudart->missing.end())
        << fn;
  EXPECT_EQ(cudart->shifted, 0u);  // NVIDIA's entries start with push %rbp
  EXPECT_NE(std::find(cudart->pids.begin(), cudart->pids.end(), static_cast<uint32_t>(child)),
            cudart->pids.end());
  const auto proc = std::find_if(
      r.facts.processes.begin(), r.facts.processes.end(),
      [&](const ProcessCheck& p) { return p.info.pid == static_cast<uint32_t>(child); });
  ASSERT_NE(proc, r.facts.processes.end());
  EXPECT_EQ(proc->libraries.size(), 1u);
}

}  // namespace
}  // namespace gpuwhy::discover
