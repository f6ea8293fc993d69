// SPDX-License-Identifier: Apache-2.0
// Time and CPU helpers shared by the simulator and the workloads. Host "work" is spent as real
// CPU time of the calling thread, not wall time, so that a preempted thread takes longer to
// finish it, exactly as real work would: that is what makes CPU contention visible.
#pragma once

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

namespace gwsim {

inline constexpr uint64_t kNsPerSec = 1'000'000'000ull;

inline uint64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * kNsPerSec + static_cast<uint64_t>(ts.tv_nsec);
}

// CLOCK_MONOTONIC, the clock the tracer's BPF timestamps convert from.
inline uint64_t now_ns() { return clock_ns(CLOCK_MONOTONIC); }
inline uint64_t thread_cpu_ns() { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

namespace detail {

inline void spin(uint64_t iterations) {
  volatile uint64_t sink = 0;
  for (uint64_t i = 0; i < iterations; ++i) sink = sink + i;
}

// Spin iterations per nanosecond of CPU time: the fastest of a few samples, so that a burn
// sized with it tends to fall short and top up rather than overshoot.
inline double spin_rate() {
  static const double rate = [] {
    constexpr uint64_t kSample = 200'000;
    double best = 0.05;
    for (int i = 0; i < 3; ++i) {
      const uint64_t t0 = thread_cpu_ns();
      spin(kSample);
      const uint64_t dt = thread_cpu_ns() - t0;
      if (dt > 0 && kSample / static_cast<double>(dt) > best)
        best = kSample / static_cast<double>(dt);
    }
    return best;
  }();
  return rate;
}

}  // namespace detail

// Spends `ns` of this thread's CPU time (busy, on-CPU; takes longer when preempted) and returns
// the CPU time actually spent. The thread CPU clock is a real system call, not a vDSO read, so it
// is read only around calibrated spins, never in a tight loop: host "work" must look like user
// computation to a tracer, not like a storm of clock_gettime calls.
inline uint64_t burn_cpu_ns(uint64_t ns) {
  if (ns == 0) return 0;
  const uint64_t start = thread_cpu_ns();
  uint64_t spent = 0;
  while (spent < ns) {
    detail::spin(static_cast<uint64_t>(static_cast<double>(ns - spent) * detail::spin_rate()) + 1);
    spent = thread_cpu_ns() - start;
  }
  return spent;
}

// Sleeps (off-CPU) until the CLOCK_MONOTONIC instant `deadline_ns`.
inline void sleep_until_ns(uint64_t deadline_ns) {
  timespec ts{static_cast<time_t>(deadline_ns / kNsPerSec),
              static_cast<long>(deadline_ns % kNsPerSec)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

inline void sleep_ns(uint64_t ns) { sleep_until_ns(now_ns() + ns); }

inline pid_t current_tid() { return gettid(); }

inline std::string current_thread_name() {
  char buf[16] = {};
  pthread_getname_np(pthread_self(), buf, sizeof buf);
  return buf;
}

}  // namespace gwsim
