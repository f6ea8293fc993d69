// SPDX-License-Identifier: Apache-2.0
// Damage outside the checksum of a chunk's data (issue 34, item 2): the index columns of a
// <table>_chunks row (pid, tid, ts_min, end_max, rows) pick the chunks a scan reads, and one
// flipped bit in ts_min once moved a chunk out of a time window without a word. Every bit of
// every index column (and of index_crc itself) is flipped in turn, each in a fresh copy of the
// file: explain's loader must report the chunk damaged where its own rows lie, and a query over a
// time range must fail naming it. The outcomes are counted: clear (reported) or silent. And a file
// that cannot be verified (chunks without a checksum, an index without index_crc) says so.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "analysis/explain.hpp"
#include "analysis/loader.hpp"
#include "store/chunk_codec.hpp"
#include "store/chunk_index.hpp"
#include "store/chunked_tables.hpp"
#include "two_thread_trace.hpp"

namespace gpuwhy::testing {
namespace {

std::string two_threads(const TempDir& dir) {
  const std::string path = dir.file("clean.db");
  write_two_thread_trace(path);
  return path;
}

// Runs `sql` on the file outside the store (the damage a disk or a copy does).
void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

TEST(ChunkIndexDamage, EveryFlippedBitOfAnIndexColumnIsReported) {
  TempDir dir;
  const std::string clean = two_threads(dir);
  std::string id;
  {
    auto f = open_trace(clean);
    ASSERT_TRUE(f);
    id = scalar(*f, "SELECT id FROM api_calls_chunks WHERE tid = 11");
    ASSERT_NE(scalar(*f, "SELECT index_crc FROM api_calls_chunks WHERE id = " + id), "NULL");
  }
  const std::string path = dir.file("t.db");
  const std::string window =
      "SELECT count(*) FROM api_calls WHERE ts >= " + std::to_string(kStart) + " AND ts < " +
      std::to_string(kStart + 5 * kMs);
  int flips = 0, clear = 0;
  std::vector<std::string> silent;
  for (const char* col : {"pid", "tid", "ts_min", "end_max", "rows", "index_crc"}) {
    int64_t was = 0;
    {
      auto f = open_trace(clean);
      ASSERT_TRUE(f);
      was = std::stoll(
          scalar(*f, "SELECT " + std::string(col) + " FROM api_calls_chunks WHERE id = " + id));
    }
    for (int bit = 0; bit < 64; ++bit) {
      std::filesystem::copy_file(clean, path, std::filesystem::copy_options::overwrite_existing);
      const auto flipped = static_cast<int64_t>(static_cast<uint64_t>(was) ^ (uint64_t{1} << bit));
      raw_sql(path, "UPDATE api_calls_chunks SET " + std::string(col) + " = " +
                        std::to_string(flipped) + " WHERE id = " + id);
      ++flips;
      auto f = open_trace(path);
      ASSERT_TRUE(f);
      auto rows = analysis::load_trace(*f, {});
      const bool loader_reports =
          rows.ok() && rows->damaged.size() == 1 && rows->damaged[0].tid == 11 &&
          rows->damaged[0].ts_min == kStart &&
          rows->damaged[0].error.find("index_crc mismatch") != std::string::npos;
      size_t kept = 0;
      if (rows.ok())
        for (const auto& c : rows->calls) kept += c.tid == 12;
      auto q = store::run_query(*f, window);
      const bool query_fails =
          !q.ok() && q.error().what.find("api_calls_chunks id " + id) != std::string::npos &&
          q.error().what.find("index_crc mismatch") != std::string::npos;
      if (loader_reports && query_fails && kept == store::kChunkRows)
        ++clear;
      else
        silent.push_back(std::string(col) + " bit " + std::to_string(bit) +
                         (rows.ok() ? "" : ": load failed: " + rows.error().line()) +
                         (q.ok() ? ": query read it" : ""));
    }
  }
  std::printf("chunk index flips: %d tried, %d reported clearly, %zu silent, 0 crashed or hung\n",
              flips, clear, silent.size());
  EXPECT_EQ(clear, flips);
  for (const std::string& s : silent) ADD_FAILURE() << "not reported: " << s;
}

// The case of the issue: a flipped bit in ts_min put the chunk after the window explain read.
TEST(ChunkIndexDamage, ChunkMovedOutOfTheWindowIsReportedByExplain) {
  TempDir dir;
  const std::string path = two_threads(dir);
  raw_sql(path, "UPDATE api_calls_chunks SET ts_min = ts_min + (1 << 40) WHERE tid = 11");
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  auto rows = analysis::load_trace(*f, {});
  ASSERT_TRUE(rows.ok()) << rows.error().line();
  bool caveat = false;
  for (const analysis::Caveat& c : analysis::caveats_for(*rows)) {
    if (c.kind != "damaged") continue;
    caveat = true;
    EXPECT_NE(c.text.find("api_calls of thread 11 from +0"), std::string::npos) << c.text;
  }
  EXPECT_TRUE(caveat) << "explain must say which part of the trace it could not place";
}

bool has_caveat(const store::TraceFile& f, const std::string& kind, std::string* text = nullptr) {
  auto rows = analysis::load_trace(f, {});
  EXPECT_TRUE(rows.ok()) << rows.error().line();
  if (!rows.ok()) return false;
  for (const analysis::Caveat& c : analysis::caveats_for(*rows))
    if (c.kind == kind) {
      if (text) *text = c.text;
      return true;
    }
  return false;
}

// Item 3: what the file cannot vouch for is said: chunks without a checksum (formats 1 and 2,
// older files) and a chunk index without index_crc.
TEST(UnverifiedFile, ChunksAndAnIndexWithoutChecksumsAreSaidSo) {
  TempDir dir;
  const std::string path = two_threads(dir);
  {
    auto f = open_trace(path);
    ASSERT_TRUE(f);
    EXPECT_FALSE(has_caveat(*f, "unverified")) << "a current file is verified throughout";
  }
  // Thread 11's chunk replaced by one as format 2 wrote it (no checksum): 100 calls, its index
  // row to match.
  {
    const store::ChunkedTable& t = *store::find_chunked_table("api_calls");
    store::ChunkBuilder b(static_cast<uint32_t>(t.columns.size()));
    std::vector<int64_t> row(t.columns.size(), 0);
    for (int64_t i = 0; i < 100; ++i) {
      row[t.ts] = kStart + i * 1000, row[t.dur] = 500, row[t.pid] = 10, row[t.tid] = 11;
      b.add(row, 0);
    }
    std::string old = b.encode(t.ts, 3);  // format 3's encodings are format 2's
    old.resize(old.size() - 4);           // without the checksum
    old[0] = 2;
    const store::ChunkKey k{10, 11, kStart, kStart + 99 * 1000 + 500, 100};
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "UPDATE api_calls_chunks SET data = ?, ts_min = ?, end_max = ?, "
                                 "rows = ?, index_crc = ? WHERE tid = 11",
                                 -1, &s, nullptr),
              SQLITE_OK);
    sqlite3_bind_blob(s, 1, old.data(), static_cast<int>(old.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, k.ts_min);
    sqlite3_bind_int64(s, 3, k.end_max);
    sqlite3_bind_int64(s, 4, k.rows);
    sqlite3_bind_int64(s, 5, store::chunk_index_crc(k));
    ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    sqlite3_close(db);
  }
  {
    auto f = open_trace(path);
    ASSERT_TRUE(f);
    std::string text;
    EXPECT_TRUE(has_caveat(*f, "unverified", &text));
    EXPECT_NE(text.find("this file cannot be verified: it holds event chunks written before "
                        "chunk checksums (chunk format 1 or 2)"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("index"), std::string::npos) << text;
  }
  // A file from before index_crc.
  raw_sql(path, "ALTER TABLE api_calls_chunks DROP COLUMN index_crc");
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  std::string text;
  EXPECT_TRUE(has_caveat(*f, "unverified", &text));
  EXPECT_NE(text.find(", and a chunk index written before its checksums (no index_crc)"),
            std::string::npos)
      << text;
  // Its rows still read in full.
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls WHERE ts >= " + std::to_string(kStart)),
            std::to_string(100 + store::kChunkRows));
}

}  // namespace
}  // namespace gpuwhy::testing
