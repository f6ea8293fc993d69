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

// Reads exactly `n` bytes from `fd` (a batch from the loader); exits the process on EOF or error.
void read_batch(int fd, void* buf, size_t n);

}  // namespace gw
