// SPDX-License-Identifier: Apache-2.0
// The rows explain works on: compact copies of the trace file's tables for one time window, loaded
// once (loader.hpp) and then only read. Keeping them as plain structs in vectors sorted by
// (tid, ts) is what lets every per-call join be a merge sweep instead of a query per call, and
// what lets the detectors be unit-tested on hand-built rows without SQLite or a kernel.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "analysis/window.hpp"
#include "catalog/api_catalog.hpp"
#include "model/launch_timing.hpp"

namespace gpuwhy::analysis {

// The allocator of the row vectors a scan fills: resize() leaves the new rows unwritten. The
// loader sizes a batch's vectors first and then writes every row (grow_parallel, then
// scan_chunks' parts); value-initialising them first wrote hundreds of MB per batch for nothing.
// Only for rows every field of which is written before it is read (emplace_back() of nothing
// and resize() both leave a row unwritten: use push_back of a built row).
template <class T>
struct RowAllocator : std::allocator<T> {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
  template <class U>
  struct rebind {
    using other = RowAllocator<U>;
  };
  RowAllocator() = default;
  template <class U>
  RowAllocator(const RowAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  template <class U>
  void construct(U*) noexcept {}  // resize(): written by the caller next
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// An apis.id whose category the file does not name.
inline constexpr Category kUnknownCategory = static_cast<Category>(0);

// What only some calls carry: sizes, the memory they touch, a failure. Kept aside (TraceRows::
// call_ext) so that the ten million launches of a long trace do not each carry 28 empty bytes.
// What a poll (cudaEventQuery, cudaStreamQuery, their driver and HIP twins) returns while the
// work it asks about is not done: cudaErrorNotReady, CUDA_ERROR_NOT_READY and hipErrorNotReady
// are all 600. Progress, not a failure.
inline constexpr int32_t kNotReadyRet = 600;

struct CallExt {
  uint64_t bytes = 0;  // copy/memset/alloc size, collective payload; 0 when NULL
  // Kept for memory operations only (copy/memset dst, allocated/freed pointer): a launch's kernel
  // or a sync's stream is read by nothing, so it is not kept.
  // Communicator set-up (ncclCommInitRank*): the rank in addr, the communicator size in bytes.
  // Device selection (cudaSetDevice, hipSetDevice): the ordinal in addr.
  uint64_t addr = 0;
  uint64_t addr2 = 0;       // copy src
  int32_t ret = 0;          // 0 = success
  int32_t stack_id = -1;    // api_calls.stack_id (trace --stacks); -1: none
  int32_t pystack_id = -1;  // api_calls.py_stack (Python processes); -1: none
  bool empty() const {
    return bytes == 0 && addr == 0 && addr2 == 0 && ret == 0 && stack_id < 0 && pystack_id < 0;
  }
};

// CallRow::ext of a call without a CallExt: all of its fields are 0.
inline constexpr uint32_t kNoExt = UINT32_MAX;

// One GPU API call (api_calls). 32 bytes, not the 56 every column would take: ten million of
// them fit in memory, and each of the many passes over them moves 40% fewer bytes.
struct CallRow {
  int64_t ts = 0;   // entry, wall ns
  int64_t dur = 0;  // entry -> return
  uint32_t pid = 0, tid = 0;
  uint32_t ext = kNoExt;  // index into TraceRows::call_ext (TraceRows::ext reads it)
  uint16_t api = 0;       // apis.id
  Category cat = kUnknownCategory;
  int8_t dir = -1;  // CopyDir of a copy (after inference), -1 when unknown / not a copy
  int64_t end() const { return ts + dur; }
};
static_assert(sizeof(CallRow) == 32, "CallRow is sized for ten million rows in memory");
// CallRow::dir of a launch whose duration was estimated, not measured (launch_timing.hpp): `dir`
// means nothing else for a launch, and the row has no room for a flag.
inline constexpr int8_t kDurationImputed = -2;
using CallRows = std::vector<CallRow, RowAllocator<CallRow>>;

// A call's derived fields, as prepare_rows fills them: its category (its API's, where the file
// left it out), and a copy's direction where its API's name fixes one (-1 for any other call).
inline void fill_call(CallRow& c, Category api_cat, int8_t fixed_dir) {
  if (c.cat == kUnknownCategory) c.cat = api_cat;
  if (c.cat != Category::Copy) {
    c.dir = -1;
  } else if (c.dir < 0 && fixed_dir >= 0) {
    c.dir = fixed_dir;
  }
}

// The CallExt of a call of category `cat`: its addresses are kept for memory operations only.
CallExt make_call_ext(Category cat, uint64_t bytes, uint64_t addr, uint64_t addr2, int32_t ret);

// One off-CPU interval (offcpu). `other_*` is who took the CPU for a preemption and who woke the
// thread for a blocked interval: the two questions explain asks of each kind.
struct OffCpuRow {
  int64_t ts = 0;   // switched out
  int64_t dur = 0;  // until switched back in
  int64_t runq =
      0;  // the runnable tail: waiting for a CPU after the wake-up (all of it if preempted)
  uint32_t pid = 0, tid = 0;
  uint32_t other_pid = 0, other_tid = 0;
  uint32_t other_comm = 0;  // strings.id, 0 when unknown
  bool preempted = false;
  uint16_t cpu = 0;  // where it got the CPU back (recorded at switch-in; usually where it left)
  // Who had the CPU when this thread got it back: the task that kept it waiting in the run
  // queue (pid 0: the idle task, nobody). Recorded at switch-in since ABI 2; in older traces
  // (holder_recorded false) a guess: the task that took the CPU when this one left.
  uint32_t holder_pid = 0, holder_tid = 0, holder_comm = 0;
  bool holder_recorded = false;
  // Held off the CPU by its cgroup's CPU quota (CFS bandwidth throttling, ABI 9): runnable, but
  // no task of another cgroup is to blame (TraceRows::cpu_limits says which limit).
  bool throttled = false;
  // Asleep in a futex inside its Python interpreter's state (_PyRuntime: offcpu.arg0 against
  // python_processes.runtime_addr/size): waiting for the GIL (the loader decides, once).
  bool gil = false;
  int16_t syscall = -1;  // the system call it left the CPU in; -1: none, or not recorded
  // The CPU whose run queue its runnable part began in (where it was preempted, or where its
  // wake-up queued it) and how often it moved queue meanwhile (TraceRows::wait_migrations);
  // -1: not recorded (a trace before ABI 5, or a wait the kernel side did not count). `cpu` is
  // where it got the CPU back.
  int16_t wait_cpu = -1;
  uint16_t migrations = 0;
  int64_t end() const { return ts + dur; }
};
using OffCpuRows = std::vector<OffCpuRow, RowAllocator<OffCpuRow>>;

// One run of a task on a CPU, from the CPU's previous switch to the switch away from it, during
// which some traced thread waited in that CPU's run queue (cpu_runs, ABI 5). A CPU's runs never
// overlap; runs nobody waited for are not recorded.
struct CpuRunRow {
  int64_t ts = 0, dur = 0;
  uint32_t pid = 0, tid = 0;  // the task that ran; 0: the idle task
  uint32_t comm = 0;          // strings.id of its name then; 0: unknown
  uint16_t cpu = 0;
  int64_t end() const { return ts + dur; }
};

// A traced thread waiting for a CPU moved from one CPU's run queue to another's at `ts`
// (wait_migrations, ABI 5).
struct WaitMigrationRow {
  int64_t ts = 0;
  uint32_t pid = 0, tid = 0;
  uint16_t from_cpu = 0, to_cpu = 0;
};

struct SyscallRow {
  int64_t ts = 0, dur = 0;
  uint32_t pid = 0, tid = 0;
  uint32_t nr = 0;
  int64_t ret = 0;
  int64_t request = -1;  // an ioctl on the GPU driver's files (syscalls.request); -1: another
  int64_t end() const { return ts + dur; }
};

struct BlockIoRow {
  int64_t ts = 0, dur = 0;
  uint32_t pid = 0, tid = 0;
  uint64_t bytes = 0;
  uint32_t op = 0;
  uint32_t dev = 0;
  int64_t end() const { return ts + dur; }
};

// A CPU sample that found a traced thread running: it stands for `dur` of CPU time.
struct CpuSampleRow {
  int64_t ts = 0, dur = 0;
  uint32_t pid = 0, tid = 0;
  int16_t syscall = -1;     // the syscall it was in; -1: none
  bool kernel = false;      // kernel code (a syscall, a fault, an interrupt)
  int32_t stack_id = -1;    // the user stack (--stacks); -1: none
  int32_t pystack_id = -1;  // cpu_samples.py_stack (Python processes, ABI 6); -1: none
  // The thread's page faults so far, minor and major (ABI 9); -1: not recorded.
  int64_t min_flt = -1, maj_flt = -1;
  int64_t end() const { return ts + dur; }
};

struct ReclaimRow {
  int64_t ts = 0, dur = 0;
  uint32_t pid = 0, tid = 0;
  uint64_t nr_reclaimed = 0;  // pages
  int64_t end() const { return ts + dur; }
};

struct TcpRetransRow {
  int64_t ts = 0;
  uint32_t pid = 0, tid = 0;  // 0 when the retransmit ran in softirq context
  std::string saddr, daddr;
  uint32_t sport = 0, dport = 0;
};

// What explain needs to know about one apis row.
struct ApiMeta {
  std::string name;
  Category cat = kUnknownCategory;
  int8_t fixed_dir = -1;    // driver copies name their direction in the symbol
  bool async = false;       // does not wait for earlier work (…Async, launches)
  bool host_alloc = false;  // returns pinned host memory (cudaMallocHost, cudaHostAlloc, …)
  bool host_free = false;   // releases pinned host memory
  bool managed = false;     // unified memory: copies to/from it are not staged like pageable ones
  bool device_alloc = false;
};

struct SessionRow {
  std::string status;  // complete | recording
  std::string host, kernel, agent_version, command_line, pid_filter;
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // 0 when NULL
  int64_t last_commit_ns = 0;
  int64_t last_event_ns = 0;  // latest event end committed (0 when unknown)
  int64_t abi_version = 0;    // of the agent that wrote it (GW_ABI_VERSION)
  uint32_t online_cpus = 0;   // CPUs online on the traced host; 0: unknown (older files)
};

struct ProcessRow {
  uint32_t pid = 0;
  int64_t start_ns = 0;
  std::string comm, exe, cmdline;
  int64_t exit_ns = 0;  // 0: it outlived the trace (processes.exit_ns NULL)
};

struct ThreadRow {
  uint32_t pid = 0, tid = 0;
  std::string comm;
  uint32_t cpus_allowed = 0;  // how many CPUs it may run on (its latest affinity); 0: unknown
};

// The Python line a call was made from: the innermost frame of its Python stack (python_frames,
// depth 0).
struct PySite {
  std::string file;      // as the process named it (co_filename)
  std::string function;  // qualified name (3.10: the function's own name)
  int32_t line = -1;     // -1: unknown
  std::string source;    // the line's text at trace time; empty: unknown
  // "train.py:212 in train_step: loss_value = loss.item()"
  std::string text() const;
};

// A Python process whose stacks could not be walked (python_processes.supported = 0).
struct PyProcessGap {
  uint32_t pid = 0;
  std::string interpreter, version, detail;
};

// A Python process's GPU calls in the window that began before the probes had its interpreter's
// layout (python_processes.layout_ns) and so carry no Python stack: the tens of milliseconds
// between its loading of the runtime and its discovery.
struct PyLayoutGap {
  uint32_t pid = 0;
  int64_t layout_ns = 0;  // when the probes got the layout (wall ns)
  uint64_t calls = 0;     // calls without a Python stack that began before it
};

struct LossRow {
  std::string source, cause;
  uint64_t count = 0;
};

// A stored chunk explain could not read (checksum mismatch, bad encoding) and skipped.
struct DamagedChunk {
  std::string_view table;  // "api_calls"
  int64_t tid = 0, ts_min = 0, end_max = 0;
  std::string error;
};

// One interval the device ran for a process, as it reported it (gpu_activity, trace
// --gpu-activity): a kernel, a copy or a memset. Only these three: they are what the device was
// busy with; its sync and overhead records are host-side waits and CUPTI's own cost.
enum class DeviceWork : uint8_t { Kernel, Copy, Memset };
struct DeviceActivityRow {
  int64_t ts = 0, dur = 0;  // wall ns, on the host's clock
  uint32_t pid = 0;
  int32_t device = 0;   // CUDA ordinal (0 when CUPTI gave none)
  int64_t stream = -1;  // CUPTI's stream id
  DeviceWork kind = DeviceWork::Kernel;
  int64_t end() const { return ts + dur; }
};

// What TraceRows::api answers for an id the file does not name: "?", of no category.
const ApiMeta& unknown_api_meta();

// Everything one explain run reads, for one window. Event vectors are sorted by (tid, ts) once
// loaded (sort_rows); calls, offcpu, syscalls, block_io and reclaim hold only the processes that
// made GPU API calls in the window, tcp holds every retransmit in the window.
struct TraceRows {
  SessionRow session;
  TimeWindow window;
  bool live = false;  // another process is still writing the file
  // One time window of a longer analysis (explain_batched.hpp): per thread, where its active
  // span in this window ends, its next call after the window (so that consecutive windows'
  // spans meet and no time between them is lost); a thread not named ends as usual.
  std::unordered_map<uint32_t, int64_t> span_ends;
  // The start of the whole window a window part belongs to (explain_batched): compute_stats
  // then also counts each process's events in fine bins from it (Stats::fine_rates). 0: not a
  // window part.
  int64_t rate_origin_ns = 0;

  std::vector<ApiMeta> apis;  // indexed by apis.id
  std::unordered_map<uint32_t, std::string> syscall_names;
  std::unordered_map<uint32_t, std::string> strings;  // strings.id -> task name
  std::vector<ProcessRow> processes;
  std::vector<ThreadRow> threads;
  std::vector<LossRow> losses;
  std::vector<DamagedChunk> damaged;  // skipped chunks: their rows are missing
  std::string wal_warning;            // the -wal is damaged (TraceFile::wal_warning)
  // What of the file cannot be verified: chunks read that carry no checksum (formats 1 and 2),
  // a chunk index without index_crc (store/chunk_index.hpp). Damage there reads as other data.
  bool unchecked_chunks = false;
  bool unchecked_index = false;
  std::vector<std::pair<std::string, uint64_t>> event_counts;
  // Kernel probe families that were not on (probe_families: family, state, detail); empty when
  // all were, or when the file predates the table.
  struct FamilyOff {
    std::string family, state, detail;
  };
  std::vector<FamilyOff> families_off;
  // The CPU quota each traced process ran under (table cpu_limits): the tightest cgroup limit
  // over its cgroup's ancestors; absent: none, or a file from before the table.
  struct CpuLimit {
    std::string cgroup;
    int64_t quota_us = 0, period_us = 0;
    int version = 0;
    double cpus() const { return period_us > 0 ? static_cast<double>(quota_us) / period_us : 0; }
  };
  std::unordered_map<uint32_t, CpuLimit> cpu_limits;
  // Where each Python process's interpreter state (_PyRuntime) lies: [addr, addr + size).
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> python_runtime;
  // A flight recorder's file (trace --keep / --max-size, table `retention`): every event that
  // ended at or after window_start_ns is in the file; `events` older ones were aged out.
  struct AgedOut {
    bool recorder = false;        // the file was written by a flight recorder
    int64_t window_start_ns = 0;  // 0: nothing aged out yet
    uint64_t events = 0;
    int64_t keep_ns = 0;
    uint64_t max_bytes = 0;
  } aged_out;
  // Was this family (probe_families.family) not on: left out, off by default, or failed?
  bool family_off(std::string_view family) const;
  // Were calls of this category recorded at entry only (trace --entry-only; family
  // "returns:<category>")? Their durations read as 0 and mean "unknown".
  bool entry_only(Category c) const;
  // Adaptive launch timing as the trace's launch_timing family states it ({0, 1}: every launch
  // was timed, or a file from before it).
  LaunchTiming launch_timing() const;
  // Was the syscall family off in a trace whose off-CPU rows say which syscall a thread slept
  // in (ABI 3)? Then `syscalls` is derived (prepare_rows): a thread's sleeps of 1 ms or more in
  // a system call (from the scheduler), and its CPU samples in one (their on-CPU time, as
  // sampled), adjacent pieces in the same syscall merged into one row. Without the syscall
  // tracepoints a row is a stretch of time in that syscall, not one call, and a syscall's
  // return value is unknown.
  bool syscalls_from_scheduler() const;

  CallRows calls;
  // Set by the loader, which fills each call in as it reads it (fill_call), with what
  // prepare_rows' own pass over the calls would have found: prepare_rows then skips that pass.
  // Hand-built rows leave it empty.
  struct CallsFilled {
    std::vector<size_t> default_copies;  // copies whose direction their addresses must tell
    bool sorted = true;                  // calls already in (tid, ts) order
  };
  std::optional<CallsFilled> calls_filled;
  // Allocation, free, NCCL communicator set-up and device selection (cudaSetDevice) calls from
  // the start of the trace to the window's end (any thread, sorted by ts): pinned host buffers
  // are usually allocated once, communicators set up and devices chosen once, long before the
  // window looked at.
  CallRows memory_calls;
  // pid -> (NCCL rank, communicator size), from those set-up calls (prepare_rows).
  std::unordered_map<uint32_t, std::pair<uint32_t, uint32_t>> nccl_ranks;
  // The CallExt of calls and memory_calls that have one (CallRow::ext), in no particular order.
  std::vector<CallExt> call_ext;
  OffCpuRows offcpu;
  std::vector<SyscallRow> syscalls;
  // The ioctls on the GPU driver's device files (syscalls rows with a request: the
  // driver_ioctls family, ABI 7), kept apart from `syscalls`, sorted by (tid, ts).
  std::vector<SyscallRow> driver_ioctls;
  std::vector<BlockIoRow> block_io;
  std::vector<ReclaimRow> reclaim;
  std::vector<TcpRetransRow> tcp;
  std::vector<CpuSampleRow> cpu_samples;
  // The CPU samples of traced processes that made no GPU call in the window (children of the GPU
  // processes: multiprocessing data-loader workers), in no particular order: only for what a
  // culprit among them ran in Python (culprit_python_line); no other view counts them.
  std::vector<CpuSampleRow> worker_samples;
  // Their off-CPU intervals, sorted by (tid, ts): why a producer among them was late (throttled
  // by its cgroup's quota, waiting for a CPU, asleep itself; culprit_states.hpp). Read only for an
  // analysis of every process (no --pid, not a batch): other reads skip their chunks.
  std::vector<OffCpuRow> worker_offcpu;
  // Every task's runs on a CPU a traced thread waited for, overlapping the window (any process:
  // the holders are whoever ran), sorted by (cpu, ts); and the moves of waiting threads between
  // run queues, sorted by (tid, ts). Read them through CpuHolders (cpu_holders.hpp).
  std::vector<CpuRunRow> cpu_runs;
  std::vector<WaitMigrationRow> wait_migrations;
  // Per stack id (stack_frames), where the call or sample came from: the first frame outside
  // the GPU and C/C++ runtime libraries, "gw::Trainer::step(unsigned long)+0x2f2 in sim_train".
  // Empty without --stacks.
  std::unordered_map<int32_t, std::string> call_sites;
  // Per Python stack id (api_calls.py_stack, cpu_samples.py_stack), the line it was called from
  // or was running. Empty for traces without Python processes, or recorded with --no-python.
  std::unordered_map<int32_t, PySite> python_sites;
  std::vector<PyProcessGap> python_unsupported;
  // Python processes whose calls in the window began before their layout was known (calls > 0),
  // by pid; load_trace fills it (python_layout_gaps).
  std::vector<PyLayoutGap> python_before_layout;

  // The device's own intervals (trace --gpu-activity) of the loaded processes that overlap the
  // window, sorted by (pid, ts); empty for a trace without them. Where a process has them, its
  // GPU-idle time is measured, not inferred from its calls (device_activity.hpp).
  std::vector<DeviceActivityRow> device_activity;

  bool prepared = false;  // prepare_rows has run (set by it)

  // Inline: the joins and statistics ask it for every one of millions of calls.
  const ApiMeta& api(uint16_t id) const {
    return id < apis.size() && !apis[id].name.empty() ? apis[id] : unknown_api_meta();
  }
  const CallExt& ext(const CallRow& c) const {
    static constexpr CallExt kNone;
    return c.ext == kNoExt ? kNone : call_ext[c.ext];
  }
  // Gives `c` the extra fields `e` (a CallExt of its own; none when `e` is empty).
  void set_ext(CallRow& c, const CallExt& e);
  std::string_view api_name(uint16_t id) const { return api(id).name; }
  std::string_view string(uint32_t id) const;
  std::string syscall_name(uint32_t nr) const;
  // Task names: the process's comm (processes, else its main thread), a thread's comm.
  std::string process_name(uint32_t pid) const;
  std::string thread_name(uint32_t tid) const;
  // "rank 5 of 8" for a process that set up an NCCL communicator; empty otherwise.
  std::string rank_label(uint32_t pid) const;
  int64_t rel(int64_t wall_ns) const { return wall_ns - window.trace_start_ns; }
};

// Per Python process of `layouts` (pid, python_processes.layout_ns), how many of its calls in
// `rows.calls` began before the layout was known and carry no Python stack; only those with any.
std::vector<PyLayoutGap> python_layout_gaps(const TraceRows& rows,
                                            const std::unordered_map<uint32_t, int64_t>& layouts);

// Fills the derived fields the file does not store (category, copy direction from the API's
// name), sorts every event vector by (tid, ts) and sets `prepared`. Idempotent; the loader calls
// it, hand-built rows in tests call it too, and analyze() calls it for rows not yet prepared.
void prepare_rows(TraceRows& rows);

// ApiMeta for one apis row (name + category text), the catalogue filling what the row leaves out.
ApiMeta make_api_meta(std::string_view name, std::string_view category);
// An ApiMeta table from the built-in catalogue (tests, files whose apis table is empty).
std::vector<ApiMeta> catalog_api_table();

// The category name stored in apis.category ("launch", "copy", ...) -> Category.
Category category_from_name(std::string_view name);

}  // namespace gpuwhy::analysis
