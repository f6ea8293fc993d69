// SPDX-License-Identifier: Apache-2.0
// The agent's own cost as the Prometheus client libraries' process collector reports it
// (process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds, process_start_time_seconds), read from /proc at each scrape:
// a tracer that says what it costs can be trusted to run on a production node.
#pragma once

#include <string>
#include <vector>

#include "metrics/exposition.hpp"

namespace gpuwhy::metrics {

// Where the values are read from: a process's /proc directory and the system's /proc/stat (its
// btime: a process's start is kept in clock ticks since boot). Tests give a directory of their
// own.
struct ProcSource {
  std::string process_dir = "/proc/self";
  std::string system_stat = "/proc/stat";
  long ticks_per_second = 0;  // 0: sysconf(_SC_CLK_TCK)
  long page_size = 0;         // 0: sysconf(_SC_PAGESIZE)
};

// One family per value that could be read; a file that cannot (hidepid, a process gone) leaves
// its metrics out rather than exposing a wrong 0.
std::vector<Family> process_families(const ProcSource& source = {});

}  // namespace gpuwhy::metrics
