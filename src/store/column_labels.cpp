// SPDX-License-Identifier: Apache-2.0
#include "store/column_labels.hpp"

#include <algorithm>

#include "store/sqlite_util.hpp"

namespace gpuwhy::store {

namespace {
constexpr int64_t kSmallIds = 4096;
}  // namespace

Result<std::shared_ptr<const ColumnLabels>> ColumnLabels::load(
    sqlite3* db, std::span<const ChunkedLabel> labels) {
  auto out = std::make_shared<ColumnLabels>();
  for (const ChunkedLabel& spec : labels) {
    Label l;
    auto s = Stmt::prepare(db, spec.lookup, "reading the " + std::string(spec.name) + " labels");
    if (!s) return s.error();
    int rc;
    while ((rc = sqlite3_step(s.value().get())) == SQLITE_ROW) {
      const auto* t = sqlite3_column_text(s.value().get(), 1);
      if (sqlite3_column_type(s.value().get(), 0) != SQLITE_INTEGER || !t) continue;
      l.rows.emplace_back(sqlite3_column_int64(s.value().get(), 0),
                          reinterpret_cast<const char*>(t));
    }
    if (rc != SQLITE_DONE) return sqlite_error(db, "reading the " + std::string(spec.name) + " labels");
    std::sort(l.rows.begin(), l.rows.end());
    for (const auto& [id, text] : l.rows) l.texts.push_back(text);
    std::sort(l.texts.begin(), l.texts.end());
    l.texts.erase(std::unique(l.texts.begin(), l.texts.end()), l.texts.end());
    for (const auto& [id, text] : l.rows) {
      const auto rank = static_cast<int32_t>(
          std::lower_bound(l.texts.begin(), l.texts.end(), text) - l.texts.begin());
      if (id >= 0 && id < kSmallIds) {
        if (l.small.size() <= static_cast<size_t>(id)) l.small.resize(static_cast<size_t>(id) + 1, -1);
        l.small[static_cast<size_t>(id)] = rank;
      } else {
        l.large.emplace(id, rank);
      }
    }
    out->labels_.push_back(std::move(l));
  }
  return std::shared_ptr<const ColumnLabels>(std::move(out));
}

bool ColumnLabels::same_as(const ColumnLabels& o) const {
  if (labels_.size() != o.labels_.size()) return false;
  for (size_t j = 0; j < labels_.size(); ++j)
    if (labels_[j].rows != o.labels_[j].rows) return false;
  return true;
}

}  // namespace gpuwhy::store
