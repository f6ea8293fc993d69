// SPDX-License-Identifier: Apache-2.0
// The host half of the ground truth: how often each API was called, and per thread how long it
// was blocked inside the simulator's waits, how much CPU the simulator burnt on its behalf and
// how long it slept on purpose (an injected straggler delay).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gwsim {

// One per exported function that has been called. Owned by Stats and never freed, so a front can
// cache the pointer in a function-local static.
struct ApiCounter {
  explicit ApiCounter(std::string n) : name(std::move(n)) {}
  const std::string name;
  std::atomic<uint64_t> calls{0};
};

struct BlockedTime {
  uint64_t ns = 0;
  uint64_t count = 0;
};

struct ThreadStats {
  pid_t tid = 0;
  std::string name;
  BlockedTime blocked;                        // every wait the simulator did for this thread
  std::map<std::string, BlockedTime> by_api;  // the same, split by the API that waited
  uint64_t sleep_ns = 0;                      // injected delays (GWSIM_STRAGGLE_MS)
  uint64_t cpu_burn_ns = 0;  // host CPU the simulator spent (launch, alloc, staging)
};

class Stats {
 public:
  ApiCounter* api(const char* name);

  // Accounted to the calling thread.
  void add_blocked(const ApiCounter* api, uint64_t ns);
  void add_sleep(uint64_t ns);
  void add_burn(uint64_t ns);

  // Extra top-level members of the truth file contributed by a front (the NCCL communicators):
  // `render` returns a JSON value, called when the file is written.
  void add_section(std::string key, std::function<std::string()> render);

  std::vector<std::pair<std::string, uint64_t>> calls();
  std::vector<ThreadStats> threads();
  std::vector<std::pair<std::string, std::string>> sections();

 private:
  ThreadStats& current_thread();  // requires mu_

  std::mutex mu_;
  std::vector<std::unique_ptr<ApiCounter>> apis_;
  std::map<pid_t, ThreadStats> threads_;
  std::vector<std::pair<std::string, std::function<std::string()>>> sections_;
};

}  // namespace gwsim
