// SPDX-License-Identifier: Apache-2.0
#include "device/engine.hpp"

#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>

#include "gwsim/clock.hpp"
#include "gwsim/gwsim.h"

namespace gwsim {
namespace {

constexpr uint64_t kStreamLegacy = 0x1;     // cudaStreamLegacy
constexpr uint64_t kStreamPerThread = 0x2;  // cudaStreamPerThread

// The calling thread's per-thread default stream (created on first use).
thread_local uint64_t t_per_thread_stream = 0;

std::chrono::steady_clock::time_point steady_at(uint64_t mono_ns) {
  // libstdc++'s steady_clock is CLOCK_MONOTONIC, the clock now_ns() reads.
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(mono_ns));
}

template <typename T>
uint64_t handle_of(const std::unique_ptr<T>& p) {
  return reinterpret_cast<uint64_t>(p.get());
}

}  // namespace

std::atomic<gwsim_activity_fn> g_activity_hook{nullptr};
std::atomic<void*> g_activity_ctx{nullptr};

Engine::Engine(uint64_t queue_depth) : queue_depth_(queue_depth), gpu_([this] { run(); }) {}

Engine::~Engine() { stop(); }

void Engine::stop() {
  {
    std::lock_guard lk(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  work_cv_.notify_all();
  done_cv_.notify_all();
  space_cv_.notify_all();
  if (gpu_.joinable()) gpu_.join();
}

void Engine::run() {
  // The default 50 us timer slack would stretch every 50 us kernel; ask for precise wake-ups.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  pthread_setname_np(pthread_self(), "gwsim-gpu");
  std::unique_lock lk(mu_);
  while (true) {
    gpu_idle_ = true;
    work_cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
    gpu_idle_ = false;
    if (stopping_) return;
    const Op op = queue_.front();
    queue_.pop_front();
    // Wake blocked submitters only once the queue is half empty: waking them on every pop would
    // turn a launch storm into one context switch per launch.
    if (space_waiters_ > 0 && queue_.size() <= queue_depth_ / 2) space_cv_.notify_all();
    uint64_t start = std::max(op.submit_ns, timeline_end_);
    if (op.gate) {
      // The operation cannot start before its predecessors end, then it waits for its gate.
      if (start > now_ns() &&
          work_cv_.wait_until(lk, steady_at(start), [&] { return stopping_; })) {
        return;
      }
      lk.unlock();
      op.gate();
      lk.lock();
      if (stopping_) return;
      const uint64_t opened = now_ns();
      if (opened > start) totals_.gate_ns += opened - start;
      start = std::max(start, opened);
    }
    const uint64_t end = start + op.duration_ns;
    timeline_end_ = end;
    // Sleep, never spin: the GPU thread must not steal host CPU from the workload it simulates.
    // Submissions do not notify a busy GPU thread, so this only wakes at the end or on stop.
    if (end > now_ns() && work_cv_.wait_until(lk, steady_at(end), [&] { return stopping_; })) {
      return;
    }
    account(op);
    report(op, start, end);
    completed_ = op.seq;
    if (done_waiters_ > 0) done_cv_.notify_all();
  }
}

void Engine::account(const Op& op) {
  totals_.busy_ns += op.duration_ns;
  switch (op.kind) {
    case OpKind::kKernel:
      ++totals_.kernels;
      totals_.kernel_ns += op.duration_ns;
      break;
    case OpKind::kGraph:
      ++totals_.graphs;
      totals_.kernel_ns += op.duration_ns;
      break;
    case OpKind::kMemset:
      ++totals_.memsets;
      break;
    case OpKind::kCopy:
      ++totals_.copies;
      if (op.dir <= Dir::kDeviceToDevice)
        totals_.bytes_by_dir[static_cast<int>(op.dir)] += op.bytes;
      break;
    case OpKind::kCollective:
      ++totals_.collectives;
      totals_.collective_bytes += op.bytes;
      break;
  }
}

// The profiler's view of one executed operation (tests/sim/cupti, the mock libcupti), on the GPU
// thread with the engine locked: the hook only copies it.
void Engine::report(const Op& op, uint64_t start, uint64_t end) {
  gwsim_activity_fn fn = g_activity_hook.load(std::memory_order_acquire);
  if (fn == nullptr) return;
  gwsim_activity a{};
  a.kind = static_cast<uint32_t>(op.kind);
  a.device = static_cast<uint32_t>(op.device);
  a.start_ns = start;
  a.end_ns = end;
  a.bytes = op.bytes;
  a.stream = op.stream_key;
  a.func = op.func;
  for (int i = 0; i < 3; ++i) {
    a.grid[i] = op.grid[i];
    a.block[i] = op.block[i];
  }
  a.dir = static_cast<uint32_t>(op.dir);
  a.pageable = op.pageable ? 1 : 0;
  fn(&a, g_activity_ctx.load(std::memory_order_acquire));
}

Engine::StreamState* Engine::resolve(uint64_t handle, DefaultStream scope) {
  if (handle == kStreamLegacy || (handle == 0 && scope == DefaultStream::kLegacy)) return &legacy_;
  if (handle == 0 || handle == kStreamPerThread) {
    if (t_per_thread_stream == 0) {
      auto s = std::make_unique<StreamState>();
      t_per_thread_stream = handle_of(s);
      streams_.emplace(t_per_thread_stream, std::move(s));
    }
    handle = t_per_thread_stream;
  }
  const auto it = streams_.find(handle);
  return it == streams_.end() ? nullptr : it->second.get();
}

uint64_t Engine::create_stream() {
  std::lock_guard lk(mu_);
  auto s = std::make_unique<StreamState>();
  const uint64_t h = handle_of(s);
  streams_.emplace(h, std::move(s));
  return h;
}

bool Engine::destroy_stream(uint64_t handle) {
  std::lock_guard lk(mu_);
  // Queued work keeps running: operations refer to sequence numbers, not to streams.
  if (handle == t_per_thread_stream) return false;
  return streams_.erase(handle) == 1;
}

bool Engine::has_stream(uint64_t handle, DefaultStream scope) {
  std::lock_guard lk(mu_);
  return resolve(handle, scope) != nullptr;
}

uint64_t Engine::create_event() {
  std::lock_guard lk(mu_);
  auto e = std::make_unique<EventState>();
  const uint64_t h = handle_of(e);
  events_.emplace(h, std::move(e));
  return h;
}

bool Engine::destroy_event(uint64_t handle) {
  std::lock_guard lk(mu_);
  return events_.erase(handle) == 1;
}

bool Engine::has_event(uint64_t handle) {
  std::lock_guard lk(mu_);
  return events_.count(handle) == 1;
}

Status Engine::record_event(uint64_t event, uint64_t stream, DefaultStream scope) {
  std::lock_guard lk(mu_);
  const auto it = events_.find(event);
  StreamState* s = resolve(stream, scope);
  if (it == events_.end() || s == nullptr) return Status::kInvalidHandle;
  it->second->seq = s->last_seq;
  return Status::kOk;
}

Status Engine::submit(uint64_t stream, DefaultStream scope, Op op, uint64_t* seq,
                      uint64_t* waited_ns) {
  std::unique_lock lk(mu_);
  if (resolve(stream, scope) == nullptr) return Status::kInvalidHandle;
  if (queue_.size() >= queue_depth_ && !stopping_) {
    const uint64_t t0 = now_ns();
    ++space_waiters_;
    space_cv_.wait(lk, [&] { return stopping_ || queue_.size() < queue_depth_; });
    --space_waiters_;
    *waited_ns += now_ns() - t0;
  }
  if (stopping_) return Status::kStopped;
  // Look the stream up again: another thread may have destroyed it while we waited.
  StreamState* s = resolve(stream, scope);
  if (s == nullptr) return Status::kInvalidHandle;
  op.seq = ++submitted_;
  op.stream_key = reinterpret_cast<uint64_t>(s);
  op.submit_ns = now_ns();
  s->last_seq = op.seq;
  queue_.push_back(op);
  *seq = op.seq;
  if (gpu_idle_) work_cv_.notify_one();
  return Status::kOk;
}

Status Engine::wait_locked(std::unique_lock<std::mutex>& lk, uint64_t seq, uint64_t* waited_ns) {
  if (completed_ >= seq) return Status::kOk;
  if (stopping_) return Status::kStopped;
  const uint64_t t0 = now_ns();
  ++done_waiters_;
  done_cv_.wait(lk, [&] { return stopping_ || completed_ >= seq; });
  --done_waiters_;
  *waited_ns += now_ns() - t0;
  return completed_ >= seq ? Status::kOk : Status::kStopped;
}

Status Engine::wait_stream(uint64_t stream, DefaultStream scope, uint64_t* waited_ns) {
  std::unique_lock lk(mu_);
  const StreamState* s = resolve(stream, scope);
  if (s == nullptr) return Status::kInvalidHandle;
  return wait_locked(lk, s->last_seq, waited_ns);
}

Status Engine::wait_event(uint64_t event, uint64_t* waited_ns) {
  std::unique_lock lk(mu_);
  const auto it = events_.find(event);
  if (it == events_.end()) return Status::kInvalidHandle;
  return wait_locked(lk, it->second->seq, waited_ns);
}

Status Engine::wait_all(uint64_t* waited_ns) {
  std::unique_lock lk(mu_);
  return wait_locked(lk, submitted_, waited_ns);
}

Status Engine::wait_seq(uint64_t seq, uint64_t* waited_ns) {
  std::unique_lock lk(mu_);
  return wait_locked(lk, seq, waited_ns);
}

Status Engine::query_stream(uint64_t stream, DefaultStream scope) {
  std::lock_guard lk(mu_);
  const StreamState* s = resolve(stream, scope);
  if (s == nullptr) return Status::kInvalidHandle;
  return completed_ >= s->last_seq ? Status::kOk : Status::kNotReady;
}

Status Engine::query_event(uint64_t event) {
  std::lock_guard lk(mu_);
  const auto it = events_.find(event);
  if (it == events_.end()) return Status::kInvalidHandle;
  return completed_ >= it->second->seq ? Status::kOk : Status::kNotReady;
}

EngineTotals Engine::totals() {
  std::lock_guard lk(mu_);
  EngineTotals t = totals_;
  t.submitted = submitted_;
  t.completed = completed_;
  return t;
}

uint64_t Engine::pending() {
  std::lock_guard lk(mu_);
  return submitted_ - completed_;
}

}  // namespace gwsim
