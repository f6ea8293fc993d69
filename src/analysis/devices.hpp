// SPDX-License-Identifier: Apache-2.0
// Which GPU each call went to. CUDA and HIP keep a current device per thread: a thread that
// never chose one works on device 0, and cudaSetDevice / hipSetDevice change it for that thread
// alone from their return on. The trace records those calls as api_calls rows of category
// "device" (the ordinal in addr), so the device of any call is the last successful selection of
// its thread that returned before it began: a join by time, with no device column on the
// other calls.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/rows.hpp"

namespace gpuwhy::analysis {

class DeviceMap {
 public:
  // From rows.memory_calls (prepare_rows: every selection from the trace start, sorted by ts).
  explicit DeviceMap(const TraceRows& rows);

  // The current device of `tid` at `ts`: 0 until the thread selected one.
  int device_of(uint32_t tid, int64_t ts) const;
  // Did any thread of the trace select a device?
  bool any_selection() const { return !changes_.empty(); }

 private:
  // Per thread, (from when, device), ascending.
  std::unordered_map<uint32_t, std::vector<std::pair<int64_t, int>>> changes_;
};

}  // namespace gpuwhy::analysis
