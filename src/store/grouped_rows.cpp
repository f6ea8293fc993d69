// SPDX-License-Identifier: Apache-2.0
#include "store/grouped_rows.hpp"

#include <algorithm>
#include <numeric>

namespace gpuwhy::store {

namespace {
constexpr int64_t kSmallKeys = int64_t{1} << 16;
}  // namespace

size_t GroupedRows::KeyHash::operator()(const Key& k) const {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (const KeyPart& p : k) {
    h ^= static_cast<uint64_t>(p.v) + (p.null ? 0x51ed27ull : 0) + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
  }
  return static_cast<size_t>(h ^ (h >> 33));
}

GroupedRows::GroupedRows(uint32_t width, std::vector<bool> desc, KeyOf key_of, size_t max_groups)
    : stride_(1 + width), desc_(std::move(desc)), key_of_(std::move(key_of)),
      max_groups_(max_groups) {}

bool GroupedRows::less(const Key& a, const Key& b) const {
  for (size_t t = 0; t < desc_.size(); ++t) {
    const KeyPart& x = a[t];
    const KeyPart& y = b[t];
    if (x == y) continue;
    // NULL first ascending, last descending (SQLite's order: NULL is the smallest value).
    const bool lt = x.null != y.null ? x.null : x.v < y.v;
    return desc_[t] ? !lt : lt;
  }
  return false;
}

uint32_t GroupedRows::group_of(const Key& k) {
  // The common case, one small key (an API id, a label's rank, an op): an array, not a hash.
  if (desc_.size() == 1 && !k[0].null && k[0].v >= 0 && k[0].v < kSmallKeys) {
    if (small_.empty()) small_.assign(kSmallKeys, UINT32_MAX);
    uint32_t& g = small_[static_cast<size_t>(k[0].v)];
    if (g == UINT32_MAX) {
      g = static_cast<uint32_t>(group_keys_.size());
      group_keys_.push_back(k);
      groups_.emplace_back();
    }
    return g;
  }
  auto [it, added] = index_.try_emplace(k, static_cast<uint32_t>(group_keys_.size()));
  if (added) {
    group_keys_.push_back(k);
    groups_.emplace_back();
  }
  return it->second;
}

// Too many distinct keys to count rows into (a GROUP BY ts): order() sorts the rows instead.
void GroupedRows::give_up_groups() {
  too_many_groups_ = true;
  size_t words = 0;
  for (const auto& g : groups_) words += g.size();
  flat_.reserve(words);
  for (auto& g : groups_) {
    flat_.insert(flat_.end(), g.begin(), g.end());
    g = {};
  }
  groups_ = {};
  group_keys_ = {};
  index_ = {};
  small_ = {};
}

void GroupedRows::add(uint32_t handle, const int64_t* values, uint32_t nulls) {
  std::vector<int64_t>* to = &flat_;
  if (!too_many_groups_) {
    Key k{};
    key_of_(values, nulls, k);
    to = &groups_[group_of(k)];
  }
  to->push_back(static_cast<int64_t>(uint64_t{handle} | uint64_t{nulls} << 32));
  to->insert(to->end(), values, values + (stride_ - 1));
  ++rows_;
  if (!too_many_groups_ && group_keys_.size() > max_groups_) give_up_groups();
}

void GroupedRows::order() {
  if (too_many_groups_) {
    perm_.resize(rows_);
    std::iota(perm_.begin(), perm_.end(), 0u);
    auto key_at = [&](uint32_t r, Key& k) {
      const int64_t* row = &flat_[size_t{r} * stride_];
      key_of_(row + 1, static_cast<uint32_t>(static_cast<uint64_t>(row[0]) >> 32), k);
    };
    std::stable_sort(perm_.begin(), perm_.end(), [&](uint32_t a, uint32_t b) {
      Key ka{}, kb{};
      key_at(a, ka);
      key_at(b, kb);
      return less(ka, kb);
    });
  } else {
    group_order_.resize(group_keys_.size());
    std::iota(group_order_.begin(), group_order_.end(), 0u);
    std::sort(group_order_.begin(), group_order_.end(),
              [&](uint32_t a, uint32_t b) { return less(group_keys_[a], group_keys_[b]); });
  }
  at_ = g_ = off_ = 0;
  settle();
}

// Points row_ at the at_-th row, stepping past exhausted groups.
void GroupedRows::settle() {
  if (at_end()) {
    row_ = nullptr;
    return;
  }
  if (too_many_groups_) {
    row_ = &flat_[size_t{perm_[at_]} * stride_];
    return;
  }
  while (off_ >= groups_[group_order_[g_]].size()) {
    ++g_;
    off_ = 0;
  }
  row_ = &groups_[group_order_[g_]][off_];
}

void GroupedRows::next() {
  ++at_;
  off_ += stride_;
  settle();
}

}  // namespace gpuwhy::store
