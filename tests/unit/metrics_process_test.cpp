// SPDX-License-Identifier: Apache-2.0
// The agent's own process metrics, read as the Prometheus client libraries' process collector
// reads them: exact values from a /proc directory made by the test (a command name with spaces
// and a parenthesis, ticks and pages converted), left out where a file is missing, and sane
// values from this test process's own /proc/self.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

#include "metrics/exposition.hpp"
#include "metrics/process_metrics.hpp"
#include "store_fixture.hpp"

namespace gpuwhy::metrics {
namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

// The map points into `fs`: keep the families alive while it is used (never a temporary).
std::map<std::string, const Family*> by_name(const std::vector<Family>& fs) {
  std::map<std::string, const Family*> out;
  for (const Family& f : fs) out[f.name] = &f;
  return out;
}
std::map<std::string, const Family*> by_name(std::vector<Family>&&) = delete;

TEST(MetricsProcess, ReadsTheCollectorsSixValuesFromProc) {
  gpuwhy::testing::TempDir dir;
  const std::string proc = dir.file("4242");
  std::filesystem::create_directories(proc + "/fd");
  for (const char* fd : {"0", "1", "2", "7"}) write(proc + "/fd/" + fd, "");
  // Fields 3.. after the name: utime 250, stime 75 (ticks), starttime 123456, vsize, rss 2560.
  write(proc + "/stat",
        "4242 (gpu why) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 3 0 123456 "
        "104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n");
  write(proc + "/limits",
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max cpu time              unlimited            unlimited            seconds   \n"
        "Max open files            1024                 524288               files     \n");
  write(dir.file("stat"), "cpu  1 2 3 4\nbtime 1700000000\nprocesses 99\n");
  const ProcSource source{proc, dir.file("stat"), 100, 4096};
  const std::vector<Family> fs = process_families(source);
  const auto f = by_name(fs);
  ASSERT_EQ(fs.size(), 6u);
  auto value = [&](const char* name) { return f.at(name)->series.at(0).value; };
  EXPECT_EQ(f.at("process_cpu_seconds")->type, MetricType::Counter);
  EXPECT_EQ(value("process_cpu_seconds"), 3.25);
  EXPECT_EQ(value("process_open_fds"), 4);
  EXPECT_EQ(value("process_max_fds"), 1024);  // the soft limit
  EXPECT_EQ(value("process_virtual_memory_bytes"), 104857600);
  EXPECT_EQ(value("process_resident_memory_bytes"), 2560.0 * 4096);
  EXPECT_EQ(f.at("process_start_time_seconds")->type, MetricType::Gauge);
  // The output names and digits the client libraries give.
  std::string out;
  write_exposition(out, fs, Format::Text004);
  EXPECT_NE(out.find("\nprocess_cpu_seconds_total 3.25\n"), std::string::npos) << out;
  EXPECT_NE(out.find("# TYPE process_cpu_seconds_total counter\n"), std::string::npos);
  EXPECT_NE(out.find("\nprocess_start_time_seconds 1700001234.56\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\nprocess_resident_memory_bytes 10485760\n"), std::string::npos);
  std::string om;
  write_exposition(om, fs, Format::OpenMetrics);
  EXPECT_NE(om.find("# TYPE process_cpu_seconds counter\n# UNIT process_cpu_seconds seconds\n"),
            std::string::npos)
      << om;
  EXPECT_EQ(om.find("# UNIT process_open_fds"), std::string::npos);
}

TEST(MetricsProcess, WhatCannotBeReadIsLeftOut) {
  gpuwhy::testing::TempDir dir;
  EXPECT_TRUE(process_families({dir.file("gone"), dir.file("stat"), 100, 4096}).empty());
  // A stat without btime: everything but the start time.
  const std::string proc = dir.file("1");
  std::filesystem::create_directories(proc + "/fd");
  write(proc + "/stat", "1 (init) S 0 1 1 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 10 1000 1\n");
  write(dir.file("stat"), "cpu 1 2 3\n");
  const std::vector<Family> ff = process_families({proc, dir.file("stat"), 100, 4096});
  const auto f = by_name(ff);
  EXPECT_EQ(f.count("process_start_time_seconds"), 0u);
  EXPECT_EQ(f.count("process_max_fds"), 0u);  // no limits file
  EXPECT_EQ(f.at("process_open_fds")->series.at(0).value, 0);
  EXPECT_EQ(f.at("process_cpu_seconds")->series.at(0).value, 0.1);
  // A truncated stat: the fields it lacks are left out, not read as 0.
  write(proc + "/stat", "1 (init) S 0 1 1 0 -1 0 0 0 0 0 5\n");
  const std::vector<Family> gf = process_families({proc, dir.file("stat"), 100, 4096});
  const auto g = by_name(gf);
  EXPECT_EQ(g.count("process_cpu_seconds"), 0u);
  EXPECT_EQ(g.count("process_resident_memory_bytes"), 0u);
}

TEST(MetricsProcess, ThisProcessFromProcSelf) {
  const std::vector<Family> fs = process_families();
  const auto f = by_name(fs);
  ASSERT_EQ(f.size(), 6u);
  auto value = [&](const char* name) { return f.at(name)->series.at(0).value; };
  rlimit nofile{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &nofile), 0);
  EXPECT_EQ(value("process_max_fds"), static_cast<double>(nofile.rlim_cur));
  EXPECT_GE(value("process_open_fds"), 3);  // stdin, stdout, stderr at least
  EXPECT_GT(value("process_resident_memory_bytes"), 0);
  EXPECT_GE(value("process_virtual_memory_bytes"), value("process_resident_memory_bytes"));
  EXPECT_GE(value("process_cpu_seconds"), 0);
  // Started before now (ticks round down), after 2020.
  EXPECT_LE(value("process_start_time_seconds"), static_cast<double>(std::time(nullptr)) + 1);
  EXPECT_GT(value("process_start_time_seconds"), 1.58e9);
}

}  // namespace
}  // namespace gpuwhy::metrics
