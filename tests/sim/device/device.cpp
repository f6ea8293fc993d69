// SPDX-License-Identifier: Apache-2.0
#include "device/device.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "device/truth.hpp"
#include "gwsim/clock.hpp"

namespace gwsim {
namespace {

constexpr uint32_t kMaxThreadsPerBlock = 1024;
constexpr unsigned kDeviceSide = kind_bit(MemKind::kDevice) | kind_bit(MemKind::kManaged);

bool on_device(const Region* r) { return r != nullptr && r->kind != MemKind::kPinnedHost; }
bool device_only(const Region* r) { return r != nullptr && r->kind == MemKind::kDevice; }
// DMA-able host memory: pinned, or managed (migrated by the driver, never staged).
bool dma_host(const Region* r) { return r != nullptr && r->kind != MemKind::kDevice; }

bool valid_dims(Dims d) { return d.x > 0 && d.y > 0 && d.z > 0; }

}  // namespace

namespace {

constexpr int kMaxDevices = 16;
std::atomic<Device*> g_devices[kMaxDevices];
std::mutex g_create_mu;
thread_local int t_selected = 0;
pid_t g_owner_pid = 0;
uint64_t g_start_ns = 0;

Stats& process_stats() {
  static Stats* const stats = new Stats();  // never destroyed, like the devices
  return *stats;
}

}  // namespace

Device& Device::get() { return of(t_selected); }

void Device::select(int ordinal) { t_selected = ordinal; }

int Device::selected() { return t_selected; }

Device& Device::of(int ordinal) {
  ordinal = std::clamp(ordinal, 0, kMaxDevices - 1);
  if (Device* d = g_devices[ordinal].load(std::memory_order_acquire)) return *d;
  std::lock_guard lk(g_create_mu);
  if (Device* d = g_devices[ordinal].load(std::memory_order_relaxed)) return *d;
  if (g_owner_pid == 0) {
    // Never destroyed: shutdown_all() runs from atexit instead, while everything is still alive.
    g_owner_pid = getpid();
    g_start_ns = now_ns();
    std::atexit(&Device::shutdown_all);
  }
  Device* d = new Device(ordinal);
  g_devices[ordinal].store(d, std::memory_order_release);
  return *d;
}

Device::Device(int ordinal)
    : ordinal_(ordinal),
      config_(config_from_env()),
      stats_(process_stats()),
      engine_(config_.queue_depth),
      launch_ns_(config_.launch_ns) {}

void Device::shutdown_all() {
  // A fork()ed child inherits the devices but not their GPU threads: leave them alone there.
  if (getpid() != g_owner_pid) return;
  TruthInput in;
  in.start_ns = g_start_ns;
  for (int i = 0; i < kMaxDevices; ++i) {
    Device* d = g_devices[i].load(std::memory_order_acquire);
    if (d == nullptr) continue;
    if (in.config == nullptr) in.config = &d->config_;
    in.pending_at_exit += d->engine_.pending();
    d->engine_.stop();
    const EngineTotals t = d->engine_.totals();
    in.devices.emplace_back(i, t);
    in.totals.add(t);
  }
  in.end_ns = now_ns();
  if (in.config != nullptr && !in.config->truth_path.empty()) {
    write_truth(expand_truth_path(in.config->truth_path), in, process_stats());
  }
}

void Device::burn(uint64_t ns) { stats_.add_burn(burn_cpu_ns(ns)); }

void Device::set_kernel_ns(const void* key, uint64_t ns) {
  std::lock_guard lk(mu_);
  kernel_ns_[key] = ns;
}

uint64_t Device::kernel_ns(const void* key) {
  std::lock_guard lk(mu_);
  const auto it = kernel_ns_.find(key);
  return it == kernel_ns_.end() ? config_.kernel_ns : it->second;
}

Status Device::submit(const ApiCounter* api, uint64_t stream, DefaultStream scope, const Op& op,
                      uint64_t* seq) {
  uint64_t waited = 0;
  Op o = op;
  o.device = ordinal_;
  const Status st = engine_.submit(stream, scope, std::move(o), seq, &waited);
  stats_.add_blocked(api, waited);
  return st;
}

Status Device::launch(const ApiCounter* api, const void* func, Dims grid, Dims block,
                      uint64_t stream, DefaultStream scope) {
  if (func == nullptr) return Status::kInvalidFunction;
  if (!valid_dims(grid) || !valid_dims(block) ||
      uint64_t{block.x} * block.y * block.z > kMaxThreadsPerBlock) {
    return Status::kInvalidConfig;
  }
  if (!engine_.has_stream(stream, scope)) return Status::kInvalidHandle;
  burn(launch_ns_.load(std::memory_order_relaxed));
  uint64_t seq = 0;
  Op op{OpKind::kKernel, kernel_ns(func)};
  op.func = func;
  op.grid[0] = grid.x, op.grid[1] = grid.y, op.grid[2] = grid.z;
  op.block[0] = block.x, op.block[1] = block.y, op.block[2] = block.z;
  return submit(api, stream, scope, op, &seq);
}

Status Device::launch_graph(const ApiCounter* api, const void* graph, uint64_t stream,
                            DefaultStream scope) {
  if (graph == nullptr) return Status::kInvalidValue;
  if (!engine_.has_stream(stream, scope)) return Status::kInvalidHandle;
  burn(launch_ns_.load(std::memory_order_relaxed));
  uint64_t seq = 0;
  Op op{OpKind::kGraph, kernel_ns(graph)};
  op.func = graph;
  return submit(api, stream, scope, op, &seq);
}

Status Device::plan_copy(const CopyRequest& r, CopyPlan* plan) {
  std::lock_guard lk(mu_);
  const Region* dst = memory_.find(r.dst, r.dst_extent);
  const Region* src = memory_.find(r.src, r.src_extent);
  Dir dir = r.dir;
  if (dir == Dir::kDefault) {
    dir = on_device(src) ? (on_device(dst) ? Dir::kDeviceToDevice : Dir::kDeviceToHost)
                         : (on_device(dst) ? Dir::kHostToDevice : Dir::kHostToHost);
  }
  // A device-side pointer must lie inside a live allocation; a host-side one must not be device
  // memory (the host cannot read it).
  bool ok = false;
  const Region* host = nullptr;
  switch (dir) {
    case Dir::kHostToDevice:
      ok = on_device(dst) && !device_only(src);
      host = src;
      break;
    case Dir::kDeviceToHost:
      ok = on_device(src) && !device_only(dst);
      host = dst;
      break;
    case Dir::kDeviceToDevice:
      ok = on_device(src) && on_device(dst);
      break;
    case Dir::kHostToHost:
      ok = !device_only(src) && !device_only(dst);
      break;
    case Dir::kDefault:
      break;
  }
  if (!ok) return Status::kInvalidValue;
  plan->dir = dir;
  switch (dir) {
    case Dir::kDeviceToDevice:
      plan->duration_ns = transfer_ns(r.bytes, config_.d2d_gbps);
      break;
    case Dir::kHostToHost:  // a CPU memcpy: staging cost on the host, nothing on the GPU
      plan->pageable = true;
      break;
    default:
      plan->pageable = !dma_host(host);
      plan->duration_ns =
          transfer_ns(r.bytes, plan->pageable ? config_.pageable_gbps : config_.pinned_gbps);
      break;
  }
  return Status::kOk;
}

Status Device::copy(const ApiCounter* api, const CopyRequest& r) {
  if (r.bytes == 0) {
    return engine_.has_stream(r.stream, r.scope) ? Status::kOk : Status::kInvalidHandle;
  }
  if (r.dst == 0 || r.src == 0) return Status::kInvalidValue;
  CopyPlan plan;
  if (const Status st = plan_copy(r, &plan); st != Status::kOk) return st;
  if (!engine_.has_stream(r.stream, r.scope)) return Status::kInvalidHandle;

  uint64_t seq = 0;
  Op op{OpKind::kCopy, plan.duration_ns, r.bytes, plan.dir};
  op.pageable = plan.pageable;
  Status st = submit(api, r.stream, r.scope, op, &seq);
  if (st != Status::kOk) return st;
  // Pageable memory cannot be DMA'd: the driver stages it through pinned buffers on the host CPU,
  // before the DMA for uploads and after it for downloads. That is also why a download to
  // pageable memory is synchronous even through an Async entry point.
  const uint64_t staging = plan.pageable ? transfer_ns(r.bytes, config_.staging_gbps) : 0;
  const bool download = plan.dir == Dir::kDeviceToHost;
  if (!download) burn(staging);
  if (r.sync || (plan.pageable && download)) {
    uint64_t waited = 0;
    st = engine_.wait_seq(seq, &waited);
    stats_.add_blocked(api, waited);
  }
  if (download) burn(staging);
  return st;
}

Status Device::memset(const ApiCounter* api, uint64_t dst, uint64_t bytes, uint64_t stream,
                      DefaultStream scope) {
  if (bytes == 0) return engine_.has_stream(stream, scope) ? Status::kOk : Status::kInvalidHandle;
  {
    std::lock_guard lk(mu_);
    if (!on_device(memory_.find(dst, bytes))) return Status::kInvalidValue;
  }
  if (!engine_.has_stream(stream, scope)) return Status::kInvalidHandle;
  uint64_t seq = 0;
  const Op op{OpKind::kMemset, transfer_ns(bytes, config_.d2d_gbps), bytes};
  return submit(api, stream, scope, op, &seq);
}

Status Device::collective(const ApiCounter* api, uint64_t bytes, uint64_t stream,
                          DefaultStream scope, std::function<void()> gate) {
  uint64_t seq = 0;
  Op op{OpKind::kCollective, transfer_ns(bytes, config_.nccl_gbps), bytes};
  op.gate = std::move(gate);
  return submit(api, stream, scope, op, &seq);
}

Status Device::alloc_device(const ApiCounter* api, uint64_t bytes, bool low32, uint64_t* out) {
  (void)api;
  if (bytes == 0) {
    *out = 0;
    return Status::kOk;
  }
  burn(config_.malloc_ns);
  std::lock_guard lk(mu_);
  const auto p = memory_.alloc_device(bytes, low32);
  if (!p) return Status::kOutOfMemory;
  *out = *p;
  return Status::kOk;
}

Status Device::alloc_host(const ApiCounter* api, uint64_t bytes, MemKind kind, void** out) {
  (void)api;
  if (bytes == 0) {
    *out = nullptr;
    return Status::kOk;
  }
  burn(config_.malloc_ns);
  std::lock_guard lk(mu_);
  void* p = memory_.alloc_host(bytes, kind);
  if (p == nullptr) return Status::kOutOfMemory;
  *out = p;
  return Status::kOk;
}

Status Device::free_device(const ApiCounter* api, uint64_t ptr) {
  if (ptr == 0) return Status::kOk;
  {
    std::lock_guard lk(mu_);
    if (!memory_.is_allocation(ptr, kDeviceSide)) return Status::kInvalidValue;
  }
  const Status st = sync_device(api);
  burn(config_.free_ns);
  std::lock_guard lk(mu_);
  if (!memory_.release(ptr, kDeviceSide)) return Status::kInvalidValue;  // freed meanwhile
  return st == Status::kStopped ? Status::kOk : st;
}

Status Device::free_device_async(const ApiCounter* api, uint64_t ptr) {
  (void)api;
  if (ptr == 0) return Status::kOk;
  burn(config_.free_ns);
  std::lock_guard lk(mu_);
  return memory_.release(ptr, kDeviceSide) ? Status::kOk : Status::kInvalidValue;
}

Status Device::free_host(const ApiCounter* api, uint64_t ptr) {
  if (ptr == 0) return Status::kOk;
  {
    std::lock_guard lk(mu_);
    if (!memory_.is_allocation(ptr, kind_bit(MemKind::kPinnedHost))) return Status::kInvalidValue;
  }
  const Status st = sync_device(api);
  burn(config_.free_ns);
  std::lock_guard lk(mu_);
  if (!memory_.release(ptr, kind_bit(MemKind::kPinnedHost))) return Status::kInvalidValue;
  return st == Status::kStopped ? Status::kOk : st;
}

Status Device::sync_device(const ApiCounter* api) {
  uint64_t waited = 0;
  const Status st = engine_.wait_all(&waited);
  stats_.add_blocked(api, waited);
  return st;
}

Status Device::sync_stream(const ApiCounter* api, uint64_t stream, DefaultStream scope) {
  uint64_t waited = 0;
  const Status st = engine_.wait_stream(stream, scope, &waited);
  stats_.add_blocked(api, waited);
  return st;
}

Status Device::sync_event(const ApiCounter* api, uint64_t event) {
  uint64_t waited = 0;
  const Status st = engine_.wait_event(event, &waited);
  stats_.add_blocked(api, waited);
  return st;
}

Status Device::stream_wait_event(uint64_t stream, DefaultStream scope, uint64_t event) {
  // Execution is in global submission order, so the dependency already holds: only validate.
  if (!engine_.has_stream(stream, scope) || !engine_.has_event(event)) {
    return Status::kInvalidHandle;
  }
  return Status::kOk;
}

}  // namespace gwsim
