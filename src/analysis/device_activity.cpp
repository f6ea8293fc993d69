// SPDX-License-Identifier: Apache-2.0
#include "analysis/device_activity.hpp"

#include <algorithm>

#include "analysis/sql_scan.hpp"
#include "store/sqlite_util.hpp"

namespace gpuwhy::analysis {

Status load_device_activity(sqlite3* db, TraceRows& rows, int64_t from, int64_t to,
                            const std::function<bool(uint32_t)>& keep) {
  auto has = store::has_table(db, "gpu_activity");
  if (!has) return has.error();
  if (!*has) return {};
  // Overlapping the window, not starting in it: a kernel running across the window's start
  // keeps the device busy inside it.
  return each_row(
      db,
      "SELECT kind, pid, ts, dur, coalesce(device, 0), coalesce(stream, -1) FROM gpu_activity "
      "WHERE kind IN ('kernel', 'memcpy', 'memset') AND ts < ?2 AND ts + max(dur, 0) > ?1",
      "gpu_activity",
      [&](Query& q) {
        const auto pid = static_cast<uint32_t>(q.i64(1));
        if (!keep(pid)) return;
        DeviceActivityRow r;
        const std::string kind = q.text(0);
        r.kind = kind == "kernel"   ? DeviceWork::Kernel
                 : kind == "memcpy" ? DeviceWork::Copy
                                    : DeviceWork::Memset;
        r.pid = pid;
        r.ts = q.i64(2);
        r.dur = std::max<int64_t>(0, q.i64(3));
        r.device = static_cast<int32_t>(q.i64(4));
        r.stream = q.i64(5);
        rows.device_activity.push_back(r);
      },
      {from, to});
}

std::pair<size_t, size_t> device_rows(const TraceRows& rows, uint32_t pid) {
  const auto& v = rows.device_activity;
  const auto lo = std::partition_point(v.begin(), v.end(),
                                       [&](const DeviceActivityRow& r) { return r.pid < pid; });
  const auto hi =
      std::partition_point(lo, v.end(), [&](const DeviceActivityRow& r) { return r.pid <= pid; });
  return {static_cast<size_t>(lo - v.begin()), static_cast<size_t>(hi - v.begin())};
}

bool has_device_activity(const TraceRows& rows, uint32_t pid) {
  const auto [b, e] = device_rows(rows, pid);
  return e > b;
}

void merge_intervals(std::vector<Interval>& iv) {
  std::sort(iv.begin(), iv.end());
  size_t n = 0;
  for (const Interval& x : iv) {
    if (x.second <= x.first) continue;
    if (n > 0 && x.first <= iv[n - 1].second) {
      iv[n - 1].second = std::max(iv[n - 1].second, x.second);
    } else {
      iv[n++] = x;
    }
  }
  iv.resize(n);
}

std::vector<Interval> device_busy(const TraceRows& rows, uint32_t pid, int64_t lo, int64_t hi,
                                  int device) {
  std::vector<Interval> out;
  const auto [b, e] = device_rows(rows, pid);
  for (size_t i = b; i < e; ++i) {
    const DeviceActivityRow& r = rows.device_activity[i];
    if (device >= 0 && r.device != device) continue;
    const int64_t s = std::max(r.ts, lo), t = std::min(r.end(), hi);
    if (t > s) out.emplace_back(s, t);
  }
  merge_intervals(out);
  return out;
}

std::vector<Interval> gaps_of(const std::vector<Interval>& busy, int64_t lo, int64_t hi) {
  std::vector<Interval> out;
  int64_t at = lo;
  for (const auto& [s, e] : busy) {
    if (e <= at) continue;
    if (s >= hi) break;
    if (s > at) out.emplace_back(at, s);
    at = std::max(at, e);
  }
  if (at < hi) out.emplace_back(at, hi);
  return out;
}

int64_t covered_ns(const std::vector<Interval>& merged, int64_t lo, int64_t hi) {
  int64_t n = 0;
  for (const auto& [s, e] : merged) n += std::max<int64_t>(0, std::min(e, hi) - std::max(s, lo));
  return n;
}

}  // namespace gpuwhy::analysis
