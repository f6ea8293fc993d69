// SPDX-License-Identifier: Apache-2.0
#include "analysis/devices.hpp"

#include <algorithm>
#include <climits>

namespace gpuwhy::analysis {

// An ordinal beyond any real machine's GPUs is not a device: a capture gone wrong.
constexpr uint64_t kMaxOrdinal = 1024;

DeviceMap::DeviceMap(const TraceRows& rows) {
  for (const CallRow& c : rows.memory_calls) {
    if (c.cat != Category::Device) continue;
    const CallExt& e = rows.ext(c);
    if (e.ret != 0 || e.addr >= kMaxOrdinal) continue;  // a failed call changes nothing
    // In effect from its return: calls of the thread made after it (a thread's calls are
    // sequential, so none begins between its entry and its return).
    changes_[c.tid].emplace_back(c.end(), static_cast<int>(e.addr));
  }
  for (auto& [tid, v] : changes_)
    std::stable_sort(v.begin(), v.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
}

int DeviceMap::device_of(uint32_t tid, int64_t ts) const {
  if (changes_.empty()) return 0;  // most traces: no thread selected a device, no lookup per call
  const auto it = changes_.find(tid);
  if (it == changes_.end()) return 0;
  const auto& v = it->second;
  // The last selection that returned at or before ts.
  auto after =
      std::upper_bound(v.begin(), v.end(), ts,
                       [](int64_t t, const std::pair<int64_t, int>& c) { return t < c.first; });
  return after == v.begin() ? 0 : std::prev(after)->second;
}

}  // namespace gpuwhy::analysis
