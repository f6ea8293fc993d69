// SPDX-License-Identifier: Apache-2.0
// The agent's command line and its lifecycle: bad input gets one clear line and a non-zero exit;
// a second trace to the same file is refused; SIGKILL leaves a readable file.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "store/store.hpp"
#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

class TraceCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
  TempDir dir;
};

TEST(TraceFlags, BadInputGetsOneLineAndNonZeroExit) {
  // These are refused before anything is loaded, so they need no root.
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  const Case cases[] = {
      {{"trace", "--duration", "soon"}, "not a duration"},
      {{"trace", "--ring-kb", "3"}, "power of two"},
      {{"trace", "--launch-arg-sampling", "48"}, "launch-arg-sampling"},
      {{"trace", "--entry-only", "launch,lunch"}, "lunch"},
      {{"trace", "--no-such-flag"}, "no-such-flag"},
      {{"trace", "--without", "syscalls,gpu"}, "gpu"},
      {{"trace", "--with", "tcp,syscalls", "--without", "syscalls"}, "contradict"},
      {{"trace", "--sample-hz", "20000"}, "--sample-hz"},
      {{"frobnicate"}, "frobnicate"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {gpuwhy_binary()};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    RunResult r = run(argv);
    EXPECT_NE(r.exit_code, 0) << c.needle;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("gpuwhy: "), std::string::npos) << r.err;
  }
}

TEST_F(TraceCli, UnknownPidIsRefused) {
  RunResult r = run({gpuwhy_binary(), "trace", "--pid", "999999999", "--out", dir.file("t.db"),
                     "--duration", "1s"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no process with pid 999999999"), std::string::npos) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(access(dir.file("t.db").c_str(), F_OK), 0) << "no file may be left behind";
}

TEST_F(TraceCli, DurationEndsCleanlyWithACompleteFile) {
  RunResult r = run({gpuwhy_binary(), "trace", "--quiet", "--duration", "1s", "--out",
                     dir.file("t.db")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("events lost"), std::string::npos) << r.err;
  auto f = store::TraceFile::open(dir.file("t.db"));
  ASSERT_TRUE(f.ok()) << f.error().line();
  EXPECT_EQ((*f)->status(), "complete");
  auto q = store::run_query(**f, "SELECT count(*) FROM losses");
  ASSERT_TRUE(q.ok()) << q.error().line();
  EXPECT_GE(std::stoi(q->rows.at(0).at(0)), 5) << "every loss cause is stored, zeros included";
}

TEST_F(TraceCli, SecondTraceToTheSameFileIsRefused) {
  Agent first(dir.file("t.db"), {"--duration", "30s"}, dir);
  ASSERT_TRUE(first.ready()) << first.stderr_text();
  RunResult second = run({gpuwhy_binary(), "trace", "--quiet", "--duration", "1s", "--out",
                          dir.file("t.db")});
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("another gpuwhy trace"), std::string::npos) << second.err;
  EXPECT_EQ(first.stop(), 0) << first.stderr_text();
}

TEST_F(TraceCli, SigtermEndsCleanly) {
  Agent agent(dir.file("t.db"), {}, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  EXPECT_EQ(agent.stop_with(SIGTERM), 0) << agent.stderr_text();
  auto t = store::TraceFile::open(dir.file("t.db"));
  ASSERT_TRUE(t.ok()) << t.error().line();
  EXPECT_EQ((*t)->status(), "complete");
}

TEST_F(TraceCli, SigkillLeavesAReadableIncompleteFile) {
  Agent agent(dir.file("t.db"), {}, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  // Some host activity while tracing: the lifecycle ring sees these execs.
  for (int i = 0; i < 3; ++i) run({"/bin/true"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a few batches commit
  EXPECT_EQ(agent.kill9(), 128 + SIGKILL);
  auto t = store::TraceFile::open(dir.file("t.db"));
  ASSERT_TRUE(t.ok()) << t.error().line();
  EXPECT_EQ((*t)->status(), "recording");
  EXPECT_FALSE((*t)->is_live());
  auto q = store::run_query(**t, "PRAGMA integrity_check");
  ASSERT_TRUE(q.ok()) << q.error().line();
  EXPECT_EQ(q->rows.at(0).at(0), "ok");
  auto s = store::run_query(**t, "SELECT count(*) FROM session WHERE end_ns IS NULL");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->rows.at(0).at(0), "1");
}

}  // namespace
}  // namespace gpuwhy::testing
