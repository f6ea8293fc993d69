// SPDX-License-Identifier: Apache-2.0
// The NVIDIA driver boundary (issue 21): ioctls of traced threads on the driver's device files
// are timed from the syscall tracepoints, each file told from its descriptor in the kernel. There
// is no GPU here: GPUWHY_TEST_DRIVER_PATH (tests only) points the agent at stand-in files in a
// temporary directory, and the driver_ioctls workload issues real ioctls on them, from two
// threads, and on files that must be left out (another name, another directory, /dev/null).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "store/store.hpp"
#include "support/process.hpp"
#include "support/scenario.hpp"

namespace gpuwhy::testing {
namespace {

using nlohmann::json;

class DriverIoctls : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_F(DriverIoctls, StandInDeviceFilesAreTimedPerThreadAndOthersLeftOut) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  // DIR/dev/nvidia*, as /dev/nvidia* (the kernel compares the file's and its directory's names).
  // The agent looks for the files at start-up: the driver is present when one exists.
  const std::string dev = dir.file("dev");
  ASSERT_EQ(mkdir(dev.c_str(), 0700), 0);
  {
    std::FILE* f = std::fopen((dev + "/nvidiactl").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  setenv("GPUWHY_TEST_DRIVER_PATH", (dev + "/nvidia").c_str(), 1);
  Agent agent(db, {"--no-host-libs", "--with", "driver-ioctls"}, dir);
  unsetenv("GPUWHY_TEST_DRIVER_PATH");
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  const RunResult w =
      run({workload("driver_ioctls"), "--dir", dev, "--count", "40"}, {{"GW_START_DELAY_MS", "0"}});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  const json s = summary_of(w.out);
  const std::string pid = std::to_string(s["pid"].get<int64_t>());
  const int64_t tid = s["tid"].get<int64_t>(), tid2 = s["tid2"].get<int64_t>();

  auto f = store::TraceFile::open(db);
  ASSERT_TRUE(f.ok()) << f.error().line();
  // Per thread: 40 ioctls each, every one with the request, a duration and ENOTTY; none on
  // DIR/other, DIR/sub/nvidia0 or /dev/null (the syscall family is off: no other row at all).
  auto q = store::run_query(*f.value(),
                            "SELECT tid, count(*), min(request), max(request), min(ret), max(ret), "
                            "min(dur) FROM syscalls WHERE pid = " +
                                pid + " GROUP BY tid ORDER BY tid");
  ASSERT_TRUE(q.ok()) << q.error().line();
  ASSERT_EQ(q->rows.size(), 2u) << "two threads issued driver ioctls";
  for (const auto& row : q->rows) {
    const int64_t t = std::stoll(row[0]);
    EXPECT_TRUE(t == tid || t == tid2) << "an ioctl of thread " << t;
    EXPECT_EQ(row[1], "40") << "thread " << t << ": each of its ioctls on a driver file, no other";
    EXPECT_EQ(std::stoll(row[2]), s["request"].get<int64_t>());
    EXPECT_EQ(row[2], row[3]);
    EXPECT_EQ(row[4], "-25") << "ENOTTY: a regular file";
    EXPECT_EQ(row[5], "-25");
    EXPECT_GT(std::stoll(row[6]), 0) << "timed";
  }
  auto fam = store::run_query(*f.value(),
                              "SELECT state FROM probe_families WHERE family = 'driver_ioctls'");
  ASSERT_TRUE(fam.ok()) << fam.error().line();
  ASSERT_EQ(fam->rows.size(), 1u);
  EXPECT_EQ(fam->rows[0][0], "on");

  // audit: the process's driver time, all of it outside its runtime calls.
  const RunResult a = run({gpuwhy_binary(), "audit", "--db", db, "--pid", pid, "--json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const json d = json::parse(a.out)["processes"][0]["driver_ioctls"];
  EXPECT_EQ(d["count"], 80) << d;
  EXPECT_EQ(d["threads"], 2) << d;
  EXPECT_GT(d["ns"].get<int64_t>(), 0);
  EXPECT_EQ(d["inside_calls_ns"], 0) << "no GPU call was in progress";
  const RunResult t = run({gpuwhy_binary(), "audit", "--db", db, "--pid", pid});
  EXPECT_NE(t.out.find("driver ioctls: 80 on the GPU driver's files in 2 thread(s)"),
            std::string::npos)
      << t.out;
}

TEST_F(DriverIoctls, NoDriverFilesMeansTheFamilyIsOffAndSaysWhy) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  ASSERT_EQ(mkdir(dir.file("dev").c_str(), 0700), 0);
  setenv("GPUWHY_TEST_DRIVER_PATH", dir.file("dev/nvidia").c_str(), 1);  // nothing there
  Agent agent(db, {"--no-host-libs", "--with", "driver-ioctls"}, dir);
  unsetenv("GPUWHY_TEST_DRIVER_PATH");
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  auto f = store::TraceFile::open(db);
  ASSERT_TRUE(f.ok()) << f.error().line();
  auto fam = store::run_query(
      *f.value(), "SELECT state, detail FROM probe_families WHERE family = 'driver_ioctls'");
  ASSERT_TRUE(fam.ok()) << fam.error().line();
  ASSERT_EQ(fam->rows.size(), 1u);
  EXPECT_EQ(fam->rows[0][0], "off");
  EXPECT_NE(fam->rows[0][1].find("no driver device files"), std::string::npos) << fam->rows[0][1];
}

}  // namespace
}  // namespace gpuwhy::testing
