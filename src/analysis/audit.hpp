// SPDX-License-Identifier: Apache-2.0
// `gpuwhy audit`: what each GPU process spends its time on, what device memory it holds, and
// what that costs. Drawn from the same time budget as explain (budget.hpp): the regime is the
// budget's buckets grouped by what would have to change, and the fixes are explain's chains,
// ranked by the time they would return. Memory comes from the allocation and free calls, and
// from which allocations any copy or memset touched.
//
// Host-side only: the trace holds no device timeline, so the GPU's busy time is bounded, not
// measured (docs/audit.md says how, and how far to trust each figure).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/explain.hpp"
#include "analysis/gpu_truth.hpp"
#include "analysis/pinning.hpp"
#include "analysis/rows.hpp"

namespace gpuwhy::analysis {

struct AuditOptions {
  double price_per_gpu_hour = 0;  // 0: no cost figures
  Thresholds thresholds;
};

enum class Regime { HostBound, TransferBound, SyncBound, PeerBound, GpuBound };
std::string_view regime_name(Regime r);  // "host_bound", ...

// Where a process's GPU threads spent their spans, grouped by what would move it.
struct RegimeTimes {
  // The threads' spans less their delegated waits, summed: the time the process's dispatch was
  // carried by some thread. A thread that waits while a sibling dispatches (PyTorch's main thread
  // during the backward pass on its autograd thread) is not host time, and counting both spans
  // would make a process of two alternating threads look twice as long as its window.
  int64_t span_ns = 0;
  int64_t delegated_ns = 0;  // waits while another GPU thread of the process dispatched
  int64_t gpu_ns = 0;        // blocked waiting for its own GPU work (syncs, synchronous copies)
  int64_t transfer_ns = 0;   // in host<->device copies
  int64_t peer_ns = 0;       // waiting for other ranks (collectives, and syncs behind them)
  int64_t sync_ns = 0;       // waits explain blames on syncs the loop did not need
  int64_t refill_ns = 0;     // host work after a sync drained the queue (GPU idle meanwhile)
  int64_t host_ns = 0;       // everything else on the host: launches, host work, stalls
};

// The GPU's busy time, bounded from the host side: at least the time its threads waited in
// drains (syncs, synchronous copies, frees), at most the time they had work queued; the
// estimate between them reads each drain (audit.cpp, thread_busy).
struct GpuBusy {
  int64_t lower_ns = 0, upper_ns = 0, estimate_ns = 0;
  // The episodes whose drain waited: the GPU still had work when the host asked, so it was fed
  // through them. The regime weighs host time against this (classify in audit.cpp); with the
  // device's own records (gpu_truth) the measured busy time takes its place.
  int64_t fed_ns = 0;
  bool fed_measured = false;  // fed_ns is the device's own busy time (trace --gpu-activity)
  int64_t error_ns() const { return std::max(estimate_ns - lower_ns, upper_ns - estimate_ns); }
};

// One allocation site: the Python line or native frame of the allocation calls, else the API.
struct MemorySite {
  std::string site;
  std::string pattern;  // "held" | "per_step" | "growing" | "freed" | "mixed" | "reserve"
  uint64_t allocs = 0, frees = 0;
  uint64_t bytes_allocated = 0;
  // In allocations kept to the end (never freed, or freed only in the window's last tenth, as
  // a program's clean-up at exit does).
  uint64_t kept_bytes = 0;
  uint64_t untouched_bytes = 0;  // kept allocations no copy or memset touched
  uint64_t untouched_allocs = 0;
};

struct MemoryPoint {
  int64_t at_ns = 0;  // relative to the trace start
  uint64_t live_bytes = 0;
};

// One step of a caching allocator's reserve: segments reserved less than kReserveStepGapNs apart
// (growth), or freed so (a sweep, e.g. torch.cuda.empty_cache()).
struct ReserveStep {
  int64_t at_ns = 0;  // relative to the trace start: the step's first call
  uint64_t segments = 0, bytes = 0;
  uint64_t reserved_after = 0;  // the reserve's bytes after the step
};

// What a caching allocator (PyTorch's CUDACachingAllocator, CuPy's MemoryPool, XLA's BFC
// allocator, ...) reserved: segments allocated from the allocator's own frames (audit_memory.cpp,
// names_allocator; docs/audit.md). Its tensors are carved out with no runtime call, so the
// segments are its reserve, not buffers of the program's own: never a leak or an unused
// candidate on that account.
struct AllocatorReserve {
  std::string site;                            // the allocator frame that reserved the most
  uint64_t segments = 0, bytes = 0;            // live at the window's end
  uint64_t peak_segments = 0, peak_bytes = 0;  // the most it held at once
  int64_t peak_at_ns = 0;
  uint64_t reserved_segments = 0, released_segments = 0;  // allocations and frees, all told
  std::vector<ReserveStep> growth, sweeps;
  // Grew at kStillGrowingSteps or more steps in the window's last half with no sweep after the
  // first of them: a reserve that does not settle (tensors kept alive behind it, or
  // fragmentation), worth a look.
  bool still_growing = false;
};

struct ProcessMemory {
  uint64_t live_start = 0, live_end = 0, peak = 0;
  int64_t peak_at_ns = 0;             // relative to the trace start
  uint64_t pinned_host_peak = 0;      // page-locked host memory (not on the device)
  std::vector<MemoryPoint> timeline;  // at most ~100 points: the peak of each stretch
  std::vector<MemorySite> sites;      // most live bytes at the end, then most allocated
  uint64_t allocations = 0;
  AllocatorReserve reserve;  // reserved_segments == 0: no caching allocator seen
};

// A frame (native call site, or a Python file and function) of a caching allocator: holds one of
// the names docs/audit.md lists, case-insensitively.
bool names_allocator(std::string_view frame);

// A fix from explain, with the time it would return and what that time cost.
struct Lever {
  std::string kind, title, fix;
  int64_t lost_ns = 0;
  double cost = 0;
  // transfer_bound: what pinning the pageable host buffers returns (explain's estimate_pinning,
  // read from the chain), and what async copies of the already pinned synchronous ones would.
  // lost_ns is their sum, capped at the copies' time.
  std::optional<PinningEstimate> pinning;
  int64_t async_returns_ns = 0;
};

// What the audit says of a process, and of each of its GPUs: the same figures over a set of
// GPU threads (the process's, or those whose calls went to one device).
struct AuditFigures {
  int64_t first_ns = 0, last_ns = 0;  // relative to the trace start: the threads' spans
  RegimeTimes times;
  GpuBusy busy;
  // The GPU time the busy time is a share of: the span, or for a process on several devices
  // the sum of its devices' spans.
  int64_t gpu_span_ns = 0;
  Regime regime = Regime::HostBound;
  std::string evidence;  // why this regime, in numbers
  std::string move;      // what would move it
  // How the regime reads beside explain's causes for the same threads: its top cause, or why
  // the two differ (a host-bound process whose host time no single cause explains).
  std::string agreement;
  std::vector<Lever> levers;
  ProcessMemory memory;
  double cost = 0, lost_cost = 0;  // with a price: its span, and its chains' lost time
};

// One GPU of a process (the device ordinal its threads selected with cudaSetDevice or
// hipSetDevice; 0 for threads that never selected one). A thread that moved between devices
// counts, for its time budget, on the device it made most of its calls' time on; its busy
// episodes, collectives and memory go to the device each call was made on.
struct DeviceAudit : AuditFigures {
  int device = 0;
  std::vector<uint32_t> tids;  // the GPU threads counted on it
};

// The process's ioctls on the GPU driver's device files (/dev/nvidia*: the driver_ioctls family):
// the driver boundary under the runtime. Time inside its probed runtime calls is what those calls
// spent in the driver; time outside is work that reached the driver without a probed call (a
// copy or sync through a function the catalogue does not list, or the runtime's own threads).
struct DriverIoctls {
  uint64_t count = 0;
  int64_t ns = 0;
  int64_t inside_calls_ns = 0;  // overlapping the same thread's probed GPU API calls
  uint64_t threads = 0;         // threads that made them
};

struct ProcessAudit : AuditFigures {
  Task process;
  DriverIoctls driver;
  // Per device, by ordinal. The process's own figures cover all of them: its busy time is
  // their sum, its memory their union.
  std::vector<DeviceAudit> devices;
  // How many threads moved between devices in the window (their budgets count on one).
  size_t moved_threads = 0;
  // The device's own busy time and top kernels (trace --gpu-activity; gpu_truth.hpp).
  std::optional<ProcessGpuTruth> gpu_truth;
};

struct AuditReport {
  TraceInfo trace;
  std::vector<Caveat> caveats;
  std::vector<ProcessAudit> processes;  // longest span first
  double price_per_gpu_hour = 0;
  double window_cost = 0;  // every GPU of every process over the window
  Report explain;          // the analysis the audit drew on (explain --html shows both)
};

// Runs explain's analysis (analyze) and the memory pass over the same rows.
AuditReport audit(TraceRows rows, const AuditOptions& opt = {});

// Decides `p`'s regime (and its devices') again from its times and busy figures, and how it reads
// beside explain's causes in `r`: after gpu_truth measured the busy time.
void reclassify(const AuditReport& r, ProcessAudit& p);

// The memory pass alone (for tests): per pid.
std::vector<std::pair<uint32_t, ProcessMemory>> audit_memory(const TraceRows& rows);

}  // namespace gpuwhy::analysis
