// SPDX-License-Identifier: Apache-2.0
// The registry and the reader-side update: counts per process name and API, copy bytes by
// direction, off-CPU causes, the histogram, and the cardinality bound (process="other").
#include <gtest/gtest.h>
#include <sys/syscall.h>

#include <cstring>
#include <map>

#include "catalog/api_catalog.hpp"
#include "gpuwhy/abi/events.h"
#include "metrics/event_metrics.hpp"
#include "metrics/registry.hpp"

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
  EXPECT_EQ(calls.at("trainer|cudaLaunchKernel"), 6);
  EXPECT_EQ(calls.at("loader|cudaLaunchKernel"), 1);
  EXPECT_EQ(calls.at("trainer|cudaMemcpy"), 1);
  EXPECT_EQ(values(family(fs, "gpuwhy_api_bytes")).at("trainer|cudaMemcpy|host_to_device"), 4096);
  const auto off = values(family(fs, "gpuwhy_offcpu_seconds"));
  EXPECT_DOUBLE_EQ(off.at("trainer|runqueue"), 1.0);
  EXPECT_DOUBLE_EQ(off.at("trainer|futex"), 2.0);
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
  EXPECT_EQ(calls.at("p1|cudaMalloc"), 1);
  EXPECT_EQ(calls.at("other|cudaMalloc"), 7);
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
    if (s.labels.at(0).second == "other")
      ++other_apis[s.labels.at(1).second];
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
  EXPECT_EQ(calls.at("first|cudaFree"), 1);
  EXPECT_EQ(calls.at("second|cudaFree"), 1);
  m.observe({exit});
  EXPECT_EQ(family(reg.collect(), "gpuwhy_traced_processes").series.at(0).value, 0);
  // The rings are not ordered: a call read after the exit keeps the process's name.
  m.observe({call(7, "cudaFree")});
  EXPECT_EQ(values(family(reg.collect(), "gpuwhy_api_calls")).at("second|cudaFree"), 2);
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
  EXPECT_EQ(calls.at("launch_storm|cudaMalloc"), 1);
  EXPECT_EQ(calls.at("unknown|cudaMalloc"), 1);  // never scanned, never exec'd while traced
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
