// SPDX-License-Identifier: Apache-2.0
// cpu_hog: the co-runner of the contention scenarios. Busy-spins --threads threads (all named
// after the process, comm "cpu_hog") pinned to --cpu, until SIGTERM, until --seconds pass, or
// until its parent dies (so a crashed test never leaves it spinning).
//
// usage: cpu_hog [--cpu N] [--threads N] [--seconds S]
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "common/args.hpp"
#include "gwsim/clock.hpp"

namespace {

std::atomic<bool> g_stop{false};

void spin(uint64_t deadline_ns) {
  volatile uint64_t sink = 0;
  while (!g_stop.load(std::memory_order_relaxed)) {
    for (int i = 0; i < 100000; ++i) sink = sink + static_cast<uint64_t>(i);
    if (gwsim::now_ns() >= deadline_ns) break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const gw::Args args(argc, argv, {"cpu", "threads", "seconds"}, {},
                      "[--cpu N] [--threads N] [--seconds S (default 120)]");
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return 0;  // the parent died before PDEATHSIG was armed
  signal(SIGTERM, [](int) { g_stop.store(true); });

  if (args.has("cpu")) {
    const auto cpu = static_cast<int>(args.u64("cpu", 0));
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    // Before the threads exist, so that they all inherit the affinity.
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
      std::perror("cpu_hog: sched_setaffinity");
      return 1;
    }
  }
  const uint64_t threads = args.u64("threads", 1);
  if (threads == 0) args.fail("--threads must be at least 1");
  const auto deadline = gwsim::now_ns() + static_cast<uint64_t>(args.f64("seconds", 120) * 1e9);
  std::vector<std::thread> others;
  for (uint64_t i = 1; i < threads; ++i) others.emplace_back(spin, deadline);
  spin(deadline);
  for (auto& t : others) t.join();
  return 0;
}
