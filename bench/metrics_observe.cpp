// SPDX-License-Identifier: Apache-2.0
// What `trace --metrics` costs the ring reader per event: EventMetrics::observe() on batches of
// 16,384 decoded events shaped like a launch-bound job (8 processes, 4 names, runs of 64 events
// per process; mostly launches, some copies and syncs, one off-CPU interval in nine). Prints ns
// per event. The reader's own cost per event (decode, batch) is in docs/performance.md §4.
//
// usage: metrics_observe [ROUNDS (300)]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "catalog/api_catalog.hpp"
#include "metrics/event_metrics.hpp"

using namespace gpuwhy;
using namespace gpuwhy::metrics;

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 300;
  Registry reg;
  EventMetrics m(reg, [](uint32_t pid) { return "p" + std::to_string(pid % 4); });
  const uint16_t launch = find_api("cudaLaunchKernel")->id;
  const uint16_t copy = find_api("cudaMemcpyAsync")->id;
  const uint16_t sync = find_api("cudaStreamSynchronize")->id;
  std::vector<Event> batch;
  for (int i = 0; i < 16384; ++i) {
    const uint32_t pid = 100 + (i / 64) % 8;
    if (i % 9 == 0) {
      OffCpu o;
      o.pid = o.tid = pid;
      o.dur = 50'000;
      o.runq = 1'000;
      o.syscall = 202;
      batch.push_back(o);
      continue;
    }
    ApiCall c;
    c.pid = c.tid = pid;
    c.api = i % 17 == 0 ? copy : i % 31 == 0 ? sync : launch;
    c.dur = 1000 + i;
    c.f.bytes = 4096;
    c.f.op = 1;
    batch.push_back(c);
  }
  for (int w = 0; w < 10; ++w) m.observe(batch);  // every series exists: the steady state
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r) m.observe(batch);
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%.1f ns/event\n", ns / (static_cast<double>(rounds) * batch.size()));
}
