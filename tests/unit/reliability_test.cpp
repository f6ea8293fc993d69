// SPDX-License-Identifier: Apache-2.0
// Nothing lost silently, nothing clobbered as root, readers that cannot be fooled: chunk
// checksums (a flipped bit is reported, named by table and time, and skipped by explain), files
// created without following links (0600, owned by the sudo user), `--out` refusing what is not a
// trace, a FIFO refused by readers, query limits and streamed table output, secrets redacted
// from stored command lines, and a trace that stopped early saying why.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>

#include "analysis/explain.hpp"
#include "analysis/loader.hpp"
#include "analysis/percentile.hpp"
#include "cli/commands.hpp"
#include "query_cli.hpp"
#include "store/owned_files.hpp"
#include "store/redact.hpp"
#include "store/writer_lock.hpp"
#include "store_fixture.hpp"
#include "two_thread_trace.hpp"

namespace gpuwhy {
namespace {

using namespace gpuwhy::testing;

// ---- chunk checksums ------------------------------------------------------------------------

std::string some_chunk(uint8_t format = store::kChunkFormat) {
  store::ChunkBuilder b(3);
  for (int64_t i = 0; i < 100; ++i) {
    const int64_t v[3] = {kStart + i * 1000, i % 7, i * i};
    b.add(v, i % 5 == 0 ? 4 : 0);
  }
  return b.encode(0, format);
}

TEST(ChunkChecksum, EveryFlippedBitIsReported) {
  const std::string blob = some_chunk();
  ASSERT_GE(blob[0], 3) << "new chunks carry a checksum";
  store::Chunk c;
  ASSERT_TRUE(store::decode_chunk(blob, c).ok());
  for (size_t bit = 8; bit < blob.size() * 8; ++bit) {  // byte 0 is the format
    std::string bad = blob;
    bad[bit / 8] = static_cast<char>(bad[bit / 8] ^ (1 << (bit % 8)));
    const Status st = store::decode_chunk(bad, c);
    ASSERT_FALSE(st.ok()) << "bit " << bit;
    EXPECT_TRUE(store::chunk_damaged(st.error())) << st.error().line();
    EXPECT_NE(st.error().what.find("checksum mismatch"), std::string::npos) << st.error().what;
  }
}

TEST(ChunkChecksum, ChunksWithoutChecksumStillRead) {
  const std::string blob = some_chunk(3);  // its encodings are all format 2's
  store::Chunk with, without;
  ASSERT_TRUE(store::decode_chunk(blob, with).ok());
  std::string old = blob.substr(0, blob.size() - 4);  // a format-2 chunk: no trailer
  old[0] = 2;
  ASSERT_TRUE(store::decode_chunk(old, without).ok());
  EXPECT_TRUE(with.same_content(without));
}

// Flips one bit in the middle of the data of chunk `id` of `table`, outside the store.
void flip_bit(const std::string& path, const std::string& table, int64_t id) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, ("SELECT data FROM " + table + " WHERE id = ?").c_str(), -1, &s,
                               nullptr),
            SQLITE_OK);
  sqlite3_bind_int64(s, 1, id);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  std::string data(static_cast<const char*>(sqlite3_column_blob(s, 0)),
                   static_cast<size_t>(sqlite3_column_bytes(s, 0)));
  sqlite3_finalize(s);
  data[data.size() / 2] = static_cast<char>(data[data.size() / 2] ^ 0x10);
  ASSERT_EQ(sqlite3_prepare_v2(db, ("UPDATE " + table + " SET data = ? WHERE id = ?").c_str(), -1,
                               &s, nullptr),
            SQLITE_OK);
  sqlite3_bind_blob(s, 1, data.data(), static_cast<int>(data.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int64(s, 2, id);
  ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
  sqlite3_finalize(s);
  sqlite3_close(db);
}

TEST(ChunkChecksum, FlippedBitInAFileIsNamedByQueryAndSkippedByExplain) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  ASSERT_NO_FATAL_FAILURE(write_two_thread_trace(path));
  std::string id;
  {
    auto f = open_trace(path);
    ASSERT_TRUE(f);
    id = scalar(*f, "SELECT id FROM api_calls_chunks WHERE tid = 11");
  }
  flip_bit(path, "api_calls_chunks", std::stoll(id));
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  auto r = store::run_query(*f, "SELECT sum(dur) FROM api_calls");
  ASSERT_FALSE(r.ok()) << "a damaged chunk must not read as other numbers";
  EXPECT_NE(r.error().what.find("checksum mismatch"), std::string::npos) << r.error().what;
  EXPECT_NE(r.error().what.find("api_calls_chunks id " + id + ": thread 11, ts " +
                                std::to_string(kStart)),
            std::string::npos)
      << r.error().what;
  // The undamaged thread still reads.
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls WHERE tid = 12"),
            std::to_string(store::kChunkRows));

  auto rows = analysis::load_trace(*f, {});
  ASSERT_TRUE(rows.ok()) << rows.error().line();
  ASSERT_EQ(rows->damaged.size(), 1u);
  EXPECT_EQ(rows->damaged[0].tid, 11);
  size_t kept = 0;
  for (const auto& c : rows->calls) kept += c.tid == 12;
  EXPECT_EQ(kept, store::kChunkRows);
  bool caveat = false;
  for (const analysis::Caveat& c : analysis::caveats_for(*rows)) {
    if (c.kind != "damaged") continue;
    caveat = true;
    EXPECT_NE(c.text.find("api_calls of thread 11 from +0"), std::string::npos) << c.text;
  }
  EXPECT_TRUE(caveat) << "explain must say which part of the trace it skipped";
}

// ---- files created as root --------------------------------------------------------------------

TEST(OwnedFiles, TraceFileIsPrivateAndGivenToTheSudoUser) {
  TempDir dir;
  const bool root = geteuid() == 0;
  if (root) {
    setenv("SUDO_UID", "65534", 1);
    setenv("SUDO_GID", "65534", 1);
  }
  {
    auto w = make_writer(dir.file("t.db"));
    ASSERT_TRUE(w);
    ASSERT_TRUE(w->write_batch(full_chunk(kStart, 10, 11)).ok());
    struct stat lock {};
    ASSERT_EQ(stat(dir.file("t.db.lock").c_str(), &lock), 0);
    EXPECT_EQ(lock.st_mode & 0777, 0600u);
    ASSERT_TRUE(w->finish(kStart + kMs).ok());
  }
  unsetenv("SUDO_UID");
  unsetenv("SUDO_GID");
  struct stat st {};
  ASSERT_EQ(stat(dir.file("t.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "other users must not read traced command lines";
  if (root) {
    EXPECT_EQ(st.st_uid, 65534u);
    EXPECT_EQ(st.st_gid, 65534u);
  }
}

TEST(OwnedFiles, LockFileThroughASymlinkOrHardLinkIsRefusedAndTheVictimKept) {
  TempDir dir;
  const std::string victim = dir.file("victim");
  write_file(victim, "precious\n");
  ASSERT_EQ(symlink(victim.c_str(), dir.file("t.db.lock").c_str()), 0);
  auto w = store::TraceWriter::create(dir.file("t.db"), session_info());
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().line().find("is a symbolic link"), std::string::npos) << w.error().line();
  EXPECT_EQ(slurp(victim), "precious\n");
  EXPECT_FALSE(exists(dir.file("t.db")));

  ASSERT_EQ(link(victim.c_str(), dir.file("u.db.lock").c_str()), 0);
  auto u = store::TraceWriter::create(dir.file("u.db"), session_info());
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().line().find("hard link"), std::string::npos) << u.error().line();
  EXPECT_EQ(slurp(victim), "precious\n");
}

TEST(OwnedFiles, ReadyFileReplacesALinkNotItsTarget) {
  TempDir dir;
  const std::string victim = dir.file("victim");
  write_file(victim, "precious\n");
  ASSERT_EQ(symlink(victim.c_str(), dir.file("ready").c_str()), 0);
  auto fd = store::replace_private_file(dir.file("ready"), "the ready file");
  ASSERT_TRUE(fd.ok()) << fd.error().line();
  ASSERT_EQ(write(*fd, "1\n", 2), 2);
  close(*fd);
  EXPECT_EQ(slurp(victim), "precious\n");
  struct stat st {};
  ASSERT_EQ(lstat(dir.file("ready").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(slurp(dir.file("ready")), "1\n");
  ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0600), 0);
  EXPECT_FALSE(store::replace_private_file(dir.file("fifo"), "the ready file").ok());
}

TEST(OwnedFiles, OutRefusesAnythingButATraceOrNothing) {
  TempDir dir;
  ASSERT_EQ(mkdir(dir.file("d").c_str(), 0700), 0);
  ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0600), 0);
  write_file(dir.file("notes.txt"), "my notes\n");
  ASSERT_EQ(symlink(dir.file("notes.txt").c_str(), dir.file("link.db").c_str()), 0);
  {
    auto w = make_writer(dir.file("trace.db"));
    ASSERT_TRUE(w && w->finish(kStart).ok());
  }
  struct Case {
    std::string path, needle;
  };
  const Case refused[] = {
      {"", "--out is empty"},
      {dir.file(std::string(300, 'x')), "too long"},
      {dir.file("d"), "is a directory"},
      {dir.file("fifo"), "is a FIFO"},
      {dir.file("notes.txt"), "is not a gpuwhy trace"},
      {dir.file("link.db"), "is a symbolic link"},
      {"/dev/null", "is a device node"},
  };
  for (const Case& c : refused) {
    const Status st = store::check_trace_path(c.path);
    ASSERT_FALSE(st.ok()) << c.path;
    EXPECT_NE(st.error().line().find(c.needle), std::string::npos) << st.error().line();
    auto w = store::TraceWriter::create(c.path, session_info());
    EXPECT_FALSE(w.ok()) << c.path;
  }
  EXPECT_EQ(slurp(dir.file("notes.txt")), "my notes\n");
  EXPECT_FALSE(exists(dir.file("notes.txt.1")));
  EXPECT_FALSE(exists(dir.file("d.1")));
  EXPECT_FALSE(exists(dir.file("fifo.1")));
  EXPECT_TRUE(store::check_trace_path(dir.file("trace.db")).ok());
  EXPECT_TRUE(store::check_trace_path(dir.file("absent.db")).ok());
}

// ---- readers ------------------------------------------------------------------------------------

TEST(Readers, FifoIsRefusedWithoutHanging) {
  TempDir dir;
  ASSERT_EQ(mkfifo(dir.file("t.db").c_str(), 0600), 0);
  auto f = store::TraceFile::open(dir.file("t.db"));
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().line().find("not a regular file"), std::string::npos) << f.error().line();
}

class QueryLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    auto w = make_writer(db_);
    ASSERT_TRUE(w && w->finish(kStart + kMs).ok());
  }
  TempDir dir_;
  std::string db_ = dir_.file("t.db");
};

TEST_F(QueryLimits, ARunawayQueryStopsAtItsTimeout) {
  const CliResult r = run_query_cli(
      {"--db", db_, "--timeout", "1",
       "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("ran longer than --timeout 1 s"), std::string::npos) << r.err;
}

TEST_F(QueryLimits, TableOutputIsStreamedWithWidthsFromTheFirstRows) {
  // Row 250 is wider than every row before it: a streamed table does not go back to widen the
  // column (it would have to hold every row to do so).
  const CliResult r = run_query_cli(
      {"--db", db_,
       "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300) "
       "SELECT CASE WHEN x = 250 THEN 'a-very-long-cell' ELSE 'b' END AS v, x FROM c"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> lines;
  for (size_t i = 0, nl; (nl = r.out.find('\n', i)) != std::string::npos; i = nl + 1)
    lines.push_back(r.out.substr(i, nl - i));
  ASSERT_EQ(lines.size(), 302u);
  EXPECT_EQ(lines[0], "v    x");
  EXPECT_EQ(lines[1], "-  ---");
  EXPECT_EQ(lines[2], "b    1");
  EXPECT_EQ(lines[251], "a-very-long-cell  250");
  EXPECT_EQ(lines[301], "b  300");
}

TEST(Readers, DamagedWalIsReported) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // a writer killed with its batches in the -wal
    auto w = store::TraceWriter::create(path, session_info());
    if (!w.ok()) _exit(2);
    for (int b = 0; b < 4; ++b)
      if (!(*w)->write_batch(full_chunk(kStart + b * kMs, 10, 20 + b)).ok()) _exit(3);
    kill(getpid(), SIGKILL);
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  {
    auto f = open_trace(path);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->wal_warning(), "");
  }
  // One byte of the last frame's page: SQLite drops that frame's transaction without a word.
  const std::string wal = path + "-wal";
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
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_NE(f->wal_warning().find("-wal is damaged after frame " + std::to_string(frames - 1) +
                                  ": SQLite ignores the 1 frames after it"),
            std::string::npos)
      << f->wal_warning();
  // The first frame damaged: the whole log is ignored. When the schema was only there (not yet
  // copied into the file), open() fails and says why; else it reads and warns.
  const int fd2 = ::open(wal.c_str(), O_RDWR);
  ASSERT_GE(fd2, 0);
  ASSERT_EQ(pread(fd2, &b, 1, 32 + 24 + 100), 1);
  b = static_cast<char>(b ^ 1);
  ASSERT_EQ(pwrite(fd2, &b, 1, 32 + 24 + 100), 1);
  close(fd2);
  auto g = store::TraceFile::open(path);
  const std::string said = g.ok() ? (*g)->wal_warning() : g.error().line();
  EXPECT_NE(said.find("-wal is damaged after frame 0"), std::string::npos) << said;
}

// ---- a trace that stopped early -------------------------------------------------------------

TEST(StoppedEarly, TheFileSaysWhyAndExplainToo) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  {
    auto w = make_writer(path);
    ASSERT_TRUE(w);
    ASSERT_TRUE(w->write_batch(full_chunk(kStart, 10, 11)).ok());
    ASSERT_TRUE(w->stop_early(kStart + kMs, "disk_full", 42).ok());
  }
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status(), "stopped");
  EXPECT_NE(f->incomplete_warning().find("recording stopped early because the disk was full"),
            std::string::npos)
      << f->incomplete_warning();
  EXPECT_EQ(scalar(*f, "SELECT count FROM losses WHERE source = 'store' AND cause = 'disk_full'"),
            "42");
  auto rows = analysis::load_trace(*f, {});
  ASSERT_TRUE(rows.ok()) << rows.error().line();
  bool said = false;
  for (const analysis::Caveat& c : analysis::caveats_for(*rows))
    said =
        said || (c.kind == "incomplete" && c.text.find("the disk was full") != std::string::npos &&
                 c.text.find("killed") == std::string::npos);
  EXPECT_TRUE(said) << "explain must not blame a kill";
}

// ---- secrets in command lines -------------------------------------------------------------------

TEST(Redact, SecretLookingArgumentsAreReplaced) {
  using store::redact_command_line;
  EXPECT_EQ(redact_command_line("python train.py --epochs 3 --lr=0.1"),
            "python train.py --epochs 3 --lr=0.1");
  EXPECT_EQ(redact_command_line("app --api-token=abc123 --hf_token xyz --password hunter2 -v"),
            "app --api-token=*** --hf_token *** --password *** -v");
  EXPECT_EQ(redact_command_line("app --aws-secret-key=AKIA --key-file /etc/k.pem --api-key=s3"),
            "app --aws-secret-key=*** --key-file /etc/k.pem --api-key=***");
  EXPECT_EQ(redact_command_line("env AWS_SECRET_ACCESS_KEY=abc WANDB_API_KEY=def MODE=fast run"),
            "env AWS_SECRET_ACCESS_KEY=*** WANDB_API_KEY=*** MODE=fast run");
  EXPECT_EQ(redact_command_line("git clone https://me:pw123@example.com/r.git"),
            "git clone https://me:***@example.com/r.git");
  EXPECT_EQ(redact_command_line("--token=x-is-argv0"), "--token=x-is-argv0");
  EXPECT_EQ(redact_command_line(""), "");
}

// ---- damaged values ----------------------------------------------------------------------------

TEST(DamagedValues, HistogramTotalSaturatesInsteadOfOverflowing) {
  analysis::DurHistogram h;
  h.add(INT64_MAX - 1);
  h.add(INT64_MAX - 1);
  EXPECT_EQ(h.total(), INT64_MAX);
  EXPECT_EQ(h.count(), 2u);
}

}  // namespace
}  // namespace gpuwhy
