// SPDX-License-Identifier: Apache-2.0
// Adaptive launch timing (issue 33) as a trace file states it: the probe_families row the agent
// writes and explain reads. A thread launching above a rate records the launches it does not
// sample at entry only: counted and placed exactly, without a duration. The detail carries both
// numbers so that an offline reader can say how the durations it shows were derived.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace gpuwhy {

// probe_families.family; state "sampled" (adaptive) or "on" (every launch timed).
inline constexpr std::string_view kLaunchTimingFamily = "launch_timing";

struct LaunchTiming {
  uint32_t untimed_above_per_s = 0;  // launches a second and thread; 0: every launch timed
  uint32_t timed_one_in = 1;         // a fast thread still times 1 launch in this many
};

inline std::string launch_timing_detail(const LaunchTiming& t) {
  return "a thread above " + std::to_string(t.untimed_above_per_s) +
         " launches/s times 1 launch in " + std::to_string(t.timed_one_in) +
         " and records the others at entry only";
}

// The numbers back from a detail launch_timing_detail wrote; {0, 1} for any other text.
inline LaunchTiming parse_launch_timing(const std::string& detail) {
  LaunchTiming t;
  unsigned above = 0, one_in = 0;
  if (std::sscanf(detail.c_str(), "a thread above %u launches/s times 1 launch in %u", &above,
                  &one_in) == 2 &&
      one_in > 0) {
    t.untimed_above_per_s = above;
    t.timed_one_in = one_in;
  }
  return t;
}

}  // namespace gpuwhy
