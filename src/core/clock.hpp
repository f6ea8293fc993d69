// SPDX-License-Identifier: Apache-2.0
// BPF stamps CLOCK_MONOTONIC nanoseconds; the trace file stores wall-clock nanoseconds so files
// from several hosts line up. This is the one place that converts.
#pragma once

#include <cstdint>
#include <string>

namespace gpuwhy {

int64_t monotonic_ns();
int64_t wall_ns();
// Wall-clock ns as "YYYY-MM-DD HH:MM:SS UTC", for messages.
std::string format_utc(int64_t wall_ns);

class ClockConverter {
 public:
  // Measures wall - monotonic now, taking the tightest of several samples.
  static ClockConverter calibrate();
  explicit ClockConverter(int64_t mono_to_wall_ns) : offset_(mono_to_wall_ns) {}
  // Modulo 2^64: a damaged record's timestamp near 2^63 must not overflow (the fuzzer found it).
  int64_t to_wall(uint64_t mono_ns) const {
    return static_cast<int64_t>(mono_ns + static_cast<uint64_t>(offset_));
  }
  int64_t offset() const { return offset_; }

 private:
  int64_t offset_;
};

// "5m", "30s", "250ms", "2h", "1500" (seconds) -> ns; -1 when unparsable.
int64_t parse_duration_ns(const char* text);

}  // namespace gpuwhy
