// SPDX-License-Identifier: Apache-2.0
#include "analysis/percentile.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace gpuwhy::analysis {

size_t nearest_rank_index(size_t n, double p) {
  if (n == 0) return 0;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(n));
  const size_t r = rank < 1 ? 1 : static_cast<size_t>(rank);
  return std::min(r, n) - 1;
}

int64_t percentile(std::vector<int64_t>& v, double p) {
  return v.empty() ? 0 : percentile_at(v, nearest_rank_index(v.size(), p));
}

void DurHistogram::add(const DurHistogram& other) {
  if (other.count_ == 0) return;
  if (counts_.empty()) counts_.assign(kBuckets, 0);
  for (size_t b = 0; b < kBuckets; ++b) counts_[b] += other.counts_[b];
  max_ = count_ == 0 ? other.max_ : std::max(max_, other.max_);
  count_ += other.count_;
  total_ = saturating_add(total_, other.total_);
}

DurHistogram::Rank DurHistogram::locate(uint64_t k) const {
  size_t b = 0;
  while (b + 1 < counts_.size() && k >= counts_[b]) k -= counts_[b++];
  return {b, static_cast<size_t>(k)};
}

DurStats summarize(std::span<const int64_t> v) {
  DurStats s;
  if (v.empty()) return s;
  DurHistogram h;
  for (int64_t d : v) h.add(d);
  s.count = h.count();
  s.total_ns = h.total();
  s.max = h.max();
  for (size_t i = 0; i < std::size(kSummaryPercentiles); ++i) {
    const DurHistogram::Rank r = h.locate(nearest_rank_index(v.size(), kSummaryPercentiles[i]));
    std::vector<int64_t> in_bucket;
    for (int64_t d : v)
      if (DurHistogram::bucket(d) == r.bucket) in_bucket.push_back(d);
    s.*kSummaryFields[i] = percentile_at(in_bucket, r.in_bucket);
  }
  return s;
}

int64_t percentile_at(std::vector<int64_t>& v, size_t k) {
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(k), v.end());
  return v[k];
}

int64_t median_of(std::vector<int64_t> v) { return percentile(v, 50); }

}  // namespace gpuwhy::analysis
