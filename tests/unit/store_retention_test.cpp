// SPDX-License-Identifier: Apache-2.0
// The flight recorder without the kernel: the budget arithmetic and the choice of the cut
// (retention_policy), then a TraceWriter with --max-size / --keep driven past its budget by
// hand-made batches: the file stays within it after every batch, the newest window is intact,
// the counts add up with the retention record, rollups follow their chunks, readers see a valid
// trace while the writer ages out, and explain starts its report at the window's start.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <random>

#include "analysis/explain.hpp"
#include "analysis/loader.hpp"
#include "core/clock.hpp"
#include "store/retention_policy.hpp"
#include "store_fixture.hpp"

namespace gpuwhy {
namespace {

using namespace gpuwhy::testing;
using store::CutChooser;
using store::parse_size_bytes;

TEST(RetentionPolicy, SizesTakeBinarySuffixes) {
  EXPECT_EQ(parse_size_bytes("64M"), 64ull << 20);
  EXPECT_EQ(parse_size_bytes("2G"), 2ull << 30);
  EXPECT_EQ(parse_size_bytes("512K"), 512ull << 10);
  EXPECT_EQ(parse_size_bytes("64MiB"), 64ull << 20);
  EXPECT_EQ(parse_size_bytes("64mb"), 64ull << 20);
  EXPECT_EQ(parse_size_bytes("1.5G"), 3ull << 29);
  EXPECT_EQ(parse_size_bytes("4096"), 4096u);
  for (const char* bad : {"", "M", "abc", "0", "-1M", "5X", "0.0001"})
    EXPECT_FALSE(parse_size_bytes(bad).has_value()) << bad;
  EXPECT_EQ(store::format_size(64ull << 20), "64 MiB");
  EXPECT_EQ(store::format_size(1536ull << 10), "1536 KiB");
  EXPECT_EQ(store::format_size(1000), "1000 bytes");
}

TEST(RetentionPolicy, BudgetIsSharedBetweenFileAndLog) {
  for (uint64_t budget :
       {uint64_t{4} << 20, store::kMinMaxBytes, uint64_t{2} << 30, uint64_t{64} << 30}) {
    const store::BudgetPlan p = store::plan_budget(budget, 4096);
    EXPECT_LE(p.main_cap_pages * 4096 + p.wal_cap, budget) << budget;
    EXPECT_LE(p.wal_cap, 64u << 20);
    EXPECT_LT(p.low_water_pages, p.high_water_pages);
    EXPECT_LT(p.high_water_pages, p.main_cap_pages);
    EXPECT_LE(static_cast<uint64_t>(p.journal_size_limit), p.wal_cap);
  }
  EXPECT_EQ(store::room_pages(100, 5, 120), 25u);
  EXPECT_EQ(store::room_pages(130, 5, 120), 5u);
}

TEST(RetentionPolicy, CutTakesTheOldestChunksAndTheirTies) {
  CutChooser c(150);
  EXPECT_TRUE(c.offer(10, 100));
  EXPECT_TRUE(c.offer(20, 100));
  EXPECT_TRUE(c.enough());
  EXPECT_TRUE(c.offer(20, 50));    // ends with the last one taken: goes with it
  EXPECT_FALSE(c.offer(30, 100));  // not needed
  EXPECT_EQ(c.cut(), 21);
  EXPECT_EQ(c.bytes(), 250u);

  CutChooser all(1000);  // asks for more than there is: everything offered goes
  EXPECT_TRUE(all.offer(5, 10));
  EXPECT_TRUE(all.offer(7, 10));
  EXPECT_FALSE(all.enough());
  EXPECT_TRUE(all.any());
  EXPECT_EQ(all.cut(), 8);
  EXPECT_FALSE(CutChooser(1).any());
}

TEST(RetentionPolicy, CutsCombine) {
  using store::combine_cuts;
  EXPECT_FALSE(combine_cuts(std::nullopt, std::nullopt, 50).has_value());
  EXPECT_EQ(combine_cuts(10, std::nullopt, std::nullopt), 10);
  EXPECT_EQ(combine_cuts(10, 30, std::nullopt), 30);
  EXPECT_EQ(combine_cuts(40, 30, std::nullopt), 40);
  // Never behind the window already aged out: late chunks older than it go too.
  EXPECT_EQ(combine_cuts(10, 20, 50), 50);
}

uint64_t size_of(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

std::unique_ptr<store::TraceWriter> make_recorder(const std::string& path,
                                                  const store::RetentionOptions& r) {
  auto w = store::TraceWriter::create(path, session_info(), r);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : w.error().line());
  return w.ok() ? std::move(w.value()) : nullptr;
}

// One full chunk of calls with pointers that do not compress (about 20 KiB encoded), and a few
// off-CPU intervals of the same thread, all in [t0, t0 + 4.1 ms).
std::vector<Event> busy_chunk(int64_t t0, uint32_t tid, std::mt19937_64& rng) {
  std::vector<Event> out;
  for (uint32_t i = 0; i < store::kChunkRows; ++i) {
    ApiCall c = call("cudaMemcpyAsync", t0 + i * 1000, 500, 100, tid);
    c.f.addr = rng();
    c.f.addr2 = rng();
    c.f.bytes = rng() & 0xffff;
    out.push_back(c);
  }
  for (int i = 0; i < 8; ++i)
    out.push_back(offcpu(t0 + i * 500'000, 1000, 100, tid, i % 2, "x", "y"));
  return out;
}

constexpr uint64_t kBudget = 4ull << 20;  // below the CLI's floor: the store takes any budget

TEST(StoreRetention, SizeBudgetHoldsAndTheNewestWindowStays) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_recorder(path, {.keep_ns = 0, .max_bytes = kBudget});
  ASSERT_TRUE(w);
  std::mt19937_64 rng(7);
  const int kChunks = 600;  // ~12 MiB of calls: three times the budget
  int64_t last_t0 = 0;
  uint64_t peak = 0;
  for (int i = 0; i < kChunks; ++i) {
    last_t0 = kStart + int64_t{i} * 5 * kMs;
    ASSERT_TRUE(w->write_batch(busy_chunk(last_t0, 101 + i % 3, rng)).ok()) << i;
    const uint64_t total = size_of(path) + size_of(path + "-wal");
    peak = std::max(peak, total);
    ASSERT_LE(total, kBudget) << "after batch " << i;
  }
  EXPECT_GT(peak, kBudget / 2);
  const auto r = w->retention_totals();
  ASSERT_TRUE(r.has_value());
  EXPECT_GT(r->age_outs, 0u);
  ASSERT_TRUE(r->window_start_ns.has_value());
  EXPECT_EQ(r->dropped, 0u);

  // A reader while the writer lives: consistent counts, the newest chunk whole.
  {
    auto f = open_trace(path);
    ASSERT_TRUE(f);
    const uint64_t written = uint64_t{kChunks} * (store::kChunkRows + 8);
    const uint64_t kept = std::stoull(scalar(*f, "SELECT count(*) FROM api_calls")) +
                          std::stoull(scalar(*f, "SELECT count(*) FROM offcpu"));
    // Rows still in open chunks (a thread's last second) are in neither yet.
    EXPECT_LE(kept + std::stoull(scalar(*f, "SELECT events FROM retention")), written);
    EXPECT_EQ(scalar(*f, "SELECT sum(events) FROM aged_out"),
              scalar(*f, "SELECT events FROM retention"));
    EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls WHERE ts >= " + std::to_string(last_t0)),
              std::to_string(store::kChunkRows));
    const std::string ws = std::to_string(*r->window_start_ns);
    EXPECT_EQ(scalar(*f, "SELECT window_start_ns FROM retention"), ws);
    // Nothing that ended before the window start is left, and the oldest chunks are gone.
    EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls_chunks WHERE end_max < " + ws), "0");
    EXPECT_EQ(
        scalar(*f, "SELECT count(*) FROM api_calls WHERE ts < " + std::to_string(kStart + 5 * kMs)),
        "0");
    // Rollups went with their chunks.
    EXPECT_EQ(scalar(*f, "SELECT sum(calls) FROM api_calls_per_second"),
              scalar(*f, "SELECT count(*) FROM api_calls"));
    EXPECT_EQ(scalar(*f, "SELECT coalesce(sum(intervals), 0) FROM offcpu_per_second"),
              scalar(*f, "SELECT count(*) FROM offcpu"));
    EXPECT_EQ(scalar(*f, "PRAGMA integrity_check"), "ok");
  }
  ASSERT_TRUE(w->finish(kStart + int64_t{kChunks} * 5 * kMs).ok());
  w.reset();
  EXPECT_LE(size_of(path) + size_of(path + "-wal"), kBudget);
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status(), "complete");
  EXPECT_EQ(scalar(*f, "PRAGMA integrity_check"), "ok");
  // Finished: every row is either kept or aged out, and the rollups still agree.
  EXPECT_EQ(std::stoull(scalar(*f, "SELECT count(*) FROM api_calls")) +
                std::stoull(scalar(*f, "SELECT count(*) FROM offcpu")) +
                std::stoull(scalar(*f, "SELECT events FROM retention")),
            uint64_t{kChunks} * (store::kChunkRows + 8));
  EXPECT_EQ(scalar(*f, "SELECT coalesce(sum(intervals), 0) FROM offcpu_per_second"),
            scalar(*f, "SELECT count(*) FROM offcpu"));

  // explain starts at the window and says what aged out.
  auto loaded = analysis::load_trace(*f, {});
  ASSERT_TRUE(loaded.ok()) << loaded.error().line();
  EXPECT_TRUE(loaded->aged_out.recorder);
  // finish() made room for the last chunks: the window may have moved on since.
  EXPECT_EQ(std::to_string(loaded->window.start_ns),
            scalar(*f, "SELECT window_start_ns FROM retention"));
  EXPECT_GE(loaded->window.start_ns, *r->window_start_ns);
  const analysis::Report rep = analysis::analyze(std::move(loaded.value()));
  bool said = false;
  for (const analysis::Caveat& c : rep.caveats)
    if (c.kind == "aged_out") {
      said = true;
      EXPECT_NE(c.text.find("events aged out before +"), std::string::npos) << c.text;
      EXPECT_NE(c.text.find("--max-size 4 MiB"), std::string::npos) << c.text;
    }
  EXPECT_TRUE(said);
  EXPECT_EQ(rep.trace.lost_events, 0u) << "aged-out events are not losses";
}

// A reader that keeps a snapshot open holds the log: the writer may not restart it, so batches
// that would take it past its share are dropped and counted, and the budget still holds.
TEST(StoreRetention, AReaderHoldingTheLogCostsBatchesNotTheBudget) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_recorder(path, {.keep_ns = 0, .max_bytes = kBudget});
  ASSERT_TRUE(w);
  std::mt19937_64 rng(11);
  int64_t t = kStart;
  auto write = [&](int n) {
    for (int i = 0; i < n; ++i, t += 5 * kMs) {
      ASSERT_TRUE(w->write_batch(busy_chunk(t, 101, rng)).ok());
      ASSERT_LE(size_of(path) + size_of(path + "-wal"), kBudget);
    }
  };
  write(20);
  sqlite3* reader = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &reader, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM api_calls_chunks;", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  write(200);  // ~4 MiB: far more than the log's 1 MiB share
  const uint64_t dropped = w->retention_totals()->dropped;
  EXPECT_GT(dropped, 0u);
  sqlite3_exec(reader, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(reader);
  write(50);  // the reader let go: the log restarts and nothing more is dropped
  EXPECT_EQ(w->retention_totals()->dropped, dropped);
  ASSERT_TRUE(w->set_counts({}, {}).ok());
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(scalar(*f, "SELECT count FROM losses WHERE source = 'store' AND cause = 'over_budget'"),
            std::to_string(dropped));
}

TEST(StoreRetention, KeepDropsWhatIsOlderThanTheWindow) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_recorder(path, {.keep_ns = 10'000 * kMs, .max_bytes = 0, .age_check_ns = 1});
  ASSERT_TRUE(w);
  const int64_t now = wall_ns();
  ASSERT_TRUE(w->write_batch(full_chunk(now - 60'000 * kMs, 100, 101)).ok());
  ASSERT_TRUE(w->write_batch(full_chunk(now - 30'000 * kMs, 100, 102)).ok());
  ASSERT_TRUE(w->write_batch(full_chunk(now - 1'000 * kMs, 100, 103)).ok());
  ASSERT_TRUE(w->flush_due().ok());  // the age limit is applied before a write
  const auto r = w->retention_totals();
  ASSERT_TRUE(r && r->window_start_ns);
  EXPECT_GE(*r->window_start_ns, now - 10'000 * kMs);
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(scalar(*f, "SELECT group_concat(DISTINCT tid) FROM api_calls"), "103");
  EXPECT_EQ(scalar(*f, "SELECT chunks || ' ' || events FROM aged_out WHERE name = 'api_calls'"),
            "2 " + std::to_string(2 * store::kChunkRows));
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM losses WHERE count > 0"), "0");
}

TEST(StoreRetention, TraceWithoutLimitsHasNoRecorderTables) {
  TempDir dir;
  auto w = make_writer(dir.file("t.db"));
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->retention_totals().has_value());
  auto f = open_trace(dir.file("t.db"));
  ASSERT_TRUE(f);
  EXPECT_EQ(scalar(*f,
                   "SELECT count(*) FROM sqlite_schema WHERE name IN ('retention', "
                   "'aged_out', 'rollup_spans')"),
            "0");
}

}  // namespace
}  // namespace gpuwhy
