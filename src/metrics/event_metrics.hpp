// SPDX-License-Identifier: Apache-2.0
// Turns the reader's decoded batches into registry updates, on the reader thread, once per batch
// (just before the batch goes to the writer): per event one visit, a pid lookup (and, once a
// thread has selected a device, a tid lookup) and a few single-writer counter adds; no lock, no
// allocation once a process and its threads' devices are known.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "metrics/registry.hpp"
#include "model/events.hpp"

namespace gpuwhy::metrics {

class EventMetrics {
 public:
  // `process_name`: a live process's name (default: /proc/PID/comm; "" when it is gone). Tests
  // give their own.
  using NameFn = std::function<std::string(uint32_t pid)>;
  explicit EventMetrics(Registry& registry, NameFn process_name = {});

  void observe(const std::vector<Event>& batch);
  // Any thread: a process's name, read while it lived (the agent's scan of a process it probes).
  // A process whose first events reach the reader after it exited (a short job, a reader behind
  // on a loaded host) is named from here instead of "unknown".
  void remember_name(uint32_t pid, std::string name);

 private:
  uint16_t slot_of(uint32_t pid);
  uint8_t device_of(uint32_t tid);  // Registry::device_slot of the thread's current device
  void on(const ApiCall& c);
  void on(const OffCpu& o);
  void on(const ProcEvent& p);
  void on(const TaskRename& r);
  template <class E>
  void on(const E&) {}

  Registry& reg_;
  NameFn name_;
  std::unordered_map<uint32_t, uint16_t> slots_;  // pid -> process slot: the traced processes
  // Processes that exited recently, still named: the two rings are not ordered, so a process's
  // last calls can come after its exit (kept kExitedKeep, then forgotten).
  struct Exited {
    uint16_t slot;
    std::chrono::steady_clock::time_point at;
  };
  std::unordered_map<uint32_t, Exited> exited_;
  std::chrono::steady_clock::time_point next_prune_{};
  // Names from exec and fork events, for a process gone before its first call is counted.
  std::unordered_map<uint32_t, std::string> recent_names_;
  std::mutex scanned_mu_;  // remember_name (main thread) / slot_of (reader): once per process
  std::unordered_map<uint32_t, std::string> scanned_names_;
  uint32_t last_pid_ = 0;
  uint16_t last_slot_ = 0;
  // Each thread's current device (its last successful cudaSetDevice/hipSetDevice; device 0 for
  // a thread that made none, as CUDA has it), until the thread or its process exits.
  struct ThreadDevice {
    uint32_t pid = 0;
    uint8_t device = 0;
  };
  std::unordered_map<uint32_t, ThreadDevice> thread_devices_;
  uint32_t last_device_tid_ = 0;  // a one-entry cache: calls come in runs of one thread
  uint8_t last_device_ = 0;
};

// Which OffCpuCause the sleeping part of an off-CPU interval gets (its runnable part is
// OffCpuCause::Runqueue).
OffCpuCause sleep_cause(const OffCpu& o);

}  // namespace gpuwhy::metrics
