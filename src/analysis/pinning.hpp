// SPDX-License-Identifier: Apache-2.0
// What pinning host memory would return: the pageable copies' time, less what the same bytes
// would take at the pinned rate. One function, called by explain's transfer_bound chain (which
// puts the figures in its metrics) and read back from there by the audit's transfer lever, so
// the two never disagree.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace gpuwhy::analysis {

// The rate when the trace has too few measurable pinned copies: a PCIe 4 x16 link's ~25 GB/s.
constexpr double kDefaultPinnedBytesPerS = 25e9;
// Pinned bytes a measured rate needs: below this, a few small copies' fixed costs would decide it.
constexpr uint64_t kPinnedRateMinBytes = 64ull << 20;

struct PinningEstimate {
  uint64_t pageable_bytes = 0;
  int64_t pageable_ns = 0;  // the pageable copies' time (with the CPU in hand)
  double pinned_bytes_per_s = kDefaultPinnedBytesPerS;
  bool rate_observed = false;  // measured from this trace's pinned copies, else the default
  int64_t at_pinned_ns = 0;    // the pageable bytes at that rate
  int64_t returns_ns = 0;      // pageable_ns - at_pinned_ns, at least 0
};

// `measured_bytes`: what the pinned copies that measure the rate moved (pinned_copy_rate says
// which); `measured_bytes_per_s`: their rate. Below kPinnedRateMinBytes, the default rate.
PinningEstimate estimate_pinning(uint64_t pageable_bytes, int64_t pageable_ns,
                                 uint64_t measured_bytes, double measured_bytes_per_s);

// The pinned rate from per-copy samples (bytes, ns): the median of their rates. The samples are
// synchronous copies of at least kRateSampleMinBytes from or to pinned memory that did not first
// wait for queued work (an async copy returns once queued; a small one's time is its fixed cost),
// each timed from its start to the GPU's completion (its wall time less the wake-up tail: time
// it was runnable waiting for a CPU after the copy ended). The median, because a copy whose
// thread was preempted before it queued the DMA reads slower, and one still preempted after
// queueing would read faster if that time were taken out.
constexpr uint64_t kRateSampleMinBytes = 1ull << 20;
double pinned_copy_rate(const std::vector<std::pair<uint64_t, int64_t>>& samples);

}  // namespace gpuwhy::analysis
