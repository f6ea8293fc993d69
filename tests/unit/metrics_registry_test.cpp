// SPDX-License-Identifier: Apache-2.0
// The registry and the reader-side update: counts per process (name and pid), device and API,
// copy bytes by direction, off-CPU causes, the histogram, the cardinality bound
// (process="other"), and the agent's own process metrics read from /proc.
#include <gtest/gtest.h>
#include <sys/syscall.h>

#include <cstring>
#include <fstream>
#include <map>

#include "catalog/api_catalog.hpp"
#include "gpuwhy/abi/events.h"
#include "metrics/event_metrics.hpp"
#include "metrics/registry.hpp"
#include "shell_run.hpp"
#include "store_fixture.hpp"

namespace gpuwhy::metrics {
namespace {

ApiCall call(uint32_t pid, std::string_view api, int64_t dur = 1000) {
  ApiCall c;
  c.pid = c.tid = pid;
  c.api = find_api(api)->id;
  c.dur = dur;
  return c;
}

const Family& family(const std::vector<Family>& fs, const std::string& name) {
  for (const Family& f : fs)
    if (f.name == name) return f;
  static const Family none;
  ADD_FAILURE() << "no family " << name;
  return none;
}

const std::string& label(const Series& s, const std::string& name) {
  for (const auto& [n, v] : s.labels)
    if (n == name) return v;
  static const std::string none = "(none)";
  return none;
}

// label values joined with '|' -> value
std::map<std::string, double> values(const Family& f) {
  std::map<std::string, double> out;
  for (const Series& s : f.series) {
    std::string key;
    for (const auto& [n, v] : s.labels) key += (key.empty() ? "" : "|") + v;
    out[key] += s.value;
  }
  return out;
}

TEST(MetricsRegistry, CountsCallsBytesAndOffCpuByProcessName) {
  Registry reg;
  EventMetrics m(reg, [](uint32_t pid) { return pid == 1 ? "trainer" : "loader"; });
  std::vector<Event> batch;
  for (int i = 0; i < 5; ++i) batch.push_back(call(1, "cudaLaunchKernel", 3000));
  batch.push_back(call(2, "cudaLaunchKernel"));
  ApiCall copy = call(1, "cudaMemcpy", 2'000'000);
  copy.f.bytes = 4096;
  copy.f.op = static_cast<int32_t>(CopyDir::HostToDevice);
  batch.push_back(copy);
  ApiCall entry_only = call(1, "cudaLaunchKernel", 0);
  entry_only.flags = GW_FLAG_NO_RETURN;
  batch.push_back(entry_only);
  OffCpu o;
  o.pid = o.tid = 1;
  o.dur = 3'000'000'000;
  o.runq = 1'000'000'000;
  o.syscall = SYS_futex;
  batch.push_back(o);
  m.observe(batch);

  const auto fs = reg.collect();
  const auto calls = values(family(fs, "gpuwhy_api_calls"));
  // process, pid, device (0: no thread selected one), api.
  EXPECT_EQ(calls.at("trainer|1|0|cudaLaunchKernel"), 6);
  EXPECT_EQ(calls.at("loader|2|0|cudaLaunchKernel"), 1);
  EXPECT_EQ(calls.at("trainer|1|0|cudaMemcpy"), 1);
  EXPECT_EQ(values(family(fs, "gpuwhy_api_bytes")).at("trainer|1|0|cudaMemcpy|host_to_device"),
            4096);
  const auto off = values(family(fs, "gpuwhy_offcpu_seconds"));
  EXPECT_DOUBLE_EQ(off.at("trainer|1|runqueue"), 1.0);
  EXPECT_DOUBLE_EQ(off.at("trainer|1|futex"), 2.0);
  EXPECT_EQ(family(fs, "gpuwhy_traced_processes").series.at(0).value, 2);

  // The histogram: entry-only calls have no duration and are not observed.
  const Family& h = family(fs, "gpuwhy_api_call_seconds");
  for (const Series& s : h.series) {
    uint64_t n = 0;
    for (uint64_t b : s.buckets) n += b;
    if (s.labels.at(0).second == "cudaLaunchKernel") {
      EXPECT_EQ(n, 6u);
      EXPECT_NEAR(s.sum, 5 * 3e-6 + 1e-6, 1e-12);
      // 3 us lands in the (2.5 us, 5 us] bucket, 1 us in the first.
      EXPECT_EQ(s.buckets.at(0), 1u);
      EXPECT_EQ(s.buckets.at(2), 5u);
    }
    if (s.labels.at(0).second == "cudaMemcpy") {
      EXPECT_EQ(n, 1u);
    }
  }
}

TEST(MetricsRegistry, ProcessNamesPastTheBoundAreOther) {
  Registry reg(Limits{3, 1000});
  EventMetrics m(reg, [](uint32_t pid) { return "p" + std::to_string(pid); });
  std::vector<Event> batch;
  for (uint32_t pid = 1; pid <= 10; ++pid) batch.push_back(call(pid, "cudaMalloc"));
  m.observe(batch);
  const auto calls = values(family(reg.collect(), "gpuwhy_api_calls"));
  EXPECT_EQ(calls.size(), 4u);  // p1, p2, p3, other
  EXPECT_EQ(calls.at("p1|1|0|cudaMalloc"), 1);
  EXPECT_EQ(calls.at("other|other|0|cudaMalloc"), 7);
}

TEST(MetricsRegistry, LabelSetsPastTheBoundAreFoldedIntoOtherKeepingTheApi) {
  const Limits limits{64, 4};
  Registry reg(limits);
  EventMetrics m(reg, [](uint32_t pid) { return "p" + std::to_string(pid); });
  std::vector<Event> batch;
  uint64_t total = 0;
  // 20 processes x every API of the catalogue, twice: far more label sets than the bound.
  for (int round = 0; round < 2; ++round)
    for (uint32_t pid = 1; pid <= 20; ++pid)
      for (const ApiInfo& a : api_catalog()) {
        batch.push_back(call(pid, a.name));
        ++total;
      }
  m.observe(batch);
  const std::vector<Family> fs = reg.collect();
  const Family& f = family(fs, "gpuwhy_api_calls");
  size_t named = 0;
  double sum = 0;
  std::map<std::string, int> other_apis;
  for (const Series& s : f.series) {
    sum += s.value;
    if (label(s, "process") == "other")
      ++other_apis[label(s, "api")];
    else
      ++named;
  }
  EXPECT_EQ(named, limits.series);
  EXPECT_LE(f.series.size(), limits.series + api_catalog().size());
  for (const auto& [api, n] : other_apis) EXPECT_EQ(n, 1) << api;  // one "other" series per API
  EXPECT_EQ(sum, static_cast<double>(total));                      // nothing lost by folding
}

TEST(MetricsRegistry, ExitEndsAProcessAndRenameRelabelsIt) {
  Registry reg;
  EventMetrics m(reg, [](uint32_t) { return "first"; });
  TaskRename r;
  r.pid = r.tid = 7;
  std::memcpy(r.comm.data(), "second", 6);
  ProcEvent exit;
  exit.kind = ProcEventKind::Exit;
  exit.pid = exit.tid = 7;
  m.observe({call(7, "cudaFree"), r, call(7, "cudaFree")});
  auto fs = reg.collect();
  EXPECT_EQ(family(fs, "gpuwhy_traced_processes").series.at(0).value, 1);
  const auto calls = values(family(fs, "gpuwhy_api_calls"));
  EXPECT_EQ(calls.at("first|7|0|cudaFree"), 1);
  EXPECT_EQ(calls.at("second|7|0|cudaFree"), 1);
  m.observe({exit});
  EXPECT_EQ(family(reg.collect(), "gpuwhy_traced_processes").series.at(0).value, 0);
  // The rings are not ordered: a call read after the exit keeps the process's name.
  m.observe({call(7, "cudaFree")});
  EXPECT_EQ(values(family(reg.collect(), "gpuwhy_api_calls")).at("second|7|0|cudaFree"), 2);
  EXPECT_EQ(family(reg.collect(), "gpuwhy_traced_processes").series.at(0).value, 0);
}

// A process gone before the reader reaches its first call (a short job on a loaded host) keeps
// the name the agent's scan read while it lived, instead of "unknown".
TEST(MetricsRegistry, AProcessGoneBeforeItsFirstCallKeepsItsScannedName) {
  Registry reg;
  EventMetrics m(reg, [](uint32_t) { return std::string(); });  // /proc/PID is gone
  m.remember_name(42, "launch_storm");
  m.observe({call(42, "cudaMalloc"), call(43, "cudaMalloc")});
  const auto calls = values(family(reg.collect(), "gpuwhy_api_calls"));
  EXPECT_EQ(calls.at("launch_storm|42|0|cudaMalloc"), 1);
  EXPECT_EQ(calls.at("unknown|43|0|cudaMalloc"), 1);  // never scanned, never exec'd while traced
}

// Eight ranks all named python3 are eight series, told apart by pid.
TEST(MetricsRegistry, RanksOfOneNameAreSeriesOfTheirOwn) {
  Registry reg;
  EventMetrics m(reg, [](uint32_t) { return "python3"; });
  std::vector<Event> batch;
  for (uint32_t pid = 100; pid < 108; ++pid)
    for (uint32_t i = 0; i <= pid - 100; ++i) batch.push_back(call(pid, "cudaLaunchKernel"));
  m.observe(batch);
  const auto calls = values(family(reg.collect(), "gpuwhy_api_calls"));
  ASSERT_EQ(calls.size(), 8u);
  for (uint32_t pid = 100; pid < 108; ++pid)
    EXPECT_EQ(calls.at("python3|" + std::to_string(pid) + "|0|cudaLaunchKernel"), pid - 99);
}

// A call's device is its thread's last successful cudaSetDevice before it (device 0 before any),
// as the audit joins them; the selection itself counts under the device it leaves.
TEST(MetricsRegistry, DeviceIsTheThreadsLastSuccessfulSelection) {
  Registry reg;
  EventMetrics m(reg, [](uint32_t pid) { return "p" + std::to_string(pid); });
  auto on = [](uint32_t pid, uint32_t tid, std::string_view api) {
    ApiCall c = call(pid, api);
    c.tid = tid;
    return c;
  };
  auto select = [&](uint32_t tid, uint64_t ordinal, int64_t ret = 0, uint16_t flags = 0) {
    ApiCall c = on(20, tid, "cudaSetDevice");
    c.f.addr = ordinal;
    c.ret = ret;
    c.flags = flags;
    return c;
  };
  ApiCall copy = on(20, 21, "cudaMemcpy");
  copy.f.bytes = 100;
  copy.f.op = static_cast<int32_t>(CopyDir::HostToDevice);
  ProcEvent thread_exit;
  thread_exit.kind = ProcEventKind::ThreadExit;
  thread_exit.pid = 20;
  thread_exit.tid = 21;
  m.observe({on(20, 21, "cudaLaunchKernel"), select(21, 2), on(20, 21, "cudaLaunchKernel"),
             select(21, 5, 101),  // failed: still device 2
             select(21, 6, 0, GW_FLAG_NO_RETURN), on(20, 21, "cudaLaunchKernel"), copy,
             on(20, 22, "cudaLaunchKernel"),  // another thread: its own device, 0
             select(22, 40), on(20, 22, "cudaLaunchKernel"), thread_exit,
             on(30, 21, "cudaLaunchKernel")});  // tid 21 reused by another process
  const auto fs = reg.collect();
  const auto calls = values(family(fs, "gpuwhy_api_calls"));
  EXPECT_EQ(calls.at("p20|20|0|cudaLaunchKernel"), 2);
  EXPECT_EQ(calls.at("p20|20|0|cudaSetDevice"), 2);
  EXPECT_EQ(calls.at("p20|20|2|cudaLaunchKernel"), 2);
  EXPECT_EQ(calls.at("p20|20|2|cudaSetDevice"), 2);
  EXPECT_EQ(calls.at("p20|20|2|cudaMemcpy"), 1);
  EXPECT_EQ(calls.at("p20|20|other|cudaLaunchKernel"), 1);  // ordinal 40: past the labelled 16
  EXPECT_EQ(calls.at("p30|30|0|cudaLaunchKernel"), 1);
  EXPECT_EQ(calls.size(), 7u);
  const auto bytes = values(family(fs, "gpuwhy_api_bytes"));
  ASSERT_EQ(bytes.size(), 1u);
  EXPECT_EQ(bytes.at("p20|20|2|cudaMemcpy|host_to_device"), 100);
}

// Seconds from ns print in the digits they have: 123456789 ns is 0.123456789, not the
// 0.12345678900000001 that multiplying by 1e-9 gives.
TEST(MetricsRegistry, SecondsPrintAsTheShortestDecimal) {
  Registry reg;
  EventMetrics m(reg, [](uint32_t) { return "p"; });
  OffCpu o;
  o.pid = o.tid = 5;
  o.dur = 123'456'789;
  m.observe({o, call(5, "cudaMalloc", 123'456'789)});
  std::string out;
  write_exposition(out, reg.collect(), Format::Text004);
  EXPECT_NE(out.find("\ngpuwhy_offcpu_seconds_total{process=\"p\",pid=\"5\",cause=\"other\"} "
                     "0.123456789\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\ngpuwhy_api_call_seconds_sum{api=\"cudaMalloc\"} 0.123456789\n"),
            std::string::npos);
}

// A metric whose name ends in a unit says so (OpenMetrics # UNIT); text 0.0.4 has no UNIT line.
TEST(MetricsRegistry, UnitsAreTheNamesSuffixesAndOpenMetricsStatesThem) {
  Registry reg;
  EventMetrics m(reg, [](uint32_t) { return "p"; });
  ApiCall copy = call(5, "cudaMemcpy");
  copy.f.bytes = 8;
  OffCpu o;
  o.pid = o.tid = 5;
  o.dur = 1000;
  m.observe({copy, o});
  const auto fs = reg.collect();
  std::string om, text;
  write_exposition(om, fs, Format::OpenMetrics);
  write_exposition(text, fs, Format::Text004);
  size_t with_unit = 0;
  for (const Family& f : fs) {
    const std::string want = f.name.ends_with("_seconds") ? "seconds"
                             : f.name.ends_with("_bytes") ? "bytes"
                                                          : "";
    EXPECT_EQ(f.unit, want) << f.name;
    if (want.empty()) continue;
    ++with_unit;
    EXPECT_NE(om.find("# TYPE " + f.name + " " + (f.type == MetricType::Counter ? "counter" : "") +
                      (f.type == MetricType::Gauge ? "gauge" : "") +
                      (f.type == MetricType::Histogram ? "histogram" : "") + "\n# UNIT " + f.name +
                      " " + want + "\n"),
              std::string::npos)
        << f.name;
  }
  // api_call_seconds, api_bytes, offcpu_seconds, and the process collector's cpu, memory, start.
  EXPECT_GE(with_unit, 7u);
  EXPECT_EQ(text.find("# UNIT"), std::string::npos);
}

// Debian's promtool (scripts/install-export-tools) lints a scrape with every kind of series:
// names, types, HELP, units, label syntax.
TEST(MetricsRegistry, PromtoolChecksTheScrape) {
  if (!gpuwhy::testing::have_tool("promtool"))
    GTEST_SKIP() << "promtool is not installed (Debian package prometheus; "
                    "scripts/install-export-tools)";
  Registry reg;
  EventMetrics m(reg, [](uint32_t pid) { return pid == 1 ? "python3" : "we\"ird\\name"; });
  ApiCall copy = call(1, "cudaMemcpy", 5'000'000);
  copy.f.bytes = 4096;
  copy.f.op = static_cast<int32_t>(CopyDir::DeviceToHost);
  ApiCall select = call(2, "cudaSetDevice");
  select.f.addr = 3;
  OffCpu o;
  o.pid = o.tid = 2;
  o.dur = 2'000'000;
  o.runq = 500'000;
  m.observe({copy, call(2, "cudaLaunchKernel"), select, call(2, "cudaLaunchKernel"), o});
  reg.set_totals({{{"api_call", 4}}, {{"bpf", "events_ring_full", 0}}});
  std::string text;
  write_exposition(text, reg.collect(), Format::Text004);
  gpuwhy::testing::TempDir dir;
  {
    std::ofstream f(dir.file("scrape.txt"));
    f << text;
  }
  const gpuwhy::testing::ShellResult r =
      gpuwhy::testing::shell("promtool check metrics < " + dir.file("scrape.txt") + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out << "\n" << text;
  EXPECT_EQ(r.out, "") << text;  // no lint warning either
  EXPECT_NE(text.find("process_resident_memory_bytes "), std::string::npos);
  EXPECT_NE(text.find("gpuwhy_api_calls_total{process=\"we\\\"ird\\\\name\",pid=\"2\",device=\"3\","
                      "api=\"cudaLaunchKernel\"} 1\n"),
            std::string::npos)
      << text;
}

TEST(MetricsRegistry, SleepCauses) {
  OffCpu o;
  o.syscall = -1;
  EXPECT_EQ(sleep_cause(o), OffCpuCause::Other);
  o.syscall = SYS_read;
  EXPECT_EQ(sleep_cause(o), OffCpuCause::Syscall);
  o.prev_state = 2;
  EXPECT_EQ(sleep_cause(o), OffCpuCause::Uninterruptible);
}

}  // namespace
}  // namespace gpuwhy::metrics
