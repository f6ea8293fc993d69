// SPDX-License-Identifier: Apache-2.0
// Decoded events: what the reader produces from ring-buffer bytes and what the store writes.
// Timestamps are wall-clock nanoseconds (converted once, in core/clock); durations are ns.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "catalog/api_catalog.hpp"

namespace gpuwhy {

using Comm = std::array<char, 16>;  // a task name as the kernel keeps it (NUL-padded)

inline std::string_view comm_view(const Comm& c) {
  size_t n = 0;
  while (n < c.size() && c[n] != '\0') ++n;
  return {c.data(), n};
}

struct ApiCall {
  int64_t ts = 0;   // entry, wall ns
  int64_t dur = 0;  // entry -> return
  uint32_t pid = 0, tid = 0;
  uint16_t api = 0;  // ApiInfo::id
  uint16_t lib = 0;  // libraries.id
  int64_t ret = 0;   // return code (cudaError_t, CUresult, ncclResult_t, hipError_t)
  ApiCallFields f;
  int32_t stack_id = -1;
  uint16_t flags = 0;  // GW_FLAG_*
  uint64_t py_key = 0;       // the Python stack's key in the kernel's map, 0: none
  int32_t py_stack_id = -1;  // python_frames.py_stack_id, given by the reader; -1: none
};

struct OffCpu {
  int64_t ts = 0;    // switched out
  int64_t dur = 0;   // until switched back in
  int64_t runq = 0;  // of which runnable, waiting for a CPU
  uint32_t pid = 0, tid = 0, cpu = 0;
  bool preempted = false;
  int64_t prev_state = 0;
  uint32_t next_pid = 0, next_tid = 0;
  Comm next_comm{};
  uint32_t waker_pid = 0, waker_tid = 0;
  Comm waker_comm{};
  uint32_t holder_pid = 0, holder_tid = 0;  // had the CPU when this thread got it back (0: idle)
  Comm holder_comm{};
  int32_t syscall = -1;  // the system call it was in when it left the CPU, -1: none
  int32_t wait_cpu = -1;     // the CPU whose run queue it first waited in; -1: not recorded
  uint16_t migrations = 0;   // moves to another run queue while waiting (WaitMigrate each)
  uint16_t cpus_allowed = 0;  // how many CPUs it may run on (0: not recorded)
  bool throttled = false;     // held off the CPU by its cgroup's CPU quota (ABI 9)
  uint64_t arg0 = 0;  // the first argument of `syscall` (a futex's address, a descriptor; ABI 9)
};

// A task's run on a CPU while a traced thread waited for that CPU: [ts, ts + dur) on `cpu`, the
// run of (pid, tid) (0: the idle task) from the CPU's previous switch to the switch away from it.
struct CpuRun {
  int64_t ts = 0, dur = 0;
  uint32_t cpu = 0;
  uint32_t pid = 0, tid = 0;
  Comm comm{};
};

// A traced thread waiting for a CPU moved to another CPU's run queue.
struct WaitMigrate {
  int64_t ts = 0;
  uint32_t pid = 0, tid = 0;
  uint32_t from_cpu = 0, to_cpu = 0;
};

// A thread of a traced process renamed itself: its name from `ts` on.
struct TaskRename {
  int64_t ts = 0;
  uint32_t pid = 0, tid = 0;
  Comm comm{};
};

enum class ProcEventKind : uint8_t { Exec = 1, Fork = 2, Thread = 3, Exit = 4, ThreadExit = 5 };

struct ProcEvent {
  int64_t ts = 0;
  ProcEventKind kind = ProcEventKind::Exec;
  uint32_t pid = 0, tid = 0;
  uint32_t other_pid = 0, other_tid = 0;  // exec: ppid; fork/thread: the child
  int32_t exit_code = 0;
  Comm comm{};
  std::string filename;  // exec only
};

struct SyscallEvent {
  int64_t ts = 0, dur = 0;
  uint32_t pid = 0, tid = 0;
  uint32_t nr = 0;
  int64_t ret = 0;
  uint64_t arg0 = 0;
  // An ioctl on the GPU driver's device files (GW_FLAG_DRIVER_IOCTL): recorded whatever its
  // length, with its request; arg0 is the descriptor.
  bool driver = false;
  uint32_t request = 0;
};

struct BlockIo {
  int64_t ts = 0, dur = 0;
  uint32_t pid = 0, tid = 0;
  uint32_t dev = 0;
  uint64_t sector = 0;
  uint32_t bytes = 0;
  uint32_t op = 0;
  int32_t error = 0;
};

struct TcpRetrans {
  int64_t ts = 0;
  uint32_t pid = 0, tid = 0;
  uint16_t family = 0;
  std::string saddr, daddr;  // printable
  uint16_t sport = 0, dport = 0;
  uint8_t state = 0;
};

struct Reclaim {
  int64_t ts = 0, dur = 0;
  uint32_t pid = 0, tid = 0;
  uint64_t nr_reclaimed = 0;
};

// A traced thread found running by the CPU sampling timer.
struct CpuSample {
  int64_t ts = 0;
  int64_t dur = 0;  // the sampling period: the CPU time this sample stands for
  uint32_t pid = 0, tid = 0, cpu = 0;
  int32_t syscall = -1;  // the system call it was in, -1: none
  bool kernel = false;   // the timer interrupted kernel code
  int32_t stack_id = -1;  // the user stack (--stacks), -1: none
  uint64_t py_key = 0;    // the thread's Python stack's key in the kernel's map, 0: none
  int32_t py_stack_id = -1;  // python_frames.py_stack_id, given by the reader; -1: none
  // The thread's minor and major page faults so far (ABI 9; 0: an older agent).
  uint64_t min_flt = 0, maj_flt = 0;
};

// A GPU runtime library was mapped by a process: discovery should look at it.
struct LibMapped {
  int64_t ts = 0;
  uint32_t pid = 0;
  uint64_t inode = 0;
  uint32_t dev = 0;
  std::string name;
  uint16_t flags = 0;  // GW_LIB_HELD, GW_LIB_NOT_HELD (the dynamic linker's hook)
};

using Event = std::variant<ApiCall, OffCpu, ProcEvent, SyscallEvent, BlockIo, TcpRetrans, Reclaim,
                           CpuSample, LibMapped, CpuRun, WaitMigrate, TaskRename>;

}  // namespace gpuwhy
