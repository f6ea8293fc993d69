// SPDX-License-Identifier: Apache-2.0
// Where a command's time goes, at debug level (-vv): "explain: load 0.41 s (cpu 0.70), joins
// 0.12 s (cpu 0.20), ...". The process's CPU time beside each wall time says what a phase costs
// on a loaded machine too, and how well its threads run in parallel. Costs four clock reads per
// phase; nothing is printed unless debug logging is on.
#pragma once

#include <spdlog/spdlog.h>
#include <time.h>

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
    const int64_t now = monotonic_ns(), cpu = cpu_ns();
    if (!parts_.empty()) parts_ += ", ";
    parts_ += fmt::format("{} {:.3f} s (cpu {:.3f})", phase, static_cast<double>(now - last_) / 1e9,
                          static_cast<double>(cpu - last_cpu_) / 1e9);
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
};

}  // namespace gpuwhy
