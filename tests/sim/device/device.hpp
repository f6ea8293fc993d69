// SPDX-License-Identifier: Apache-2.0
// The simulated GPUs of a process (GWSIM_DEVICE_COUNT of them, device 0 by default), shared by
// every front library (libcudart, libcuda, libnccl, libamdhip64 all link libgwsim_device.so), so
// that a stream created through the runtime API can carry an NCCL collective and one GPU thread
// per device sees all of that device's work. As in CUDA and HIP, the current device is per host
// thread: 0 until the thread calls cudaSetDevice / hipSetDevice (Device::select).
//
// It holds the semantics the fronts have in common: what a launch, a copy or an allocation costs
// on the host and on the GPU, which calls block, and the ground truth of all of it. A front only
// decodes its own argument conventions and maps Status to its own error codes.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "device/config.hpp"
#include "device/engine.hpp"
#include "device/memory_map.hpp"
#include "device/stats.hpp"
#include "device/status.hpp"

namespace gwsim {

struct Dims {
  uint32_t x = 1, y = 1, z = 1;
};

struct CopyRequest {
  uint64_t dst = 0;
  uint64_t src = 0;
  uint64_t bytes = 0;       // bytes moved
  uint64_t dst_extent = 0;  // bytes spanned at dst (a 2D copy spans pitch * (height-1) + width)
  uint64_t src_extent = 0;
  Dir dir = Dir::kDefault;
  uint64_t stream = 0;
  DefaultStream scope = DefaultStream::kLegacy;
  bool sync = false;  // the host waits for completion (cudaMemcpy, cuMemcpyHtoD, ...)
};

class Device {
 public:
  // The calling thread's current device. Each is created on first use; all are shut down (GPU
  // threads stopped, truth written) at process exit.
  static Device& get();
  // Makes `ordinal` (0 <= ordinal < config().device_count) the calling thread's current device.
  static void select(int ordinal);
  static int selected();
  int ordinal() const { return ordinal_; }

  const Config& config() const { return config_; }
  Stats& stats() { return stats_; }
  Engine& engine() { return engine_; }

  Status launch(const ApiCounter* api, const void* func, Dims grid, Dims block, uint64_t stream,
                DefaultStream scope);
  Status launch_graph(const ApiCounter* api, const void* graph, uint64_t stream,
                      DefaultStream scope);
  Status copy(const ApiCounter* api, const CopyRequest& req);
  Status memset(const ApiCounter* api, uint64_t dst, uint64_t bytes, uint64_t stream,
                DefaultStream scope);
  // The transfer part of an NCCL collective, queued on `stream`: after the ranks have met, or,
  // with a `gate` (GWSIM_NCCL_ASYNC), held on the GPU until the gate (their meeting) returns.
  Status collective(const ApiCounter* api, uint64_t bytes, uint64_t stream, DefaultStream scope,
                    std::function<void()> gate = {});

  Status alloc_device(const ApiCounter* api, uint64_t bytes, bool low32, uint64_t* out);
  Status alloc_host(const ApiCounter* api, uint64_t bytes, MemKind kind, void** out);
  // Both free functions synchronise the device first, as cudaFree/cudaFreeHost do.
  Status free_device(const ApiCounter* api, uint64_t ptr);  // device or managed memory
  Status free_host(const ApiCounter* api, uint64_t ptr);    // pinned host memory
  // cudaFreeAsync/hipFreeAsync: stream-ordered, no device synchronisation (the model releases
  // the memory at once: nothing in it reads freed memory).
  Status free_device_async(const ApiCounter* api, uint64_t ptr);

  Status sync_device(const ApiCounter* api);
  Status sync_stream(const ApiCounter* api, uint64_t stream, DefaultStream scope);
  Status sync_event(const ApiCounter* api, uint64_t event);
  Status stream_wait_event(uint64_t stream, DefaultStream scope, uint64_t event);

  void set_kernel_ns(const void* key, uint64_t ns);
  void set_launch_ns(uint64_t ns) { launch_ns_.store(ns, std::memory_order_relaxed); }

  // Host-side work and waits done by a front itself (NCCL barriers, straggler delays), accounted
  // to the calling thread.
  void burn(uint64_t ns);
  void record_blocked(const ApiCounter* api, uint64_t ns) { stats_.add_blocked(api, ns); }
  void record_sleep(uint64_t ns) { stats_.add_sleep(ns); }

 private:
  struct CopyPlan {
    Dir dir = Dir::kDefault;
    uint64_t duration_ns = 0;
    bool pageable = false;  // the host side is ordinary (unpinned) memory
  };

  explicit Device(int ordinal);
  static Device& of(int ordinal);
  static void shutdown_all();
  Status plan_copy(const CopyRequest& req, CopyPlan* plan);
  uint64_t kernel_ns(const void* key);
  Status submit(const ApiCounter* api, uint64_t stream, DefaultStream scope, const Op& op,
                uint64_t* seq);

  const int ordinal_;
  const Config config_;
  Stats& stats_;  // one per process: calls and per-thread waits, whatever the device
  Engine engine_;
  std::atomic<uint64_t> launch_ns_;
  std::mutex mu_;  // guards memory_ and kernel_ns_
  MemoryMap memory_;
  std::unordered_map<const void*, uint64_t> kernel_ns_;
};

// Counts a call of the enclosing exported function (named by __func__) and binds `gw_api`, the
// counter that waits inside the call are attributed to.
#define GWSIM_ENTER()                                                                      \
  static ::gwsim::ApiCounter* const gw_api = ::gwsim::Device::get().stats().api(__func__); \
  gw_api->calls.fetch_add(1, std::memory_order_relaxed)

}  // namespace gwsim
