// SPDX-License-Identifier: Apache-2.0
// The trace file's life: one writer at a time, numbered backups (.1, .2, ...), finish() to one
// complete file, a SIGKILLed writer (its written chunks readable), and TraceFile::open's one clear
// error per kind of bad file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_fixture.hpp"

namespace gpuwhy {
namespace {

using namespace gpuwhy::testing;
using Rows = std::vector<std::vector<std::string>>;

std::string open_error(const std::string& path) {
  auto f = store::TraceFile::open(path);
  EXPECT_FALSE(f.ok()) << path << " opened";
  return f.ok() ? "" : f.error().line();
}

std::vector<Event> some_events(int64_t t0) {
  return {call("cudaLaunchKernel", t0, 100, 10, 11), offcpu(t0 + 5, 50, 10, 11, true, "x", "")};
}

// A finished trace with one batch.
std::string finished_trace(const TempDir& dir, const std::string& name = "t.db") {
  const std::string path = dir.file(name);
  auto w = make_writer(path);
  EXPECT_TRUE(w->write_batch(some_events(kStart)).ok());
  EXPECT_TRUE(w->finish(kStart + 1000 * kMs).ok());
  return path;
}

TEST(StoreOpen, MissingFile) {
  TempDir dir;
  EXPECT_EQ(open_error(dir.file("nope.db")),
            "no trace file at " + dir.file("nope.db") +
                "; record one with 'sudo gpuwhy trace' or pass --db");
}

TEST(StoreOpen, DirectoryTextGarbageEmptyAndTruncatedFilesAreRefused) {
  TempDir dir;
  EXPECT_EQ(open_error(dir.path()),
            dir.path() + " is a directory, not a trace file; pass the trace file with --db");

  const std::string text = dir.file("notes.txt");
  write_file(text, "hello, this is not a database\n");
  EXPECT_EQ(open_error(text).rfind(text + " is not a gpuwhy trace (not a SQLite database, or "
                                          "corrupt): file is not a database",
                                   0),
            0u)
      << open_error(text);

  const std::string garbage = dir.file("garbage.db");
  std::string bytes(8192, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 + 7);
  write_file(garbage, bytes);
  EXPECT_NE(open_error(garbage).find("is not a gpuwhy trace (not a SQLite database, or corrupt)"),
            std::string::npos);

  const std::string empty = dir.file("empty.db");
  write_file(empty, "");
  EXPECT_NE(open_error(empty).find("is not a gpuwhy trace (not a SQLite database, or corrupt): "
                                   "the file is empty"),
            std::string::npos)
      << open_error(empty);

  // A real trace cut in half (a copy interrupted by a full disk): SQLite sees the header
  // promise more pages than the file has.
  const std::string cut = dir.file("cut.db");
  {
    auto w = make_writer(dir.file("big.db"));
    std::vector<Event> b;
    for (int i = 0; i < 5000; ++i) b.push_back(call("cudaLaunchKernel", kStart + i, 1, 1, 1));
    ASSERT_TRUE(w->write_batch(b).ok());
    ASSERT_TRUE(w->finish(kStart + 1).ok());
  }
  const std::string big = slurp(dir.file("big.db"));
  ASSERT_GT(big.size(), 40960u);
  write_file(cut, big.substr(0, big.size() / 2));
  EXPECT_NE(open_error(cut).find("is not a gpuwhy trace (not a SQLite database, or corrupt)"),
            std::string::npos)
      << open_error(cut);
}

TEST(StoreOpen, SqliteFilesThatAreNotTracesAndNewerSchemas) {
  TempDir dir;
  const std::string other = dir.file("other.db");
  raw_exec(other, "CREATE TABLE t(x); INSERT INTO t VALUES (1);");
  EXPECT_EQ(open_error(other), other + " is a SQLite file but not a gpuwhy trace");

  // user_version set but no session table.
  const std::string fake = dir.file("fake.db");
  raw_exec(fake, "CREATE TABLE t(x); PRAGMA user_version = 1;");
  EXPECT_EQ(open_error(fake), fake + " is a SQLite file but not a gpuwhy trace");

  const std::string newer = finished_trace(dir);
  raw_exec(newer, "PRAGMA user_version = 7;");
  EXPECT_EQ(open_error(newer), newer +
                                   " was written by a newer gpuwhy (schema 7, this build "
                                   "reads up to " +
                                   std::to_string(store::kSchemaVersion) + "); upgrade gpuwhy");

  // Schema 1 kept the events in plain tables: refused with one line that says what to do.
  const std::string older = finished_trace(dir, "older.db");
  raw_exec(older, "PRAGMA user_version = 1;");
  EXPECT_EQ(open_error(older), older +
                                   " was written by an older gpuwhy (schema 1); this build "
                                   "reads schema " +
                                   std::to_string(store::kSchemaVersion) +
                                   "; re-record it, or analyse it with the gpuwhy version that "
                                   "recorded it");

  // A trace with user_version reset to 0 is not taken for a trace (a half-created file is).
  const std::string zero = finished_trace(dir, "zero.db");
  raw_exec(zero, "PRAGMA user_version = 0;");
  EXPECT_EQ(open_error(zero), zero + " is a SQLite file but not a gpuwhy trace");
}

TEST(StoreOpen, SecondWriterIsRefusedWhileTheFirstLives) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto first = make_writer(path);
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->write_batch(some_events(kStart)).ok());
  auto second = store::TraceWriter::create(path, session_info());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().line(), path + " is being written by another gpuwhy trace (pid " +
                                       std::to_string(getpid()) +
                                       "); choose another --out or stop that trace");
  // The refused writer touched nothing: the first one's file and batch are intact.
  EXPECT_FALSE(exists(path + ".1"));
  ASSERT_TRUE(first->write_batch(full_chunk(kStart + 1000, 10, 12)).ok());
  {
    auto f = open_trace(path);
    ASSERT_TRUE(f);
    EXPECT_TRUE(f->is_live());
    // The full chunk is in the file; the first batch's rows still wait in their open chunk.
    EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls"), std::to_string(store::kChunkRows));
    EXPECT_NE(f->incomplete_warning().find("is still being recorded by gpuwhy trace (pid "),
              std::string::npos);
  }
  first.reset();  // the lock goes with the writer
  EXPECT_FALSE(exists(path + ".lock"));
  auto third = store::TraceWriter::create(path, session_info());
  ASSERT_TRUE(third.ok()) << third.error().line();
  EXPECT_TRUE(exists(path + ".1"));
}

TEST(StoreOpen, PreviousTraceIsKeptAsNumberedBackupWithItsWal) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  // A killed trace leaves path, path-wal and path-shm behind (simulated by a child below); here
  // an unfinished writer closed without finish() is enough to leave 'recording'.
  {
    auto w = make_writer(path);
    ASSERT_TRUE(w->write_batch(full_chunk(kStart, 10, 11)).ok());
  }
  // A stray side file of a .1 makes that number taken: nothing is ever deleted or replaced.
  write_file(path + ".1-wal", "stale wal of an older backup");
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  EXPECT_EQ(slurp(path + ".1-wal"), "stale wal of an older backup");
  EXPECT_FALSE(exists(path + ".1"));
  auto old = open_trace(path + ".2");
  ASSERT_TRUE(old);
  EXPECT_EQ(scalar(*old, "SELECT count(*) FROM api_calls"), std::to_string(store::kChunkRows));
  auto now = open_trace(path);
  ASSERT_TRUE(now);
  EXPECT_EQ(scalar(*now, "SELECT count(*) FROM api_calls"), "0");
}

TEST(StoreOpen, FinishLeavesOneCompleteIndexedFile) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_writer(path);
  ASSERT_TRUE(w->write_batch(some_events(kStart)).ok());
  EXPECT_GT(w->bytes_on_disk(), 0u);
  ASSERT_TRUE(w->finish(kStart + 2000 * kMs).ok());
  EXPECT_FALSE(exists(path + "-wal"));
  EXPECT_FALSE(exists(path + "-shm"));
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status(), "complete");
  EXPECT_EQ(f->session().end_ns, kStart + 2000 * kMs);
  EXPECT_EQ(f->incomplete_warning(), "");
  EXPECT_EQ(scalar(*f, "PRAGMA journal_mode"), "delete");
  EXPECT_EQ(rows(*f,
                 "SELECT name FROM sqlite_schema WHERE type = 'index' AND name NOT LIKE "
                 "'sqlite_autoindex%' ORDER BY name"),
            (Rows{{"api_calls_chunks_tid"},
                  {"block_io_chunks_tid"},
                  {"cpu_runs_chunks_tid"},
                  {"cpu_samples_chunks_tid"},
                  {"offcpu_chunks_tid"},
                  {"reclaim_chunks_tid"},
                  {"syscalls_chunks_tid"},
                  {"wait_migrations_chunks_tid"}}));
  // Reading a finished trace leaves nothing behind next to it.
  f.reset();
  w.reset();
  EXPECT_FALSE(exists(path + "-wal"));
  EXPECT_FALSE(exists(path + "-shm"));
  EXPECT_FALSE(exists(path + ".lock"));
  // And the copied file alone is a complete trace.
  TempDir other;
  std::filesystem::copy_file(path, other.file("copy.db"));
  auto c = open_trace(other.file("copy.db"));
  ASSERT_TRUE(c);
  EXPECT_EQ(scalar(*c, "SELECT count(*) FROM offcpu"), "1");
}

TEST(StoreOpen, FinishWhileAReaderHasTheFileOpenStillCompletes) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_writer(path);
  ASSERT_TRUE(w->write_batch(full_chunk(kStart, 10, 12)).ok());
  ASSERT_TRUE(w->write_batch(some_events(kStart)).ok());
  auto reader = open_trace(path);
  ASSERT_TRUE(reader);
  const std::string full = std::to_string(store::kChunkRows);
  EXPECT_EQ(scalar(*reader, "SELECT count(*) FROM api_calls"), full);
  // The reader keeps the file in WAL mode; the data is complete and checkpointed regardless.
  ASSERT_TRUE(w->finish(kStart + kMs).ok());
  w.reset();
  EXPECT_EQ(scalar(*reader, "SELECT status FROM session"), "complete");
  TempDir copy;
  std::filesystem::copy_file(path, copy.file("t.db"));  // the database file alone
  auto c = open_trace(copy.file("t.db"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status(), "complete");
  EXPECT_EQ(scalar(*c, "SELECT count(*) FROM api_calls"), std::to_string(store::kChunkRows + 1));
  EXPECT_EQ(scalar(*c, "SELECT count(*) FROM sqlite_schema WHERE name = 'offcpu_chunks_tid'"), "1");
}

TEST(StoreOpen, KilledWriterLeavesEveryCommittedBatchReadable) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto w = store::TraceWriter::create(path, session_info());
    if (!w.ok()) _exit(2);
    // Each batch fills one thread's chunk (written at commit) and leaves rows of another in
    // their open chunk (lost with the process).
    for (int b = 0; b < 3; ++b) {
      std::vector<Event> batch = full_chunk(kStart + b * kMs, 10, 20 + b);
      for (const Event& e : some_events(kStart + b * kMs)) batch.push_back(e);
      if (!(*w)->write_batch(batch).ok()) _exit(3);
    }
    kill(getpid(), SIGKILL);
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exit " << WEXITSTATUS(status);
  EXPECT_TRUE(exists(path + "-wal"));
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status(), "recording");
  EXPECT_FALSE(f->is_live());
  const std::string written = std::to_string(3 * store::kChunkRows);
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls"), written);
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM offcpu"), "0");
  EXPECT_EQ(f->session().batches, 3);
  EXPECT_EQ(f->incomplete_warning(),
            path +
                " is incomplete: the agent was killed (the rows it still held, up to about a "
                "second per thread, are missing); 3 batches up to 2023-11-14 22:13:20 UTC "
                "were committed");

  // Copies: with the -wal the data is there; the database file alone holds only what the writer
  // checkpointed when it created it (the schema and the session row: wal_owner.hpp), a trace
  // without a batch, which open() says.
  TempDir copy;
  std::filesystem::copy_file(path, copy.file("t.db"));
  std::filesystem::copy_file(path + "-wal", copy.file("t.db-wal"));
  auto c = open_trace(copy.file("t.db"));
  ASSERT_TRUE(c);
  EXPECT_EQ(scalar(*c, "SELECT count(*) FROM api_calls"), written);
  TempDir alone;
  std::filesystem::copy_file(path, alone.file("t.db"));
  auto a = open_trace(alone.file("t.db"));
  ASSERT_TRUE(a);
  EXPECT_EQ(scalar(*a, "SELECT count(*) FROM api_calls"), "0");
  EXPECT_NE(a->incomplete_warning().find("no event batch was committed"), std::string::npos)
      << a->incomplete_warning();
  EXPECT_FALSE(exists(alone.file("t.db-wal")));  // reading it created nothing

  // The next trace at the same path takes over: the killed one becomes .1, -wal included.
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  auto old = open_trace(path + ".1");
  ASSERT_TRUE(old);
  EXPECT_EQ(scalar(*old, "SELECT count(*) FROM api_calls"), written);
}

// A copy of a killed (WAL-mode) trace in a directory the reader cannot write: SQLite cannot create
// the -shm it needs, so open() reads through a private copy. Root can write anywhere, so the
// reading side runs in a child that drops to 'nobody'.
TEST(StoreOpen, WalCopyInReadOnlyDirectoryIsReadable) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto w = store::TraceWriter::create(path, session_info());
      if (!w.ok() || !(*w)->write_batch(full_chunk(kStart, 10, 11)).ok()) _exit(2);
      kill(getpid(), SIGKILL);
    }
    int st = 0;
    waitpid(child, &st, 0);
  }
  const std::string ro = dir.file("ro");
  ASSERT_EQ(mkdir(ro.c_str(), 0755), 0);
  std::filesystem::copy_file(path, ro + "/t.db");
  std::filesystem::copy_file(path + "-wal", ro + "/t.db-wal");  // no -shm: as a copy would be
  chmod((ro + "/t.db").c_str(), 0644);
  chmod((ro + "/t.db-wal").c_str(), 0644);
  chmod(dir.path().c_str(), 0755);
  ASSERT_EQ(chmod(ro.c_str(), 0555), 0);

  // The reader's private copy goes to $TMPDIR: point it at a directory we can inspect.
  const std::string tmp = dir.file("tmp");
  ASSERT_EQ(mkdir(tmp.c_str(), 0777), 0);
  chmod(tmp.c_str(), 0777);

  const bool root = geteuid() == 0;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (root && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(10);
    if (access(ro.c_str(), W_OK) == 0) _exit(11);  // the premise: the directory is read-only
    setenv("TMPDIR", tmp.c_str(), 1);
    int code = 0;
    {
      auto f = store::TraceFile::open(ro + "/t.db");
      if (!f.ok()) {
        std::fprintf(stderr, "open: %s\n", f.error().line().c_str());
        _exit(12);
      }
      auto r = store::run_query(**f, "SELECT count(*) FROM api_calls");
      if (!r.ok() || r->rows.size() != 1 || r->rows[0][0] != std::to_string(store::kChunkRows))
        code = 13;
      if ((*f)->status() != "recording") code = 14;
      if (std::filesystem::is_empty(tmp)) code = 15;  // it did go through a copy
    }
    _exit(code);
  }
  int st = 0;
  ASSERT_EQ(waitpid(child, &st, 0), child);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_FALSE(exists(ro + "/t.db-shm"));
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "the private copy was not removed";
}

}  // namespace
}  // namespace gpuwhy
