// SPDX-License-Identifier: Apache-2.0
// The data of the HTML report's chain timelines (html_report.hpp): read from the trace with the
// thread and time constraints the event tables push down to their chunk index.
#include <algorithm>
#include <string>
#include <vector>

#include "export/html_report.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::render {
namespace {

using json = nlohmann::ordered_json;

// Items drawn per timeline at most: more would not be readable (nor small).
constexpr size_t kMaxItems = 3000;

struct Interval {
  int64_t ts, end;
};

// The start of the `width`-long stretch of [lo, hi] holding the most off-CPU time.
int64_t worst_start(const std::vector<Interval>& off, int64_t lo, int64_t hi, int64_t width) {
  if (hi - lo <= width || off.empty()) return lo;
  int64_t best = lo, best_ns = -1, sum = 0;
  size_t j = 0;
  for (size_t i = 0; i < off.size(); ++i) {
    const int64_t start = std::clamp(off[i].ts, lo, hi - width);
    while (j < off.size() && off[j].ts < start + width) {
      sum += std::min(off[j].end, start + width) - off[j].ts;
      ++j;
    }
    if (sum > best_ns) {
      best_ns = sum;
      best = start;
    }
    sum -= std::min(off[i].end, start + width) - off[i].ts;
  }
  return best;
}

}  // namespace

Result<json> chain_timelines(const store::TraceFile& file, const json& report,
                             int64_t max_window_ns) {
  json out = json::object();
  const int64_t origin = report["trace"]["start_ns"].get<int64_t>();
  for (const json& c : report["chains"]) {
    if (!c["thread"].is_object() || !c.contains("first_rel_ns") || !c.contains("last_rel_ns"))
      continue;
    const auto pid = c["thread"]["pid"].get<int64_t>(), tid = c["thread"]["tid"].get<int64_t>();
    const int64_t lo = origin + c["first_rel_ns"].get<int64_t>();
    const int64_t hi = std::max(lo + 1, origin + c["last_rel_ns"].get<int64_t>());
    const std::string thread =
        " WHERE tid = " + std::to_string(tid) + " AND pid = " + std::to_string(pid);
    std::vector<Interval> off;
    {
      auto s = store::Stmt::prepare(file.db(),
                                    "SELECT ts, ts + dur FROM offcpu" + thread +
                                        " AND ts >= " + std::to_string(lo) + " AND ts < " +
                                        std::to_string(hi) + " ORDER BY ts",
                                    "reading the chain's off-CPU time");
      if (!s) return s.error();
      while (sqlite3_step(s->get()) == SQLITE_ROW)
        off.push_back({sqlite3_column_int64(s->get(), 0), sqlite3_column_int64(s->get(), 1)});
    }
    const int64_t start = worst_start(off, lo, hi, max_window_ns);
    const int64_t end = std::min(hi, start + max_window_ns);
    const std::string range = " AND ts < " + std::to_string(end) +
                              " AND ts + coalesce(dur, 0) >= " + std::to_string(start) +
                              " AND ts >= " + std::to_string(start - 10'000'000'000) +
                              " ORDER BY ts";
    json t{{"pid", pid},
           {"tid", tid},
           {"start_rel_ns", start - origin},
           {"end_rel_ns", end - origin},
           {"calls", json::array()},
           {"offcpu", json::array()}};
    {
      auto s = store::Stmt::prepare(
          file.db(), "SELECT ts, coalesce(dur, 0), name FROM api_calls" + thread + range,
          "reading the chain's calls");
      if (!s) return s.error();
      while (sqlite3_step(s->get()) == SQLITE_ROW && t["calls"].size() < kMaxItems) {
        const auto* n = sqlite3_column_text(s->get(), 2);
        t["calls"].push_back({sqlite3_column_int64(s->get(), 0) - origin,
                              sqlite3_column_int64(s->get(), 1),
                              n ? reinterpret_cast<const char*>(n) : "?"});
      }
    }
    {
      auto s = store::Stmt::prepare(
          file.db(),
          "SELECT o.ts, o.dur, o.preempted, CASE WHEN o.preempted THEN 'preempted' || "
          "coalesce(' by ' || n.s, '') ELSE 'blocked' || coalesce(' in ' || sn.name, '') || "
          "coalesce(', woken by ' || w.s, '') END FROM offcpu AS o "
          "LEFT JOIN strings AS n ON n.id = o.next_comm LEFT JOIN strings AS w ON "
          "w.id = o.waker_comm LEFT JOIN syscall_names AS sn ON sn.nr = o.syscall WHERE o.tid = " +
              std::to_string(tid) + " AND o.pid = " + std::to_string(pid) + " AND o.ts < " +
              std::to_string(end) + " AND o.ts + o.dur >= " + std::to_string(start) +
              " AND o.ts >= " + std::to_string(start - 10'000'000'000) + " ORDER BY o.ts",
          "reading the chain's off-CPU intervals");
      if (!s) return s.error();
      while (sqlite3_step(s->get()) == SQLITE_ROW && t["offcpu"].size() < kMaxItems)
        t["offcpu"].push_back({sqlite3_column_int64(s->get(), 0) - origin,
                               sqlite3_column_int64(s->get(), 1),
                               sqlite3_column_int(s->get(), 2) != 0,
                               reinterpret_cast<const char*>(sqlite3_column_text(s->get(), 3))});
    }
    out[std::to_string(c["rank"].get<int64_t>())] = std::move(t);
  }
  return out;
}

}  // namespace gpuwhy::render
