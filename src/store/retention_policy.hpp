// SPDX-License-Identifier: Apache-2.0
// The flight recorder's arithmetic (trace --keep / --max-size), apart from SQLite so that it can
// be tested alone: how a size budget is shared between the database file and its write-ahead
// log, when the oldest data must go, and which time cut frees enough bytes. The store applies it
// (retention.hpp); docs/architecture.md "Flight recorder" says why it is shaped this way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpuwhy::store {

// What `trace --keep DURATION --max-size SIZE` asks for; 0: no limit of that kind.
struct RetentionOptions {
  int64_t keep_ns = 0;
  uint64_t max_bytes = 0;
  // Test-only (trace --age-check-ms): how often the age limit is applied.
  int64_t age_check_ns = 1'000'000'000;
  bool on() const { return keep_ns > 0 || max_bytes > 0; }
};

// What the age-outs dropped so far (the `retention` row).
struct RetentionTotals {
  std::optional<int64_t> window_start_ns;  // every event ending at or after it is kept
  uint64_t age_outs = 0, events = 0, bytes = 0;
  uint64_t dropped = 0;  // events not written: the log's share was held by a reader (a loss)
};

// The smallest --max-size accepted: the file's fixed tables, a write-ahead log and room for a few
// seconds of a busy trace must fit.
inline constexpr uint64_t kMinMaxBytes = 64ull << 20;

// "64M", "2G", "512K", "1048576" (bytes), "1.5G": K/M/G/T are powers of 1024, an optional
// trailing "B"/"iB" is accepted. nullopt for anything else, zero included.
std::optional<uint64_t> parse_size_bytes(std::string_view text);
// "64 MiB", "2 GiB", "1536 KiB": the largest unit that divides it, else bytes.
std::string format_size(uint64_t bytes);

// How a budget of `max_bytes` for F plus F-wal is split. The database file may grow to
// main_cap_pages (SQLite's max_page_count: a hard limit), the log to wal_cap bytes (the writer
// checks it before each batch); their sum is the budget. The oldest data goes when fewer than
// low_water_pages are free below the cap, until high_water_pages are.
struct BudgetPlan {
  uint64_t wal_cap = 0;
  uint64_t main_cap_pages = 0;
  uint64_t low_water_pages = 0;
  uint64_t high_water_pages = 0;
  int64_t autocheckpoint_pages = 0;  // PRAGMA wal_autocheckpoint
  int64_t journal_size_limit = 0;    // PRAGMA journal_size_limit: the log's size after a restart
};
BudgetPlan plan_budget(uint64_t max_bytes, uint32_t page_size);

// Pages free for new data: those below the cap the file has not used yet, plus its free list.
inline uint64_t room_pages(uint64_t page_count, uint64_t freelist, uint64_t cap_pages) {
  return (cap_pages > page_count ? cap_pages - page_count : 0) + freelist;
}

// Chooses the cut of one size-driven age-out. Chunks are offered oldest first (ascending
// end_max, every table merged); the cut is the end after which the kept data begins: every
// chunk with end_max < cut goes, so chunks that end at the same time go together.
class CutChooser {
 public:
  explicit CutChooser(uint64_t need_bytes) : need_(need_bytes) {}
  // False once enough bytes are offered (the caller stops offering).
  bool offer(int64_t end_max, uint64_t bytes);
  bool enough() const { return freed_ >= need_; }
  bool any() const { return offered_ > 0; }
  // Every chunk ending before this goes (end of the last chunk offered, plus one).
  int64_t cut() const { return last_end_ + 1; }
  uint64_t bytes() const { return freed_; }

 private:
  uint64_t need_ = 0, freed_ = 0, offered_ = 0;
  int64_t last_end_ = INT64_MIN;
};

// The age-out cut for this moment: the latest of the age limit's (now - keep), the size limit's
// and the window's start so far (a chunk written late with rows older than the window goes as
// well); nullopt when neither limit asks for one.
std::optional<int64_t> combine_cuts(std::optional<int64_t> by_age, std::optional<int64_t> by_size,
                                    std::optional<int64_t> window_start);

}  // namespace gpuwhy::store
