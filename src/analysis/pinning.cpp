// SPDX-License-Identifier: Apache-2.0
#include "analysis/pinning.hpp"

#include <algorithm>
#include <cstddef>

namespace gpuwhy::analysis {

double pinned_copy_rate(const std::vector<std::pair<uint64_t, int64_t>>& samples) {
  std::vector<double> rates;
  for (const auto& [bytes, ns] : samples)
    if (ns > 0) rates.push_back(static_cast<double>(bytes) * 1e9 / static_cast<double>(ns));
  if (rates.empty()) return 0;
  const auto mid = rates.begin() + static_cast<std::ptrdiff_t>(rates.size() / 2);
  std::nth_element(rates.begin(), mid, rates.end());
  return *mid;
}

PinningEstimate estimate_pinning(uint64_t pageable_bytes, int64_t pageable_ns,
                                 uint64_t measured_bytes, double measured_bytes_per_s) {
  PinningEstimate e;
  e.pageable_bytes = pageable_bytes;
  e.pageable_ns = pageable_ns;
  if (measured_bytes >= kPinnedRateMinBytes && measured_bytes_per_s > 0) {
    e.pinned_bytes_per_s = measured_bytes_per_s;
    e.rate_observed = true;
  }
  e.at_pinned_ns =
      static_cast<int64_t>(static_cast<double>(pageable_bytes) * 1e9 / e.pinned_bytes_per_s);
  e.returns_ns = std::max<int64_t>(0, pageable_ns - e.at_pinned_ns);
  return e;
}

}  // namespace gpuwhy::analysis
