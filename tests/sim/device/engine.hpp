// SPDX-License-Identifier: Apache-2.0
// The simulated GPU itself: one background thread ("gwsim-gpu") that executes queued operations
// one after another, each occupying the GPU for its duration, plus the stream and event
// bookkeeping that host-side waits need.
//
// Execution order is the global submission order. That is a legal CUDA schedule (it respects
// every stream's order and every dependency an earlier submission can create: legacy-stream
// implicit syncs, events, stream waits), it just never overlaps two operations. Because of it,
// "stream S is done" is "the global completion counter has reached S's last submission", and
// cudaStreamWaitEvent needs no scheduling work at all.
//
// Time runs on a timeline: an operation starts at max(its submission, its predecessor's scheduled
// end), not when the thread happens to wake, so wake-up latency never accumulates and busy time
// is exactly the sum of the durations.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "device/status.hpp"
#include "gwsim/gwsim.h"

namespace gwsim {

// The profiler hook (gwsim_set_activity_hook): null when none.
extern std::atomic<gwsim_activity_fn> g_activity_hook;
extern std::atomic<void*> g_activity_ctx;

enum class OpKind : uint8_t { kKernel, kGraph, kCopy, kMemset, kCollective };

struct Op {
  OpKind kind = OpKind::kKernel;
  uint64_t duration_ns = 0;
  uint64_t bytes = 0;
  Dir dir = Dir::kDeviceToDevice;  // copies only
  uint64_t seq = 0;                // assigned at submission
  uint64_t submit_ns = 0;          // likewise
  // Run by the GPU thread, engine unlocked, before the operation starts: an NCCL kernel waiting
  // for its peers (GWSIM_NCCL_ASYNC). The GPU is held, not busy, while it runs.
  std::function<void()> gate;
  // What a profiler reports of it (gwsim_activity, gwsim_set_activity_hook): set by Device.
  const void* func = nullptr;  // kernels: the function (or graph exec) launched
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  bool pageable = false;  // copies: the host side is ordinary memory
  int device = 0;
  uint64_t stream_key = 0;  // assigned at submission: the stream's state (a stable id)
};

// What the GPU has executed so far (the ground truth's device half).
struct EngineTotals {
  uint64_t busy_ns = 0;
  uint64_t kernels = 0, graphs = 0, copies = 0, memsets = 0, collectives = 0;
  uint64_t bytes_by_dir[4] = {};  // indexed by Dir (H2H, H2D, D2H, D2D)
  uint64_t collective_bytes = 0;
  uint64_t gate_ns = 0;  // time the GPU was held by gates (collectives waiting for peers)
  uint64_t kernel_ns = 0;  // the kernels' share of busy_ns (graphs included)
  uint64_t submitted = 0, completed = 0;
  // Adds another device's totals (the truth file's process-wide figures).
  void add(const EngineTotals& o) {
    busy_ns += o.busy_ns;
    kernels += o.kernels;
    graphs += o.graphs;
    copies += o.copies;
    memsets += o.memsets;
    collectives += o.collectives;
    for (int i = 0; i < 4; ++i) bytes_by_dir[i] += o.bytes_by_dir[i];
    collective_bytes += o.collective_bytes;
    gate_ns += o.gate_ns;
    kernel_ns += o.kernel_ns;
    submitted += o.submitted;
    completed += o.completed;
  }
};

class Engine {
 public:
  explicit Engine(uint64_t queue_depth);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();

  // Stops the GPU thread (idempotent). Pending operations are dropped, and every later wait
  // returns kStopped at once, so a process that exits with work in flight never hangs.
  void stop();

  // Stream and event handles are the addresses of their state objects, like a real runtime's.
  uint64_t create_stream();
  bool destroy_stream(uint64_t handle);
  bool has_stream(uint64_t handle, DefaultStream scope);
  uint64_t create_event();
  bool destroy_event(uint64_t handle);
  bool has_event(uint64_t handle);
  // Captures the work submitted to `stream` so far.
  Status record_event(uint64_t event, uint64_t stream, DefaultStream scope);

  // Queues `op` on `stream`. Blocks while the queue is full (a real launch queue does the same);
  // the time blocked is added to *waited_ns.
  Status submit(uint64_t stream, DefaultStream scope, Op op, uint64_t* seq, uint64_t* waited_ns);

  // Blocking waits. Each adds the time actually spent blocked to *waited_ns (0 if the work was
  // already done) so the caller can account it to the calling thread.
  Status wait_stream(uint64_t stream, DefaultStream scope, uint64_t* waited_ns);
  Status wait_event(uint64_t event, uint64_t* waited_ns);
  Status wait_all(uint64_t* waited_ns);
  Status wait_seq(uint64_t seq, uint64_t* waited_ns);

  // Non-blocking: kOk when done, kNotReady otherwise.
  Status query_stream(uint64_t stream, DefaultStream scope);
  Status query_event(uint64_t event);

  EngineTotals totals();
  uint64_t pending();

 private:
  struct StreamState {
    uint64_t last_seq = 0;
  };
  struct EventState {
    uint64_t seq = 0;  // 0: never recorded, which counts as complete
  };

  void run();
  void account(const Op& op);
  void report(const Op& op, uint64_t start, uint64_t end);
  StreamState* resolve(uint64_t handle, DefaultStream scope);
  Status wait_locked(std::unique_lock<std::mutex>& lk, uint64_t seq, uint64_t* waited_ns);

  const uint64_t queue_depth_;
  std::mutex mu_;
  std::condition_variable work_cv_;   // GPU thread: work arrived, or stop
  std::condition_variable done_cv_;   // host waiters: an operation completed
  std::condition_variable space_cv_;  // host submitters: the queue has room
  std::deque<Op> queue_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  uint64_t timeline_end_ = 0;  // scheduled end of the last started operation
  bool gpu_idle_ = false;
  bool stopping_ = false;
  int done_waiters_ = 0;
  int space_waiters_ = 0;
  EngineTotals totals_{};
  StreamState legacy_{};
  std::unordered_map<uint64_t, std::unique_ptr<StreamState>> streams_;
  std::unordered_map<uint64_t, std::unique_ptr<EventState>> events_;
  std::thread gpu_;
};

}  // namespace gwsim
