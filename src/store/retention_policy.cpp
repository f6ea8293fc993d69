// SPDX-License-Identifier: Apache-2.0
#include "store/retention_policy.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace gpuwhy::store {

std::optional<uint64_t> parse_size_bytes(std::string_view text) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.'))
    return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !(v > 0) || !std::isfinite(v)) return std::nullopt;
  std::string unit(end);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.ends_with("IB"))
    unit.resize(unit.size() - 2);
  else if (unit.size() > 1 && unit.ends_with("B"))
    unit.pop_back();
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K")
    scale = 1024.0;
  else if (unit == "M")
    scale = 1024.0 * 1024;
  else if (unit == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return std::nullopt;
  const double bytes = v * scale;
  if (bytes < 1 || bytes > 9.0e18) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::string format_size(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  size_t u = 0;
  uint64_t v = bytes;
  while (u + 1 < std::size(kUnits) && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + " " + kUnits[u];
}

BudgetPlan plan_budget(uint64_t max_bytes, uint32_t page_size) {
  BudgetPlan p;
  // An eighth for the log, at most 64 MiB (what an unbounded trace lets it reach), at least 1
  // MiB (a batch and an age-out): it restarts after each complete checkpoint, so it only needs to
  // hold what arrives between two of them, plus what a slow reader holds back.
  p.wal_cap = std::clamp<uint64_t>(max_bytes / 8, 1u << 20, 64u << 20);
  const uint64_t main = max_bytes > p.wal_cap ? max_bytes - p.wal_cap : 0;
  p.main_cap_pages = main / page_size;
  // Age out when less than a sixteenth is free, down to an eighth free: a few age-outs per budget
  // turnover, each a large delete, rather than one per batch.
  p.low_water_pages = std::max<uint64_t>(p.main_cap_pages / 16, 16);
  p.high_water_pages = std::max<uint64_t>(p.main_cap_pages / 8, 2 * p.low_water_pages);
  // The writer checkpoints (and the log restarts) every quarter of the log's share; after a
  // restart the file is cut back to that quarter.
  p.autocheckpoint_pages = static_cast<int64_t>(std::max<uint64_t>(p.wal_cap / 4 / page_size, 16));
  p.journal_size_limit = static_cast<int64_t>(p.wal_cap / 4);
  return p;
}

bool CutChooser::offer(int64_t end_max, uint64_t bytes) {
  // Chunks ending together go together, whatever `need` says.
  if (enough() && end_max > last_end_) return false;
  freed_ += bytes;
  ++offered_;
  last_end_ = std::max(last_end_, end_max);
  return true;
}

std::optional<int64_t> combine_cuts(std::optional<int64_t> by_age, std::optional<int64_t> by_size,
                                    std::optional<int64_t> window_start) {
  if (!by_age && !by_size) return std::nullopt;
  int64_t cut = INT64_MIN;
  for (const auto& c : {by_age, by_size, window_start})
    if (c) cut = std::max(cut, *c);
  return cut;
}

}  // namespace gpuwhy::store
