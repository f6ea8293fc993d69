// SPDX-License-Identifier: Apache-2.0
// Writes the ground-truth JSON file (GWSIM_TRUTH) that tests compare the tracer's numbers with.
// The format is documented in tests/sim/README.md; bump kTruthFormat on incompatible changes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "device/config.hpp"
#include "device/engine.hpp"
#include "device/stats.hpp"

namespace gwsim {

inline constexpr const char* kTruthFormat = "gwsim-truth/1";

struct TruthInput {
  const Config* config = nullptr;
  EngineTotals totals{};
  uint64_t pending_at_exit = 0;
  uint64_t start_ns = 0;  // CLOCK_MONOTONIC when the device model started
  uint64_t end_ns = 0;
  std::vector<std::pair<int, EngineTotals>> devices;  // per device ordinal used
};

// "%p" in the configured path becomes the process id.
std::string expand_truth_path(const std::string& pattern);

// Renders the file; false (with a message on stderr) when it cannot be written.
bool write_truth(const std::string& path, const TruthInput& in, Stats& stats);

}  // namespace gwsim
