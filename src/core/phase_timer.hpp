// SPDX-License-Identifier: Apache-2.0
// Where a command's time goes, at debug level (-vv): "explain: load 0.41 s, joins 0.12 s, ...".
// Costs two clock reads per phase; nothing is printed unless debug logging is on.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

#include "core/clock.hpp"

namespace gpuwhy {

class PhaseTimer {
 public:
  explicit PhaseTimer(std::string what) : what_(std::move(what)), last_(monotonic_ns()) {}
  ~PhaseTimer() {
    if (!parts_.empty()) spdlog::debug("{}: {}", what_, parts_);
  }
  // Ends the phase that began at construction or at the previous lap.
  void lap(const char* phase) {
    const int64_t now = monotonic_ns();
    if (!parts_.empty()) parts_ += ", ";
    parts_ += fmt::format("{} {:.3f} s", phase, static_cast<double>(now - last_) / 1e9);
    last_ = now;
  }

 private:
  std::string what_;
  std::string parts_;
  int64_t last_;
};

}  // namespace gpuwhy
