// SPDX-License-Identifier: Apache-2.0
// The reader thread: polls both ring buffers every few milliseconds (the BPF side does not wake it
// per event), decodes records, and hands batches to the writer. Discovery hints (exec, a GPU
// library mapped) are also copied to a small side queue for the discovery loop.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "reader/batch_queue.hpp"

struct ring_buffer;

namespace gpuwhy::reader {

struct ReaderStats {
  std::array<std::atomic<uint64_t>, 16> by_kind{};  // index: gw_event_kind
  std::atomic<uint64_t> decode_errors{0};
  std::atomic<uint64_t> total{0};
};

class HintQueue {
 public:
  // `urgent`: a process waits on it (held by the dynamic linker's hook): wake the discovery loop.
  void push(Event e, bool urgent = false) {
    {
      std::lock_guard lock(mu_);
      q_.push_back(std::move(e));
      urgent_ = urgent_ || urgent;
    }
    if (urgent) cv_.notify_one();
  }
  // Waits up to `timeout` for an urgent hint.
  void wait(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [this] { return urgent_; });
    urgent_ = false;
  }
  std::vector<Event> take() {
    std::lock_guard lock(mu_);
    std::vector<Event> out;
    out.swap(q_);
    return out;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Event> q_;
  bool urgent_ = false;
};

class RingReader {
 public:
  struct Options {
    int poll_ms = 5;           // how often to look at the rings without a wakeup
    size_t batch_max = 16384;  // events per batch handed to the writer
    int flush_ms = 100;        // a partial batch is handed over at least this often
    // Called on the reader thread for every call or CPU sample that carries a user stack, within
    // milliseconds of it: the moment to look at the process while it surely lives. Keep it cheap.
    std::function<void(uint32_t pid, int32_t stack_id)> on_stack;
    // Called on the reader thread for every call or CPU sample that carries a Python stack key:
    // returns the stack's id (ApiCall::py_stack_id, CpuSample::py_stack_id), naming its frames
    // the first time it comes.
    std::function<int32_t(uint32_t pid, uint64_t key)> on_python_stack;
    // Called on the reader thread with each batch just before it goes to the writer (live
    // metrics, trace --metrics). Must not block.
    std::function<void(const Batch&)> on_batch;
  };

  RingReader(ClockConverter clock, BatchQueue& out, HintQueue& hints, Options opt);
  ~RingReader();
  Status open(int events_fd, int lifecycle_fd);

  // Runs until `stop` is set, then consumes what is left in the rings and returns.
  void run(const std::atomic<bool>& stop);
  // One more full drain (after the probes were detached at shutdown).
  void drain();
  // A record that did not come through the rings (a launch batch read from task storage at stop),
  // handled like one that did. Only while run() is not running.
  void inject(const void* data, size_t size);

  const ReaderStats& stats() const { return stats_; }

 private:
  static int on_record(void* ctx, void* data, size_t size);
  void handle(const void* data, size_t size);
  void handle_launches(const void* data, size_t size);
  void add(Event ev);
  void flush();

  ClockConverter clock_;
  BatchQueue& out_;
  HintQueue& hints_;
  Options opt_;
  ring_buffer* rb_ = nullptr;
  Batch batch_;
  std::vector<Event> launches_;  // one decoded launch batch
  ReaderStats stats_;
};

}  // namespace gpuwhy::reader
