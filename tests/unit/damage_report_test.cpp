// SPDX-License-Identifier: Apache-2.0
// A trace whose -wal is damaged or another trace's (issue 34, item 4): SQLite reads the file
// without the batches after the damage, so every answer holds less than the trace did. `gpuwhy
// export` says so on stderr, as explain, query and audit do, and exits 1 (the same trace before the
// damage exports with exit 0 and no warning); every MCP tool's result carries the damage: explain's
// and audit's as their damaged_wal caveat, query's and the listings' as a "damaged" member.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "mcp_client.hpp"
#include "shell_run.hpp"
#include "store_fixture.hpp"

namespace gpuwhy::testing {
namespace {

const std::string kGpuwhy = std::string(GW_BINARY_DIR) + "/gpuwhy";

// A writer killed with four batches in its -wal; `started` tells two recordings apart.
std::string killed_trace(const TempDir& dir, const std::string& name = "t.db",
                         int64_t started = kStart) {
  const std::string path = dir.file(name);
  const pid_t child = fork();
  if (child == 0) {
    store::SessionInfo session = session_info();
    session.start_ns = started;
    auto w = store::TraceWriter::create(path, session);
    if (!w.ok()) _exit(2);
    for (int b = 0; b < 4; ++b)
      if (!(*w)->write_batch(full_chunk(kStart + b * kMs, 10, 20 + b)).ok()) _exit(3);
    kill(getpid(), SIGKILL);
    _exit(4);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return path;
}

// One byte of the last frame's page flipped: SQLite drops that frame's transaction.
void damage_last_frame(const std::string& wal) {
  const off_t frame = 24 + 4096;
  const off_t frames = (std::filesystem::file_size(wal) - 32) / frame;
  ASSERT_GE(frames, 2);
  const int fd = ::open(wal.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const off_t at = 32 + (frames - 1) * frame + 24 + 100;
  char b = 0;
  ASSERT_EQ(pread(fd, &b, 1, at), 1);
  b = static_cast<char>(b ^ 1);
  ASSERT_EQ(pwrite(fd, &b, 1, at), 1);
  close(fd);
}

TEST(ExportDamage, DamagedWalIsReportedAndFailsTheExport) {
  TempDir dir;
  const std::string db = killed_trace(dir);
  const std::string base = shell_quote(kGpuwhy) + " export --db " + shell_quote(db);
  // Before the damage: a clean export.
  auto ok = shell(base + " --format csv --table api_calls -o " + shell_quote(dir.file("a.csv")) +
                  " 2>&1");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_EQ(ok.out.find("damaged"), std::string::npos) << ok.out;

  damage_last_frame(db + "-wal");
  for (const std::string format : {"csv --table api_calls", "jsonl", "sqlite"}) {
    SCOPED_TRACE(format);
    const std::string out = dir.file("out-" + std::to_string(format.size()));
    auto r = shell(base + " --format " + format + " -o " + shell_quote(out) + " 2>&1");
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find("warning: " + db + "-wal is damaged after frame"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("the export is incomplete"), std::string::npos) << r.out;
    EXPECT_TRUE(std::filesystem::exists(out)) << "what could be read is still written";
  }
}

bool has_damaged_caveat(const json& report) {
  if (!report.is_object() || !report.contains("caveats")) return false;
  for (const json& c : report["caveats"])
    if (c.value("kind", "") == "damaged_wal") return true;
  return false;
}

TEST(McpDamage, EveryToolResultCarriesTheDamage) {
  TempDir dir;
  const std::string db = killed_trace(dir);
  {
    McpClient clean(options_for(db));
    const json q = clean.ok("query", {{"sql", "SELECT count(*) FROM api_calls"}});
    EXPECT_FALSE(q.contains("damaged")) << q.dump();
    EXPECT_FALSE(has_damaged_caveat(clean.ok("explain")));
  }
  damage_last_frame(db + "-wal");
  McpClient c(options_for(db));
  EXPECT_TRUE(has_damaged_caveat(c.ok("explain")));
  EXPECT_TRUE(has_damaged_caveat(c.ok("audit")));
  for (const char* tool : {"query", "processes", "threads", "top_operations"}) {
    SCOPED_TRACE(tool);
    const json r = std::string(tool) == "query"
                       ? c.ok(tool, {{"sql", "SELECT count(*) FROM api_calls"}})
                       : c.ok(tool);
    ASSERT_TRUE(r.is_object());
    EXPECT_NE(r.value("damaged", "").find("-wal is damaged after frame"), std::string::npos)
        << r.dump();
  }
}

// Item 4 of issue 34: another trace's -wal next to a file was applied without a word (explain
// reported the other job). Every reader refuses it with one line and a non-zero exit.
TEST(ForeignWal, EveryReaderRefusesTheLogOfAnotherTrace) {
  TempDir dir;
  const std::string db = killed_trace(dir, "a.db");
  const std::string other = killed_trace(dir, "b.db", kStart + 3'600 * 1'000 * kMs);
  std::filesystem::copy_file(other + "-wal", db + "-wal",
                             std::filesystem::copy_options::overwrite_existing);
  const std::string q = shell_quote(db);
  const std::string said = db + "-wal belongs to another trace (recorded on gpu-host-1 from ";
  for (const std::string& args :
       {"explain --db " + q, "query --db " + q + " 'SELECT count(*) FROM api_calls'",
        "audit --db " + q,
        "export --db " + q + " --format jsonl -o " + shell_quote(dir.file("o"))}) {
    SCOPED_TRACE(args);
    auto r = shell(shell_quote(kGpuwhy) + " " + args + " 2>&1");
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find(said), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("refusing to read the file through it"), std::string::npos) << r.out;
  }
  McpClient c(options_for(db));
  const json r = c.call("query", {{"sql", "SELECT count(*) FROM api_calls"}});
  EXPECT_TRUE(r.value("isError", false)) << r.dump();
  EXPECT_NE(r.dump().find("belongs to another trace"), std::string::npos) << r.dump();
  // Its own log back: it reads again.
  std::filesystem::remove(db + "-wal");
  auto again =
      shell(shell_quote(kGpuwhy) + " query --db " + q + " 'SELECT count(*) FROM api_calls' 2>&1");
  EXPECT_EQ(again.exit_code, 0) << again.out;
}

// A -wal whose pages are not the file's size cannot be its log.
TEST(ForeignWal, LogOfAnotherPageSizeIsRefused) {
  TempDir dir;
  const std::string db = killed_trace(dir);
  const std::string wal = db + "-wal";
  const int fd = ::open(wal.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const unsigned char page[4] = {0, 0, 0x20, 0};  // 8192, big-endian, at offset 8
  ASSERT_EQ(pwrite(fd, page, 4, 8), 4);
  close(fd);
  auto r = shell(shell_quote(kGpuwhy) + " query --db " + shell_quote(db) +
                 " 'SELECT count(*) FROM api_calls' 2>&1");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(
      r.out.find(wal + " is not the log of " + db + ": its pages are 8192 bytes, the file's 4096"),
      std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace gpuwhy::testing
