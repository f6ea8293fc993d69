// SPDX-License-Identifier: Apache-2.0
#include "metrics/process_metrics.hpp"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

namespace gpuwhy::metrics {
namespace {

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<uint64_t> to_u64(std::string_view s) {
  uint64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// The fields of /proc/PID/stat after the command name, which may hold spaces and parentheses
// (it ends at the last ')'): fields[0] is field 3 (state).
std::vector<std::string_view> stat_fields(std::string_view stat) {
  std::vector<std::string_view> out;
  const size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return out;
  stat.remove_prefix(close + 1);
  while (!stat.empty()) {
    const size_t start = stat.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    stat.remove_prefix(start);
    const size_t end = std::min(stat.find_first_of(" \n"), stat.size());
    out.push_back(stat.substr(0, end));
    stat.remove_prefix(end);
  }
  return out;
}

// The field numbered as proc(5) numbers them (1: pid).
std::optional<uint64_t> stat_field(const std::vector<std::string_view>& fields, size_t number) {
  if (number < 3 || number - 3 >= fields.size()) return std::nullopt;
  return to_u64(fields[number - 3]);
}

std::optional<uint64_t> boot_time_s(const std::string& system_stat) {
  const auto text = read_text(system_stat);
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("btime ", 0) == 0) return to_u64(std::string_view(line).substr(6));
  return std::nullopt;
}

// The soft limit of "Max open files" in /proc/PID/limits (what the process may open now).
std::optional<uint64_t> max_open_files(const std::string& limits_file) {
  const auto text = read_text(limits_file);
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream words(line.substr(14));
    std::string soft;
    words >> soft;
    if (soft == "unlimited") return UINT64_MAX;
    return to_u64(soft);
  }
  return std::nullopt;
}

std::optional<uint64_t> open_fds(const std::string& fd_dir) {
  std::error_code ec;
  uint64_t n = 0;
  for (std::filesystem::directory_iterator it(fd_dir, ec), end; !ec && it != end; it.increment(ec))
    ++n;
  if (ec) return std::nullopt;
  return n;
}

Family gauge(const char* name, const char* help, const char* unit, double value) {
  return {name, help, MetricType::Gauge, {}, {{{}, value, {}, 0}}, unit};
}

}  // namespace

std::vector<Family> process_families(const ProcSource& source) {
  const long hz = source.ticks_per_second > 0 ? source.ticks_per_second : sysconf(_SC_CLK_TCK);
  const long page = source.page_size > 0 ? source.page_size : sysconf(_SC_PAGESIZE);
  std::vector<Family> out;
  const auto stat = read_text(source.process_dir + "/stat");
  const auto fields = stat ? stat_fields(*stat) : std::vector<std::string_view>{};
  // proc(5): 14 utime, 15 stime (ticks), 22 starttime (ticks after boot), 23 vsize (bytes),
  // 24 rss (pages). Ticks are divided once, from integers, so the value printed is the shortest
  // decimal that reads back (a sum of divided parts would print 17 digits).
  const auto utime = stat_field(fields, 14), stime = stat_field(fields, 15);
  if (utime && stime && hz > 0)
    out.push_back({"process_cpu_seconds",
                   "Total user and system CPU time spent in seconds.",
                   MetricType::Counter,
                   {},
                   {{{}, static_cast<double>(*utime + *stime) / static_cast<double>(hz), {}, 0}},
                   "seconds"});
  if (const auto fds = open_fds(source.process_dir + "/fd"))
    out.push_back(gauge("process_open_fds", "Number of open file descriptors.", "",
                        static_cast<double>(*fds)));
  if (const auto max = max_open_files(source.process_dir + "/limits"))
    out.push_back(gauge("process_max_fds", "Maximum number of open file descriptors.", "",
                        *max == UINT64_MAX ? INFINITY : static_cast<double>(*max)));
  if (const auto vsize = stat_field(fields, 23))
    out.push_back(gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", "bytes",
                        static_cast<double>(*vsize)));
  if (const auto rss = stat_field(fields, 24); rss && page > 0)
    out.push_back(gauge("process_resident_memory_bytes", "Resident memory size in bytes.", "bytes",
                        static_cast<double>(*rss) * static_cast<double>(page)));
  const auto start = stat_field(fields, 22);
  const auto boot = boot_time_s(source.system_stat);
  if (start && boot && hz > 0)
    out.push_back(gauge(
        "process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
        "seconds",
        static_cast<double>(*boot * static_cast<uint64_t>(hz) + *start) / static_cast<double>(hz)));
  return out;
}

}  // namespace gpuwhy::metrics
