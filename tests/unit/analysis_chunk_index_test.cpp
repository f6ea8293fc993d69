// SPDX-License-Identifier: Apache-2.0
// The chunk index explain reads once (loader.hpp, read_chunk_index) and the batches' loads that
// look their chunks up in it by id: the same rows as a load that reads the index itself, and a
// chunk that is no longer in the file as indexed (a live flight recorder aged it out, or its id
// now holds a newer chunk) is left out, not read as the chunk the index describes.
// The trace is gen_trace's (gen_trace_suite.hpp).
#include <sqlite3.h>

#include <filesystem>
#include <memory>
#include <string>

#include "gen_trace_suite.hpp"

namespace gpuwhy {
namespace {

class ChunkIndexTest : public testing::GenTraceSuite {};

TEST_F(ChunkIndexTest, IndexGivenOrReadGiveTheSameRows) {
  auto file = open();
  ASSERT_TRUE(file);
  auto index = analysis::read_chunk_index(file->db());
  ASSERT_TRUE(index) << index.error().line();
  const std::vector<analysis::ChunkRef>* calls = index.value()->find("api_calls");
  ASSERT_NE(calls, nullptr);
  EXPECT_GT(calls->size(), 10u);
  analysis::LoadOptions given;
  given.chunks = index.value();
  auto a = analysis::load_trace(*file, given);
  auto b = analysis::load_trace(*file, {});
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->calls.size(), b->calls.size());
  ASSERT_EQ(a->offcpu.size(), b->offcpu.size());
  for (size_t i = 0; i < a->calls.size(); ++i) {
    ASSERT_EQ(a->calls[i].ts, b->calls[i].ts) << i;
    ASSERT_EQ(a->calls[i].tid, b->calls[i].tid) << i;
  }
}

TEST_F(ChunkIndexTest, ChunksNoLongerAsIndexedAreLeftOut) {
  const std::string path = dir_->file("changed.db");
  std::filesystem::copy_file(dir_->file("t.db"), path,
                             std::filesystem::copy_options::overwrite_existing);
  std::shared_ptr<const analysis::ChunkIndex> index;
  size_t before = 0;
  {
    auto f = store::TraceFile::open(path);
    ASSERT_TRUE(f) << f.error().line();
    auto read = analysis::read_chunk_index(f.value()->db());
    ASSERT_TRUE(read);
    index = read.value();
    auto rows = analysis::load_trace(*f.value(), {});
    ASSERT_TRUE(rows);
    before = rows->calls.size();
  }
  const std::vector<analysis::ChunkRef>& refs = *index->find("api_calls");
  ASSERT_GE(refs.size(), 4u);
  // Two chunks in the middle of a thread: one deleted (aged out), one whose id now holds a chunk
  // with another start (an id used again).
  const analysis::ChunkRef gone = refs[refs.size() / 2], other = refs[refs.size() / 2 + 1];
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string sql =
      "DELETE FROM api_calls_chunks WHERE id = " + std::to_string(gone.id) +
      "; UPDATE api_calls_chunks SET ts_min = ts_min + 1 WHERE id = " + std::to_string(other.id);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto f = store::TraceFile::open(path);
  ASSERT_TRUE(f) << f.error().line();
  analysis::LoadOptions stale;
  stale.chunks = index;  // read before the file changed
  auto rows = analysis::load_trace(*f.value(), stale);
  ASSERT_TRUE(rows) << rows.error().line();
  EXPECT_EQ(rows->calls.size(), before - static_cast<size_t>(gone.rows + other.rows));
  EXPECT_TRUE(rows->damaged.empty()) << "left out, not reported as damage";
}

}  // namespace
}  // namespace gpuwhy
