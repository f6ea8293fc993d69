// SPDX-License-Identifier: Apache-2.0
// Nothing left behind, nothing overwritten unasked (issue 34): a reader's private copy of a trace
// is removed when `query`, `export -o -` or `explain` is piped into `head` (SIGPIPE) or ended by
// SIGTERM; a CSV/JSONL export that fails half way removes the files it wrote; `explain --html`
// refuses an existing file without --force; a trace with no event gets one line saying so, not
// "empty window" and the bad-flags exit code. The commands run as the real binary, as users run
// them (a shell pipeline), with a private TMPDIR to look into.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "export/export_scope.hpp"
#include "shell_run.hpp"
#include "store_fixture.hpp"

namespace gpuwhy::testing {
namespace {

namespace fs = std::filesystem;

const std::string kGpuwhy = std::string(GW_BINARY_DIR) + "/gpuwhy";

// A trace whose writer was killed (so a -wal holds its data), copied into a directory `nobody`
// cannot write: readers there must go through a private copy in $TMPDIR.
struct ReadOnlyWalTrace {
  TempDir dir;
  std::string ro, db, tmp;

  ReadOnlyWalTrace() {
    const std::string path = dir.file("t.db");
    const pid_t child = fork();
    if (child == 0) {
      auto w = store::TraceWriter::create(path, session_info());
      if (!w.ok() || !(*w)->write_batch(full_chunk(kStart, 10, 11)).ok()) _exit(2);
      kill(getpid(), SIGKILL);
    }
    int st = 0;
    waitpid(child, &st, 0);
    ro = dir.file("ro");
    mkdir(ro.c_str(), 0755);
    db = ro + "/t.db";
    fs::copy_file(path, db);
    fs::copy_file(path + "-wal", db + "-wal");
    chmod(db.c_str(), 0644);
    chmod((db + "-wal").c_str(), 0644);
    chmod(dir.path().c_str(), 0755);
    chmod(ro.c_str(), 0555);
    tmp = dir.file("tmp");
    mkdir(tmp.c_str(), 0777);
    chmod(tmp.c_str(), 0777);
  }
  bool tmp_empty() const { return fs::is_empty(tmp); }
};

// Runs `command` under /bin/bash as `nobody` (root can write anywhere, and the copy is only made
// for a reader who cannot) with TMPDIR set; returns gpuwhy's own status (the first command of
// the pipeline) as bash reports it: 141 for SIGPIPE, 143 for SIGTERM.
int run_as_nobody(const std::string& tmpdir, const std::string& command) {
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(120);
    setenv("TMPDIR", tmpdir.c_str(), 1);
    const std::string line = command + "; exit ${PIPESTATUS[0]}";
    execl("/bin/bash", "bash", "-c", line.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int st = 0;
  waitpid(child, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(Leftovers, ThePremiseReadsThroughACopy) {
  ReadOnlyWalTrace t;
  // The reader in this set-up does make a copy (else the tests below could not fail), and
  // removes it when it closes the file.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(120);
    setenv("TMPDIR", t.tmp.c_str(), 1);
    int code = 0;
    {
      auto f = store::TraceFile::open(t.db);
      if (!f.ok()) _exit(12);
      if (fs::is_empty(t.tmp)) code = 13;
    }
    _exit(code);
  }
  int st = 0;
  ASSERT_EQ(waitpid(child, &st, 0), child);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << "12: not opened, 13: no copy made";
  EXPECT_TRUE(t.tmp_empty());
}

TEST(Leftovers, PipeClosedEarlyLeavesNoCopy) {
  if (!have_tool("head")) GTEST_SKIP() << "no head";
  ReadOnlyWalTrace t;
  const std::string db = shell_quote(t.db);
  const std::string g = shell_quote(kGpuwhy);
  struct Case {
    const char* what;
    std::string command;
    bool must_be_killed;  // its output is far larger than a pipe holds
  };
  const Case cases[] = {
      {"query",
       g + " query --db " + db +
           " \"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT "
           "3000000) SELECT i, 'padding padding padding' FROM n\" | head -1 >/dev/null",
       true},
      {"export -o -",
       g + " export --db " + db + " --format csv --table api_calls -o - | head -1 >/dev/null",
       true},
      {"explain", g + " explain --db " + db + " | head -1 >/dev/null", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    for (int i = 0; i < 3; ++i) {
      const int code = run_as_nobody(t.tmp, c.command);
      if (c.must_be_killed)
        EXPECT_EQ(code, 128 + SIGPIPE);
      else
        EXPECT_TRUE(code == 0 || code == 128 + SIGPIPE) << code;
      EXPECT_TRUE(t.tmp_empty()) << "the private copy was left in $TMPDIR";
    }
  }
}

// A query that runs until stopped, as `nobody`, ended by `sig` once its copy is there.
void signal_leaves_no_copy(int sig) {
  ReadOnlyWalTrace t;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(120);
    setenv("TMPDIR", t.tmp.c_str(), 1);
    const int null = ::open("/dev/null", O_WRONLY);
    dup2(null, 1);
    execl(kGpuwhy.c_str(), "gpuwhy", "query", "--timeout", "0", "--db", t.db.c_str(),
          "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n WHERE "
          "i < 0",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait (bounded) for the copy: the statement runs forever after it, so there is no race.
  bool copied = false;
  for (int i = 0; i < 6000 && !copied; ++i) {
    copied = !t.tmp_empty();
    if (!copied) usleep(10'000);
  }
  EXPECT_TRUE(copied) << "the reader never made its copy";
  kill(child, sig);
  int st = 0;
  ASSERT_EQ(waitpid(child, &st, 0), child);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == sig) << st;
  EXPECT_TRUE(t.tmp_empty()) << "the private copy was left in $TMPDIR";
}

TEST(Leftovers, SigtermLeavesNoCopy) { signal_leaves_no_copy(SIGTERM); }
TEST(Leftovers, SigintLeavesNoCopy) { signal_leaves_no_copy(SIGINT); }

// Exports a small complete trace to CSV with `limit_bytes` as the largest file the export may
// write (RLIMIT_FSIZE: a disk that fills half way); returns the exit code and stderr.
std::pair<int, std::string> export_with_file_limit(const std::string& db, const std::string& out,
                                                   const std::string& format, rlim_t limit_bytes,
                                                   const std::string& err_file) {
  const pid_t child = fork();
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead of killing us
    const int fd = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    // Limit after the error file is open: stderr itself stays writable.
    struct rlimit rl = {limit_bytes, limit_bytes};
    setrlimit(RLIMIT_FSIZE, &rl);
    execl(kGpuwhy.c_str(), "gpuwhy", "export", "--db", db.c_str(), "--format", format.c_str(), "-o",
          out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int st = 0;
  waitpid(child, &st, 0);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(err_file)};
}

std::string complete_trace(const TempDir& dir) {
  const std::string db = dir.file("t.db");
  auto w = make_writer(db);
  EXPECT_TRUE(w);
  if (!w) return db;
  EXPECT_TRUE(w->write_batch(full_chunk(kStart + kMs, 10, 11)).ok());
  EXPECT_TRUE(w->finish(kStart + 100 * kMs).ok());
  return db;
}

TEST(Leftovers, FailedTextExportRemovesWhatItWrote) {
  TempDir dir;
  const std::string db = complete_trace(dir);
  for (const std::string format : {"csv", "jsonl"}) {
    SCOPED_TRACE(format);
    // The whole export first: its files' sizes tell which limit fails after some tables.
    const std::string whole = dir.file("whole-" + format);
    auto [ok, ok_err] = export_with_file_limit(db, whole, format, RLIM_INFINITY, dir.file("err"));
    ASSERT_EQ(ok, 0) << ok_err;
    uintmax_t largest = 0;
    size_t files = 0;
    for (const auto& e : fs::directory_iterator(whole)) {
      largest = std::max(largest, fs::file_size(e.path()));
      ++files;
    }
    ASSERT_GT(files, 3u);
    ASSERT_GT(largest, 1000u);

    // Into a directory the export makes: after the failure, no directory.
    const std::string out = dir.file("out-" + format);
    auto [code, err] = export_with_file_limit(db, out, format, largest - 1, dir.file("err"));
    EXPECT_EQ(code, 1) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("removed"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(out)) << "a failed export left its directory";

    // Into a directory that was there, holding a file of someone else's: only that file stays.
    const std::string mine = dir.file("mine-" + format);
    fs::create_directory(mine);
    write_file(mine + "/notes.txt", "kept");
    auto [code2, err2] = export_with_file_limit(db, mine, format, largest - 1, dir.file("err"));
    EXPECT_EQ(code2, 1) << err2;
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(mine)) left.push_back(e.path().filename());
    EXPECT_EQ(left, std::vector<std::string>{"notes.txt"});
  }
}

TEST(Leftovers, ExplainHtmlNeedsForceToReplaceAFile) {
  TempDir dir;
  const std::string db = complete_trace(dir);
  const std::string page = dir.file("report.html");
  write_file(page, "last week's report");
  const std::string g = shell_quote(kGpuwhy) + " explain --db " + shell_quote(db) + " --html ";
  auto r = shell(g + shell_quote(page) + " 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("exists; pass --force"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(page), "last week's report");
  r = shell(g + shell_quote(db) + " --force 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("is the trace itself"), std::string::npos) << r.out;
  r = shell(g + shell_quote(page) + " --force 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(slurp(page).rfind("<!DOCTYPE html>", 0), 0u);
  r = shell(g + shell_quote(dir.file("new.html")) + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

TEST(Leftovers, TraceKilledAtStartUpSaysSo) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto w = store::TraceWriter::create(db, session_info());
    if (!w.ok()) _exit(2);
    kill(getpid(), SIGKILL);  // before any batch: the file holds its session only
  }
  int st = 0;
  waitpid(child, &st, 0);
  const std::vector<std::string> commands = {"explain", "explain --json", "audit",
                                             "export --format csv -o " + dir.file("csv")};
  for (const std::string& cmd : commands) {
    SCOPED_TRACE(cmd);
    auto r = shell(shell_quote(kGpuwhy) + " " + cmd + " --db " + shell_quote(db) + " 2>&1");
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_NE(r.out.find("holds no events: the recording was killed before it stored any event"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("empty window"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace gpuwhy::testing
