// SPDX-License-Identifier: Apache-2.0
#include "analysis/units.hpp"

#include <cmath>
#include <cstdio>

namespace gpuwhy::analysis {
namespace {

// Three significant digits: 4.51, 45.1, 451.
std::string sig3(double v, const char* unit) {
  char buf[48];
  const double a = std::fabs(v);
  const int decimals = a >= 100 ? 0 : a >= 10 ? 1 : 2;
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, unit);
  return buf;
}

}  // namespace

std::string fmt_duration(int64_t ns) {
  const double v = static_cast<double>(ns);
  const double a = std::fabs(v);
  if (a < 1e3) return std::to_string(ns) + " ns";
  if (a < 999.5e3) return sig3(v / 1e3, "µs");
  if (a < 999.5e6) return sig3(v / 1e6, "ms");
  if (a < 120e9) return sig3(v / 1e9, "s");
  if (a < 7200e9) return sig3(v / 60e9, "min");
  return sig3(v / 3600e9, "h");
}

std::string fmt_rel(int64_t rel_ns) {
  char buf[48];
  const double s = static_cast<double>(rel_ns) / 1e9;
  if (std::fabs(s) < 1000) {
    std::snprintf(buf, sizeof buf, "%+.3f s", s);
  } else {
    std::snprintf(buf, sizeof buf, "%+.1f s", s);
  }
  return buf;
}

std::string fmt_bytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const double b = static_cast<double>(bytes);
  if (b < 1023.5 * 1024) return sig3(b / 1024, "KiB");
  if (b < 1023.5 * 1024 * 1024) return sig3(b / (1024.0 * 1024), "MiB");
  if (b < 1023.5 * 1024 * 1024 * 1024) return sig3(b / (1024.0 * 1024 * 1024), "GiB");
  return sig3(b / (1024.0 * 1024 * 1024 * 1024), "TiB");
}

std::string fmt_count(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  const int len = static_cast<int>(digits.size());
  for (int i = 0; i < len; ++i) {
    if (i > 0 && (len - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string fmt_bandwidth(double bytes_per_s) {
  const double mb = bytes_per_s / 1e6;
  if (mb >= 100) return fmt_count(static_cast<uint64_t>(std::llround(mb))) + " MB/s";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f MB/s", mb >= 10 ? 1 : 2, mb);
  return buf;
}

std::string fmt_rate(double per_s) {
  if (per_s >= 100) return fmt_count(static_cast<uint64_t>(std::llround(per_s))) + "/s";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f/s", per_s >= 10 ? 0 : 1, per_s);
  return buf;
}

std::string fmt_percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100);
  return buf;
}

std::string fmt_ratio(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*fx", r >= 100 ? 0 : 1, r);
  return buf;
}

}  // namespace gpuwhy::analysis
