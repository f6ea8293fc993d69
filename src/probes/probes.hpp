// SPDX-License-Identifier: Apache-2.0
// The only code that touches the generated BPF skeleton: open -> configure read-only data and
// map sizes -> load -> attach, inside one RAII owner. Kernel tracepoint families are attached at
// start; GPU API probes are attached per library file as discovery finds them.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "catalog/api_catalog.hpp"
#include "core/result.hpp"
#include "discover/discover.hpp"
#include "gpuwhy/abi/events.h"

struct gpuwhy_bpf;  // generated skeleton
struct bpf_link;

namespace gpuwhy::probes {

// Kernel-side probe families that can be switched on and off (API probes are per library).
enum class HostFamily : uint8_t {
  Sched,
  Proc,
  Syscalls,
  BlockIo,
  Tcp,
  Reclaim,
  CpuSamples,
  DriverIoctls,  // ioctls on the NVIDIA driver's device files (/dev/nvidia*), timed per thread
};
std::string_view host_family_name(HostFamily f);
// The syscall family is off unless asked for (trace --with syscalls): its tracepoints slow every
// system call on the host, and the uretprobe syscall each traced call returns through, while the
// scheduler already names the syscall a thread slept in. The others are on unless left out.
// The driver's ioctls ride the same tracepoints, at the same cost to the host: off by default too.
constexpr bool host_family_on_by_default(HostFamily f) {
  return f != HostFamily::Syscalls && f != HostFamily::DriverIoctls;
}

// The device files whose ioctls the driver_ioctls family times: "/dev/nvidia" (nvidiactl,
// nvidia0, nvidia-uvm, ...). Tests point it at a stand-in (GPUWHY_TEST_DRIVER_PATH=/tmp/x/nvidia):
// only the file name's prefix and its directory's name are compared in the kernel.
std::string driver_path_prefix();

// CPU samples per second and CPU unless trace --sample-hz says otherwise: a prime, so the timer
// does not beat with periodic work of round periods.
inline constexpr uint32_t kDefaultSampleHz = 199;
// Adaptive launch timing's default (ProbeConfig::launch_untimed_per_s): launches per second and
// thread. Eager PyTorch launches at up to ~100,000 a second from one thread; a training loop
// that launches a few thousand a second keeps every duration.
inline constexpr uint32_t kLaunchUntimedPerS = 10'000;

// The perf event the CPU samples use, opened on CPU 0 and closed again: 1, or -errno (`check`).
int probe_cpu_clock();

struct ProbeConfig {
  uint64_t min_offcpu_ns = 0;           // shorter off-CPU intervals are not emitted
  uint64_t min_syscall_ns = 1'000'000;  // only slow syscalls are emitted
  bool filter_pids = false;             // only processes added with track_pid() emit API calls
  bool capture_stacks = false;
  // User stacks in the CPU samples of threads without a Python stack (gw_config.sample_stacks).
  bool sample_stacks = true;
  uint32_t launch_read_mask = 0;  // gw_config.launch_read_mask (0: every launch reads memory)
  // Launches that read no memory go to the thread's batch (their probes' GW_COOKIE_BATCHED);
  // what threads still hold at stop is read by open_launch_batches().
  bool launch_batch = false;
  uint32_t entry_only_categories = 0;  // bit 1 << Category: no return probe, recorded at entry
  bool uprobe_multi = true;  // false: one uprobe per function even where uprobe_multi exists
  // Driver launches by uprobe session where the kernel has them (Linux 6.13, with uprobe_multi):
  // one nested in an open runtime launch costs one trap and is not recorded. false: entry and
  // return probes, as on older kernels.
  bool uprobe_session = true;
  // Adaptive launch timing: a thread launching at least this many batched launches a second
  // records the ones it does not sample at entry only (bpf/api.bpf.h, gw_launch_untimed); needs
  // sessions and batching. 0: every launch is timed (trace --full).
  uint32_t launch_untimed_per_s = 0;
  uint32_t events_ring_bytes = 32u << 20;  // power of two, >= page size
  uint32_t lifecycle_ring_bytes = 1u << 20;
  uint32_t self_pid = 0;
  bool syscalls = false, block_io = true, tcp = true, reclaim = true;
  // Time every ioctl of a traced thread on the GPU driver's device files (where they exist).
  bool driver_ioctls = false;
  uint32_t sample_hz = 0;  // CPU samples of traced threads per second and CPU (0: none)
  // The dynamic linker's hook stops a process that maps a GPU runtime file not yet known until
  // it is probed (false: user space is told, the process runs on).
  bool hold_new_libs = true;
  bool python_stacks = true;  // Python stacks at the calls of Python processes (bpf/python.bpf.h)
};

// What became of one host family in this trace: on, off (not asked for), or failed (with why).
// Stored in the trace (probe_families) so an offline explain knows which evidence cannot exist.
struct FamilyState {
  HostFamily family;
  std::string state;  // "on" | "off" | "failed"
  std::string detail;
};

struct AttachedSite {
  const ApiInfo* api = nullptr;
  uint64_t offset = 0;
  uint32_t skipped_bytes = 0;
  std::string error;  // empty when both entry and return probes attached
};

class Probes {
 public:
  // Loads the BPF object and attaches the host families. Errors name the cause and what to do
  // (privileges, BTF, kernel support).
  static Result<std::unique_ptr<Probes>> load(const ProbeConfig& cfg);
  ~Probes();
  Probes(const Probes&) = delete;
  Probes& operator=(const Probes&) = delete;

  // Entry + return probes on every catalogue function the library exports. `lib_id` travels in
  // the attach cookie so each event names its library.
  std::vector<AttachedSite> attach_library(const discover::LibraryFile& lib, uint16_t lib_id);

  // Marks a process as traced (its threads' scheduling is recorded; with filter_pids, its API
  // calls too).
  Status track_pid(uint32_t pid);

  // Marks a GPU runtime file as known to the dynamic linker's hook (attached, or looked at and
  // not probeable): mapping it no longer holds a process. The identity /proc/PID/maps shows.
  Status mark_known(uint32_t dev_major, uint32_t dev_minor, uint64_t inode);
  // Whether a process is in the kernel's traced set (given, a child of one, or a caller).
  bool is_tracked(uint32_t pid) const;
  // Whether the dynamic linker's hook is attached (new runtime files are seen as they are mapped,
  // and their first process held); when not, rtld_hook_detail() says why.
  bool has_rtld_hook() const { return rtld_hook_; }
  const std::string& rtld_hook_detail() const { return rtld_detail_; }

  // Removes every probe (the maps stay, so the rings can still be drained).
  void detach_all();

  // After detach_all: the launches the threads of traced processes still hold in their batches
  // (a thread that neither called another API, left the CPU nor exited since), each batch as a
  // GW_EV_LAUNCH_BATCH record, written by a task iterator (gw_open_launches). An error means those
  // launches are lost; the caller says so.
  Result<std::vector<std::vector<uint8_t>>> open_launch_batches() const;
  // The per-thread task-storage map those batches live in (value: thread_calls_value_size() bytes
  // starting with its gw_launch_batch), for tests that place a batch where a thread that kept its
  // CPU would have left it.
  int thread_calls_map_fd() const;
  // The processes the kernel stopped for a new runtime file and user space has not continued
  // (gw_held_pids: u32 tgid -> u64 ns); ProcessHolds and its guardian keep it.
  int held_pids_map_fd() const;
  size_t thread_calls_value_size() const;

  // The addresses of captured user stack `id`, innermost first; empty when the map has none.
  std::vector<uint64_t> user_stack(int32_t id) const;

  // Where the interpreter of Python process `pid` keeps its threads and frames (discovery).
  Status set_python_layout(uint32_t pid, const gw_py_layout& layout);
  // The Python stack with key `key` (gw_api_call.py_stack); false when the map no longer has it.
  bool python_stack(uint64_t key, gw_py_stack* out) const;

  int events_ring_fd() const;
  int lifecycle_ring_fd() const;

  // Sums of the per-CPU loss/health counters (index: enum gw_counter).
  std::array<uint64_t, GW_CNT__MAX> read_counters() const;

  // Host families that could not be attached, with the reason (reported, not fatal).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Every host family, in HostFamily order.
  const std::vector<FamilyState>& family_states() const { return families_; }
  size_t link_count() const { return links_.size() + multi_fds_.size(); }
  bool uses_uprobe_multi() const { return multi_; }
  // Whether driver launches are probed by a session (ProbeConfig::uprobe_session, and the kernel).
  bool uses_uprobe_session() const { return session_; }
  // Launches per second per thread above which unsampled launches are untimed (0: off).
  uint32_t launch_untimed_per_s() const { return untimed_per_s_; }

 private:
  Probes() = default;
  Status attach_host_families(const ProbeConfig& cfg);
  // A perf_event timer on every CPU running gw_cpu_sample; a failure turns the family off.
  void attach_cpu_sampling(uint32_t hz);
  void attach_dlopen_hint();
  // The uprobe on the host dynamic linker's _dl_debug_state; false (rtld_detail_ says why) when
  // it cannot be had.
  bool attach_rtld_hook();
  void note_family(HostFamily f, std::string state, std::string detail);
  std::vector<AttachedSite> attach_library_single(const discover::LibraryFile& lib, uint16_t lib_id,
                                                  const std::vector<discover::ProbeSite>& sites);
  gpuwhy_bpf* skel_ = nullptr;
  bool multi_ = false;    // uprobe_multi links (Linux >= 6.6)
  bool session_ = false;  // driver launches by a uprobe session link (Linux >= 6.13)
  // Adaptive launch timing in effect (ProbeConfig::launch_untimed_per_s, with sessions).
  uint32_t untimed_per_s_ = 0;
  bool rtld_hook_ = false;  // gw_rtld_debug_state loaded and attached
  std::string rtld_detail_;
  uint32_t entry_only_ = 0;     // ProbeConfig::entry_only_categories
  bool launch_batch_ = false;   // ProbeConfig::launch_batch
  bool driver_ioctls_ = false;  // the driver's files exist and their ioctls are timed
  bool entry_only(const ApiInfo& api) const {
    return (entry_only_ & category_bit(api.category)) != 0;
  }
  uint64_t cookie(const ApiInfo& api, uint16_t lib_id) const {
    return make_cookie(api, lib_id, entry_only(api), launch_batch_);
  }
  // A driver library's launch with a return probe, where sessions are on, and with adaptive
  // launch timing every library's: the session program's.
  bool by_session(const ApiInfo& api) const {
    return session_ && api.category == Category::Launch && !entry_only(api) &&
           (api.family == Family::CudaDriver || untimed_per_s_ != 0);
  }
  // Per library: an entry link, a return link unless all entry-only, a session link for the
  // driver's launches.
  std::vector<int> multi_fds_;
  std::vector<bpf_link*> links_;  // a sampling timer's link owns its perf_event fd
  std::vector<std::string> warnings_;
  std::vector<FamilyState> families_;
};

// Can this process load BPF at all? Used by check and by trace before doing any work.
Status preflight();

}  // namespace gpuwhy::probes
