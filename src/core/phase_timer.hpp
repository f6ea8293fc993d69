// SPDX-License-Identifier: Apache-2.0
// Where a command's time and memory go, at debug level (-vv): "explain: load 0.41 s (cpu 0.70,
// rss 310 MB), joins 0.12 s (cpu 0.20, rss 402 MB), ...". The process's CPU time beside each wall
// time says what a phase costs on a loaded machine too, and how well its threads run in parallel;
// the resident size at the end of each phase says which one holds the memory. Costs four clock
// reads and one read of /proc/self/statm per phase; nothing is printed unless debug logging is on.
#pragma once

#include <spdlog/spdlog.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "core/clock.hpp"

namespace gpuwhy {

class PhaseTimer {
 public:
  explicit PhaseTimer(std::string what)
      : what_(std::move(what)), last_(monotonic_ns()), last_cpu_(cpu_ns()) {}
  ~PhaseTimer() {
    if (!parts_.empty()) spdlog::debug("{}: {}", what_, parts_);
  }
  // Ends the phase that began at construction or at the previous lap.
  void lap(const char* phase) {
    if (!spdlog::should_log(spdlog::level::debug)) return;
    const int64_t now = monotonic_ns(), cpu = cpu_ns();
    if (!parts_.empty()) parts_ += ", ";
    parts_ += fmt::format("{} {:.3f} s (cpu {:.3f}, rss {} MB)", phase,
                          static_cast<double>(now - last_) / 1e9,
                          static_cast<double>(cpu - last_cpu_) / 1e9, resident_mb());
    last_ = now;
    last_cpu_ = cpu;
  }

 private:
  std::string what_;
  std::string parts_;
  int64_t last_;
  int64_t last_cpu_;

  static int64_t cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }
  // Resident now (not the peak: a phase that frees what the previous one built shows it).
  static long resident_mb() {
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
      std::fclose(f);
    }
    return resident * sysconf(_SC_PAGESIZE) / (1024 * 1024);
  }
};

}  // namespace gpuwhy
