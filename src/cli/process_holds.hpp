// SPDX-License-Identifier: Apache-2.0
// Processes the dynamic linker's hook stopped (bpf/proc.bpf.h, gw_rtld_debug_state) until the
// GPU runtime file they mapped is probed. Each is continued (SIGCONT) by the discovery loop once
// the probes are attached, by a watchdog thread once it has waited `bound` (a counted loss: its
// first calls may run unprobed), or at the end of the trace: never left stopped by the agent.
// A guardian process outlives an agent killed with SIGKILL and continues the processes it held:
// those it was told of, and those the kernel listed in gw_held_pids whose ring record the agent
// died before reading.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

namespace gpuwhy::cli {

class ProcessHolds {
 public:
  // `held_map_fd`: the kernel's list of stopped pids (Probes::held_pids_map_fd), or -1.
  ProcessHolds(std::chrono::milliseconds bound, int held_map_fd);
  ~ProcessHolds();  // continues every process still held
  ProcessHolds(const ProcessHolds&) = delete;
  ProcessHolds& operator=(const ProcessHolds&) = delete;

  // The kernel said it stopped `pid` (a GW_LIB_HELD hint).
  void held(uint32_t pid);
  // Continues `pid`. False when it was not held by us any more: the watchdog had continued it
  // after the bound, or it was never held.
  bool release(uint32_t pid);
  // Continues every process still held (the trace is stopping).
  void release_all();
  // Continues a process the kernel stopped whose hint was never handled (one still queued when
  // the trace stops).
  void continue_unseen(uint32_t pid);
  uint64_t held_total() const;

 private:
  void watch();
  void start_guardian();
  void continue_pid(uint32_t pid);  // SIGCONT, and off the kernel's list (mu_ held)
  using Clock = std::chrono::steady_clock;
  const std::chrono::milliseconds bound_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint32_t, Clock::time_point> held_;  // pid -> when the hint came
  uint64_t held_total_ = 0;
  bool stopping_ = false;
  int held_map_fd_ = -1;
  int guardian_fd_ = -1;  // write end: a held pid, 4 bytes; EOF tells the guardian to act
  pid_t guardian_ = -1;
  std::thread watchdog_;
};

}  // namespace gpuwhy::cli
