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
  if (v.empty()) return 0;
  const size_t k = nearest_rank_index(v.size(), p);
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(k), v.end());
  return v[k];
}

DurStats summarize(std::vector<int64_t>& v) {
  DurStats s;
  s.count = v.size();
  if (v.empty()) return s;
  for (int64_t d : v) s.total_ns += d;
  // Each selection narrows the range the next one works on: the p90 lies right of the p50.
  const size_t k50 = nearest_rank_index(v.size(), 50);
  const size_t k90 = nearest_rank_index(v.size(), 90);
  const size_t k99 = nearest_rank_index(v.size(), 99);
  auto at = [&](size_t k) { return v.begin() + static_cast<ptrdiff_t>(k); };
  std::nth_element(v.begin(), at(k50), v.end());
  s.p50 = v[k50];
  std::nth_element(at(k50), at(k90), v.end());
  s.p90 = v[k90];
  std::nth_element(at(k90), at(k99), v.end());
  s.p99 = v[k99];
  s.max = *std::max_element(at(k99), v.end());
  return s;
}

int64_t median_of(std::vector<int64_t> v) { return percentile(v, 50); }

}  // namespace gpuwhy::analysis
