// SPDX-License-Identifier: Apache-2.0
#include "store/grouping_plan.hpp"

#include <cstdio>
#include <cstdlib>

#include "store/grouped_rows.hpp"

namespace gpuwhy::store {

std::string GroupingSpec::text() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(used));
  std::string out = buf;
  for (auto [col, d] : keys) out += " " + std::to_string(col) + " " + (d ? "1" : "0");
  return out;
}

std::optional<GroupingSpec> GroupingSpec::parse(const char* s) {
  if (!s) return std::nullopt;
  GroupingSpec g;
  char* end = nullptr;
  g.used = std::strtoull(s, &end, 16);
  for (;;) {
    char* after = nullptr;
    const long col = std::strtol(end, &after, 10);
    if (after == end) break;
    const long d = std::strtol(after, &end, 10);
    g.keys.emplace_back(static_cast<int>(col), d != 0);
  }
  if (g.keys.empty() || g.keys.size() > kMaxKeyParts) return std::nullopt;
  return g;
}

KeptColumns kept_columns(const ChunkedTable& spec, uint64_t used) {
  const auto ncols = static_cast<uint32_t>(spec.columns.size());
  KeptColumns k;
  k.slot_of.assign(ncols + spec.labels.size(), -1);
  auto keep = [&](uint32_t c) {
    if (k.slot_of[c] < 0) {
      k.slot_of[c] = static_cast<int>(k.stored.size());
      k.stored.push_back(c);
    }
    return k.slot_of[c];
  };
  auto is_used = [&](uint32_t c) { return c >= 63 ? (used >> 63) != 0 : ((used >> c) & 1) != 0; };
  for (uint32_t c = 0; c < ncols; ++c)
    if (is_used(c)) keep(c);
  for (uint32_t j = 0; j < spec.labels.size(); ++j)
    if (is_used(ncols + j)) k.slot_of[ncols + j] = keep(spec.labels[j].source);
  return k;
}

std::optional<GroupingSpec> grouping_for(const ChunkedTable& spec, const sqlite3_index_info* info,
                                         size_t budget_bytes,
                                         const std::function<int64_t()>& stored_rows) {
  if (info->nOrderBy > static_cast<int>(kMaxKeyParts)) return std::nullopt;
  const size_t columns = spec.columns.size() + spec.labels.size();
  GroupingSpec g;
  g.used = info->colUsed;
  for (int i = 0; i < info->nOrderBy; ++i) {
    const auto& o = info->aOrderBy[i];
    if (o.iColumn < 0 || static_cast<size_t>(o.iColumn) >= columns)
      return std::nullopt;  // rowid: the scans' own orders cover it
    g.keys.emplace_back(o.iColumn, o.desc != 0);
    if (o.iColumn < 63) g.used |= uint64_t{1} << o.iColumn;
  }
  const size_t width = kept_columns(spec, g.used).stored.size();
  if (width > 32) return std::nullopt;  // a kept row's NULL bits are 32
  const int64_t rows = stored_rows();
  const double bytes = static_cast<double>(rows) *
                       static_cast<double>(GroupedRows::bytes_per_row(static_cast<uint32_t>(width)));
  if (rows < 0 || bytes > static_cast<double>(budget_bytes)) return std::nullopt;
  return g;
}

}  // namespace gpuwhy::store
