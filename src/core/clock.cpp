// SPDX-License-Identifier: Apache-2.0
#include "core/clock.hpp"

#include <time.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>

namespace gpuwhy {
namespace {
int64_t read_clock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A test-only skew of this process's wall clock (GPUWHY_TEST_CLOCK_SKEW_NS, signed ns): the
// multi-host tests record two "hosts" on one machine and need one of them with a wrong clock,
// as a host without NTP has. Read once; 0 (the real clock) when unset or unparsable.
int64_t test_clock_skew_ns() {
  static const int64_t skew = [] {
    const char* v = std::getenv("GPUWHY_TEST_CLOCK_SKEW_NS");
    if (v == nullptr || *v == '\0') return int64_t{0};
    char* end = nullptr;
    const long long n = std::strtoll(v, &end, 10);
    return *end == '\0' ? static_cast<int64_t>(n) : int64_t{0};
  }();
  return skew;
}
}  // namespace

int64_t monotonic_ns() { return read_clock(CLOCK_MONOTONIC); }
int64_t wall_ns() { return read_clock(CLOCK_REALTIME) + test_clock_skew_ns(); }

std::string format_utc(int64_t wall_ns) {
  const time_t secs = static_cast<time_t>(wall_ns / 1'000'000'000);
  tm t{};
  gmtime_r(&secs, &t);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &t);
  return buf;
}

ClockConverter ClockConverter::calibrate() {
  // Bracket a wall read between two monotonic reads; the narrowest bracket wins.
  int64_t best_gap = std::numeric_limits<int64_t>::max();
  int64_t best_offset = 0;
  for (int i = 0; i < 16; ++i) {
    const int64_t m0 = monotonic_ns();
    const int64_t w = wall_ns();
    const int64_t m1 = monotonic_ns();
    if (m1 - m0 < best_gap) {
      best_gap = m1 - m0;
      best_offset = w - (m0 + (m1 - m0) / 2);
    }
  }
  return ClockConverter(best_offset);
}

int64_t parse_duration_ns(const char* text) {
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (end == text || errno != 0 || v < 0) return -1;
  const char* unit = end;
  double scale = 1e9;  // bare numbers are seconds
  if (*unit == '\0' || std::strcmp(unit, "s") == 0) scale = 1e9;
  else if (std::strcmp(unit, "ms") == 0) scale = 1e6;
  else if (std::strcmp(unit, "us") == 0) scale = 1e3;
  else if (std::strcmp(unit, "ns") == 0) scale = 1;
  else if (std::strcmp(unit, "m") == 0 || std::strcmp(unit, "min") == 0) scale = 60e9;
  else if (std::strcmp(unit, "h") == 0) scale = 3600e9;
  else if (std::strcmp(unit, "d") == 0) scale = 86400e9;
  else return -1;
  const double ns = v * scale;
  if (ns > 9.0e18) return -1;
  return static_cast<int64_t>(ns);
}

}  // namespace gpuwhy
