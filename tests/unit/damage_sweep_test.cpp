// SPDX-License-Identifier: Apache-2.0
// One bit flipped anywhere in a finished trace file, one seed per flip (issue 34's damage
// suite): `gpuwhy query` and `gpuwhy explain --json` run on each damaged copy, and each outcome
// is counted as crashed (killed by a signal), hung (past 30 s), clear (exit 1 with its line, or a
// `damaged` caveat), unchanged (the answers of the undamaged file) or silent (other answers, no
// word). Crashes and hangs fail the test; the silent ones are flips in what nothing checksums
// (docs/schema.md "Chunked event tables": lookup rows, strings, SQLite's own pages), listed by
// seed and offset so that any one can be replayed.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "shell_run.hpp"
#include "two_thread_trace.hpp"

namespace gpuwhy::testing {
namespace {

const std::string kGpuwhy = std::string(GW_BINARY_DIR) + "/gpuwhy";
constexpr int kSeeds = 48;

struct Answers {
  int query_exit = 0, explain_exit = 0;
  std::string query, explain;
};

Answers answers(const std::string& db) {
  const std::string base = "timeout 30 " + shell_quote(kGpuwhy);
  Answers a;
  auto q = shell(base + " query --db " + shell_quote(db) +
                 " 'SELECT tid, count(*), sum(dur) FROM api_calls WHERE ts >= " +
                 std::to_string(kStart) + " GROUP BY tid' 2>&1");
  a.query_exit = q.exit_code;
  a.query = q.out;
  auto e = shell(base + " explain --json --db " + shell_quote(db) + " 2>&1");
  a.explain_exit = e.exit_code;
  a.explain = e.out;
  return a;
}

TEST(DamageSweep, NoFlippedBitCrashesOrHangsAReader) {
  TempDir dir;
  const std::string clean = dir.file("clean.db");
  ASSERT_NO_FATAL_FAILURE(write_two_thread_trace(clean, "cudaMemcpyAsync"));
  const Answers want = answers(clean);
  ASSERT_EQ(want.query_exit, 0) << want.query;
  ASSERT_EQ(want.explain_exit, 0) << want.explain;
  const auto size = std::filesystem::file_size(clean);
  const std::string path = dir.file("t.db");
  int crashed = 0, hung = 0, clear = 0, unchanged = 0, silent = 0;
  std::string silent_cases;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed));
    const uint64_t at = rng() % size;
    const int bit = static_cast<int>(rng() % 8);
    std::filesystem::copy_file(clean, path, std::filesystem::copy_options::overwrite_existing);
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(static_cast<std::streamoff>(at));
      char b = 0;
      f.read(&b, 1);
      b = static_cast<char>(b ^ (1 << bit));
      f.seekp(static_cast<std::streamoff>(at));
      f.write(&b, 1);
    }
    const Answers got = answers(path);
    for (auto [code, out, same] :
         {std::tuple{got.query_exit, got.query, got.query == want.query},
          std::tuple{got.explain_exit, got.explain, got.explain == want.explain}}) {
      const std::string where = "seed " + std::to_string(seed) + " (byte " + std::to_string(at) +
                                " bit " + std::to_string(bit) + ")";
      if (code == 124) {
        ++hung;
        ADD_FAILURE() << where << " hung";
      } else if (code >= 128 || code < 0) {
        ++crashed;
        ADD_FAILURE() << where << " crashed: " << out.substr(0, 400);
      } else if (code != 0 || out.find("\"kind\":\"damaged") != std::string::npos ||
                 out.find("\"kind\": \"damaged") != std::string::npos) {
        ++clear;
      } else if (same) {
        ++unchanged;
      } else {
        ++silent;
        silent_cases += " " + where + ";";
      }
    }
  }
  std::printf(
      "damage sweep: %d answers from %d flips: %d crashed, %d hung, %d clear, %d "
      "unchanged, %d silent:%s\n",
      2 * kSeeds, kSeeds, crashed, hung, clear, unchanged, silent, silent_cases.c_str());
  EXPECT_EQ(crashed + hung, 0);
}

}  // namespace
}  // namespace gpuwhy::testing
