// SPDX-License-Identifier: Apache-2.0
// What sim_train plants next to its dispatch threads: the cpu_hog co-runner process
// (contention, launch-drop), the "ckpt-writer" thread that holds the dispatch mutex (lock) and
// the "loader" process that feeds batches through a pipe (input-stall).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>

namespace gw {

// A cpu_hog process spinning `threads` threads on `cpu`; stopped (SIGTERM + reaped) on stop() or
// destruction.
class Hog {
 public:
  Hog() = default;
  Hog(const Hog&) = delete;
  Hog& operator=(const Hog&) = delete;
  ~Hog() { stop(); }

  void start(int cpu, int threads);
  void stop();
  pid_t pid() const { return pid_.load(); }

 private:
  std::atomic<pid_t> pid_{0};
};

// A thread named "ckpt-writer" that, every `period_ns`, holds `mutex` for `hold_ns` (half of it
// serialising on the CPU, half "writing", asleep), the way a checkpoint saver blocks a trainer
// that shares its lock.
class CkptWriter {
 public:
  CkptWriter(std::mutex& mutex, uint64_t hold_ns, uint64_t period_ns);
  CkptWriter(const CkptWriter&) = delete;
  CkptWriter& operator=(const CkptWriter&) = delete;
  ~CkptWriter();

  pid_t tid() const { return tid_.load(); }
  uint64_t holds() const { return holds_.load(); }

 private:
  void run();

  std::mutex& mutex_;
  const uint64_t hold_ns_;
  const uint64_t period_ns_;
  std::atomic<bool> stop_{false};
  std::atomic<pid_t> tid_{0};
  std::atomic<uint64_t> holds_{0};
  std::thread thread_;
};

// A child process named "loader" that writes one `batch_bytes` batch into a pipe every
// `produce_ns` (decoding, augmenting, reading slow storage), the way a DataLoader worker process
// feeds a trainer that waits for its next batch. Stopped (pipe closed, SIGTERM, reaped) on
// destruction.
class Loader {
 public:
  Loader(uint64_t batch_bytes, uint64_t produce_ns);
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;
  ~Loader();

  int fd() const { return fd_; }  // read end: one batch is batch_bytes
  pid_t pid() const { return pid_; }

 private:
  int fd_ = -1;
  pid_t pid_ = 0;
};

// The neighbour scenario's co-runners on one CPU: a thread of this process named like a GPU
// runtime's helper ("cuda-EvtHandlr") that wakes every `period_ns` and runs `run_ns`, preempting
// whoever runs; and a child process of "another job" that first sleeps in short naps under this
// process's name (so a tracer names it early), then renames itself "other_job" (prctl) and runs
// in bursts of 1-5 ms with 100 us sleeps between them. Both pinned to `cpu`; stopped on
// destruction.
class Neighbour {
 public:
  Neighbour(int cpu, uint64_t period_ns, uint64_t run_ns);
  Neighbour(const Neighbour&) = delete;
  Neighbour& operator=(const Neighbour&) = delete;
  ~Neighbour();
  pid_t helper_tid() const { return helper_tid_.load(); }
  pid_t other_pid() const { return other_pid_; }
  uint64_t helper_wakeups() const { return wakeups_.load(); }

 private:
  void helper(int cpu, uint64_t period_ns, uint64_t run_ns);
  std::atomic<bool> stop_{false};
  std::atomic<pid_t> helper_tid_{0};
  std::atomic<uint64_t> wakeups_{0};
  pid_t other_pid_ = 0;
  std::thread thread_;
};

// Reads exactly `n` bytes from `fd` (a batch from the loader); exits the process on EOF or error.
void read_batch(int fd, void* buf, size_t n);

}  // namespace gw
