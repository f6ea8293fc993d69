// SPDX-License-Identifier: Apache-2.0
#include "device/truth.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gwsim/json_quote.hpp"

namespace gwsim {
namespace {

std::string process_comm() {
  std::ifstream f("/proc/self/comm");
  std::string comm;
  std::getline(f, comm);
  return comm;
}

void write_blocked(std::ostream& o, const BlockedTime& b) {
  o << "{\"ns\": " << b.ns << ", \"count\": " << b.count << "}";
}

void write_threads(std::ostream& o, Stats& stats) {
  o << "  \"threads\": [";
  bool first = true;
  for (const ThreadStats& t : stats.threads()) {
    o << (first ? "\n" : ",\n") << "    {\"tid\": " << t.tid << ", \"name\": " << json_quote(t.name)
      << ", \"blocked_ns\": " << t.blocked.ns << ", \"blocked_count\": " << t.blocked.count
      << ", \"sleep_ns\": " << t.sleep_ns << ", \"cpu_burn_ns\": " << t.cpu_burn_ns
      << ", \"blocked_by_api\": {";
    bool first_api = true;
    for (const auto& [api, b] : t.by_api) {
      o << (first_api ? "" : ", ") << json_quote(api) << ": ";
      write_blocked(o, b);
      first_api = false;
    }
    o << "}}";
    first = false;
  }
  o << (first ? "]" : "\n  ]");
}

void write_config(std::ostream& o, const Config& c) {
  o << "  \"config\": {\"kernel_ns\": " << c.kernel_ns << ", \"launch_ns\": " << c.launch_ns
    << ", \"malloc_ns\": " << c.malloc_ns << ", \"free_ns\": " << c.free_ns
    << ", \"pinned_gbps\": " << c.pinned_gbps << ", \"pageable_gbps\": " << c.pageable_gbps
    << ", \"d2d_gbps\": " << c.d2d_gbps << ", \"staging_gbps\": " << c.staging_gbps
    << ", \"nccl_gbps\": " << c.nccl_gbps << ", \"queue_depth\": " << c.queue_depth
    << ", \"straggle_rank\": " << c.straggle_rank << ", \"straggle_ns\": " << c.straggle_ns
    << ", \"nccl_async\": " << (c.nccl_async ? "true" : "false") << "}";
}

}  // namespace

std::string expand_truth_path(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
      out += std::to_string(getpid());
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

bool write_truth(const std::string& path, const TruthInput& in, Stats& stats) {
  const EngineTotals& t = in.totals;
  std::ostringstream o;
  o << "{\n  \"format\": " << json_quote(kTruthFormat) << ",\n  \"pid\": " << getpid()
    << ",\n  \"comm\": " << json_quote(process_comm()) << ",\n  \"start_ns\": " << in.start_ns
    << ",\n  \"end_ns\": " << in.end_ns << ",\n  \"gpu_busy_ns\": " << t.busy_ns
    << ",\n  \"gpu_gate_ns\": " << t.gate_ns << ",\n  \"kernel_busy_ns\": " << t.kernel_ns
    << ",\n  \"kernels\": " << t.kernels << ",\n  \"ops\": {\"kernels\": " << t.kernels
    << ", \"graphs\": " << t.graphs << ", \"copies\": " << t.copies
    << ", \"memsets\": " << t.memsets << ", \"collectives\": " << t.collectives
    << "},\n  \"pending_at_exit\": " << in.pending_at_exit
    << ",\n  \"bytes\": {\"h2h\": " << t.bytes_by_dir[0] << ", \"h2d\": " << t.bytes_by_dir[1]
    << ", \"d2h\": " << t.bytes_by_dir[2] << ", \"d2d\": " << t.bytes_by_dir[3]
    << ", \"nccl\": " << t.collective_bytes << "},\n  \"calls\": {";
  bool first = true;
  for (const auto& [name, n] : stats.calls()) {
    o << (first ? "" : ", ") << json_quote(name) << ": " << n;
    first = false;
  }
  o << "},\n  \"devices\": [";
  bool first_dev = true;
  for (const auto& [ordinal, d] : in.devices) {
    o << (first_dev ? "" : ", ") << "{\"device\": " << ordinal << ", \"gpu_busy_ns\": " << d.busy_ns
      << ", \"kernel_busy_ns\": " << d.kernel_ns << ", \"kernels\": " << d.kernels
      << ", \"copies\": " << d.copies << "}";
    first_dev = false;
  }
  o << "],\n";
  write_threads(o, stats);
  for (const auto& [key, json] : stats.sections()) o << ",\n  " << json_quote(key) << ": " << json;
  o << ",\n";
  write_config(o, *in.config);
  o << "\n}\n";

  // Write then rename, so a test polling for the file never reads half of it.
  const std::string tmp = path + ".tmp";
  std::ofstream f(tmp, std::ios::trunc);
  f << o.str();
  f.close();
  if (!f || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "gwsim: cannot write truth file %s: %s\n", path.c_str(),
                 std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace gwsim
