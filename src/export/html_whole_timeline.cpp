// SPDX-License-Identifier: Apache-2.0
// The data of the HTML report's whole-window timeline (html_report.hpp): per traced thread, each
// state's time in each of a fixed number of buckets. One thread at a time, its calls and off-CPU
// intervals read in time order (the thread constraint goes down to the chunk index) and merged
// into one sweep that keeps only the intervals open at the moment, so memory stays at a lane's
// buckets however many events the window holds.
#include <algorithm>
#include <array>
#include <functional>
#include <queue>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "export/html_report.hpp"
#include "store/sqlite_util.hpp"
#include "store/store.hpp"

namespace gpuwhy::render {
namespace {

using json = nlohmann::ordered_json;

// The states, in the order of the JSON's "states" and "ns".
enum State : int { kSync = 0, kCall = 1, kPreempted = 2, kBlocked = 3, kStates = 4 };
// Which state an instant is in when several intervals cover it: off-CPU first (a thread asleep
// inside a sync is asleep), then a sync, then any other call.
constexpr std::array<State, kStates> kPrecedence = {kPreempted, kBlocked, kSync, kCall};
constexpr const char* kStateNames[kStates] = {"sync", "call", "preempted", "blocked"};

// The window cut into n buckets; bucket i is [edge(i), edge(i + 1)).
class Buckets {
 public:
  Buckets(int64_t start, int64_t end, int n) : start_(start), span_(end - start), n_(n) {
    for (auto& v : ns_) v.assign(static_cast<size_t>(n), 0);
  }
  int64_t edge(int i) const {
    return start_ + static_cast<int64_t>((static_cast<__int128>(span_) * i + n_ - 1) / n_);
  }
  // Adds [a, b) (inside the window) to state s, split at the bucket edges.
  void add(int64_t a, int64_t b, State s) {
    // The bucket of a: edge(i) <= a < edge(i + 1) exactly when i = floor((a - start) * n / span).
    int i = static_cast<int>(static_cast<__int128>(a - start_) * n_ / span_);
    while (a < b && i < n_) {
      const int64_t e = std::min(b, edge(i + 1));
      ns_[s][static_cast<size_t>(i)] += e - a;
      a = e;
      ++i;
    }
  }
  json to_json() const {
    json out = json::array();
    for (const auto& v : ns_) out.push_back(v);
    return out;
  }

 private:
  int64_t start_, span_;
  int n_;
  std::array<std::vector<int64_t>, kStates> ns_;
};

// Intervals opened in nondecreasing start order; the time between two consecutive opens or
// closes goes to the state of the intervals open in it.
class Sweep {
 public:
  Sweep(Buckets& b, int64_t lo, int64_t hi) : b_(b), lo_(lo), hi_(hi), cur_(lo) {}
  void open(int64_t a, int64_t e, State s) {
    a = std::max(a, lo_);
    e = std::min(e, hi_);
    if (e <= a) return;
    advance(a);
    ++open_[s];
    ends_.push({e, s});
  }
  void finish() { advance(hi_); }

 private:
  void advance(int64_t t) {
    while (!ends_.empty() && ends_.top().first <= t) {
      emit(ends_.top().first);
      --open_[ends_.top().second];
      ends_.pop();
    }
    emit(t);
  }
  void emit(int64_t t) {
    if (t <= cur_) return;
    for (State s : kPrecedence) {
      if (open_[s] > 0) {
        b_.add(cur_, t, s);
        break;
      }
    }
    cur_ = t;
  }
  Buckets& b_;
  int64_t lo_, hi_, cur_;
  std::array<int, kStates> open_{};
  using End = std::pair<int64_t, State>;
  std::priority_queue<End, std::vector<End>, std::greater<End>> ends_;
};

struct Candidate {
  int64_t pid, tid, rows;
};

// The threads of `pids` with a chunk of calls or off-CPU intervals reaching into [lo, hi), the
// busiest first (by the rows of those chunks: the chunk index answers without decoding).
Result<std::vector<Candidate>> candidates(const store::TraceFile& file,
                                          const std::set<int64_t>& pids, int64_t lo, int64_t hi) {
  const std::string in_window =
      " WHERE ts_min < " + std::to_string(hi) + " AND end_max >= " + std::to_string(lo);
  auto s =
      store::Stmt::prepare(file.db(),
                           "SELECT pid, tid, sum(rows) FROM (SELECT pid, tid, rows FROM "
                           "api_calls_chunks" +
                               in_window + " UNION ALL SELECT pid, tid, rows FROM offcpu_chunks" +
                               in_window + ") GROUP BY pid, tid ORDER BY 3 DESC, 1, 2",
                           "listing the window's threads");
  if (!s) return s.error();
  std::vector<Candidate> out;
  while (sqlite3_step(s->get()) == SQLITE_ROW) {
    const Candidate c{sqlite3_column_int64(s->get(), 0), sqlite3_column_int64(s->get(), 1),
                      sqlite3_column_int64(s->get(), 2)};
    if (pids.count(c.pid)) out.push_back(c);
  }
  return out;
}

// One thread's lane: its rows in the window, swept into `b`. Returns how many rows it read.
Result<int64_t> sweep_thread(const store::TraceFile& file, const Candidate& c, int64_t lo,
                             int64_t hi, Buckets& b) {
  const std::string where = " WHERE tid = " + std::to_string(c.tid) +
                            " AND pid = " + std::to_string(c.pid) + " AND ts < " +
                            std::to_string(hi) +
                            " AND ts + coalesce(dur, 0) >= " + std::to_string(lo) + " ORDER BY ts";
  auto calls = store::Stmt::prepare(
      file.db(), "SELECT ts, coalesce(dur, 0), category = 'sync' FROM api_calls" + where,
      "reading a thread's calls for the timeline");
  if (!calls) return calls.error();
  auto off = store::Stmt::prepare(file.db(), "SELECT ts, dur, preempted FROM offcpu" + where,
                                  "reading a thread's off-CPU time for the timeline");
  if (!off) return off.error();
  sqlite3_stmt* cs = calls->get();
  sqlite3_stmt* os = off->get();
  bool have_c = sqlite3_step(cs) == SQLITE_ROW, have_o = sqlite3_step(os) == SQLITE_ROW;
  Sweep sweep(b, lo, hi);
  int64_t rows = 0;
  // The two streams merged by start time: the sweep needs its opens in order.
  while (have_c || have_o) {
    const bool take_c =
        have_c && (!have_o || sqlite3_column_int64(cs, 0) <= sqlite3_column_int64(os, 0));
    sqlite3_stmt* st = take_c ? cs : os;
    const int64_t ts = sqlite3_column_int64(st, 0), dur = sqlite3_column_int64(st, 1);
    const bool flag = sqlite3_column_int(st, 2) != 0;
    sweep.open(ts, ts + dur, take_c ? (flag ? kSync : kCall) : (flag ? kPreempted : kBlocked));
    ++rows;
    if (take_c)
      have_c = sqlite3_step(cs) == SQLITE_ROW;
    else
      have_o = sqlite3_step(os) == SQLITE_ROW;
  }
  sweep.finish();
  return rows;
}

std::string comm_of(const store::TraceFile& file, int64_t pid, int64_t tid) {
  auto s = store::Stmt::prepare(file.db(),
                                "SELECT comm FROM threads WHERE tid = ?1 AND pid = ?2 "
                                "ORDER BY first_seen_ns DESC LIMIT 1",
                                "reading a thread's name");
  if (!s) return "";
  s->i64(1, tid);
  s->i64(2, pid);
  if (sqlite3_step(s->get()) != SQLITE_ROW || !sqlite3_column_text(s->get(), 0)) return "";
  return reinterpret_cast<const char*>(sqlite3_column_text(s->get(), 0));
}

}  // namespace

Result<json> whole_timeline(const store::TraceFile& file, const json& report,
                            const std::vector<uint32_t>& pids, int buckets) {
  const json& tr = report["trace"];
  const int64_t origin = tr["start_ns"].get<int64_t>();
  const int64_t lo = origin + tr["window"]["start_rel_ns"].get<int64_t>();
  const int64_t hi = origin + tr["window"]["end_rel_ns"].get<int64_t>();
  // Never more buckets than nanoseconds: every bucket at least 1 ns wide.
  const int n = static_cast<int>(std::clamp<int64_t>(hi - lo, 1, std::max(buckets, 1)));
  json out{{"start_rel_ns", lo - origin},
           {"end_rel_ns", std::max(lo, hi) - origin},
           {"buckets", n},
           {"states", kStateNames},
           {"lanes", json::array()},
           {"threads_not_drawn", 0}};
  if (hi <= lo) return out;
  std::set<int64_t> wanted(pids.begin(), pids.end());
  if (wanted.empty())
    for (const json& p : report["stats"]["processes"]) wanted.insert(p["pid"].get<int64_t>());
  auto cands = candidates(file, wanted, lo, hi);
  if (!cands) return cands.error();
  std::vector<json> lanes;
  size_t not_drawn = 0;
  for (const Candidate& c : cands.value()) {
    if (lanes.size() == kWholeTimelineMaxLanes) {
      ++not_drawn;  // a chunk reaching into the window may hold no row in it: an upper bound
      continue;
    }
    Buckets b(lo, hi, n);
    auto rows = sweep_thread(file, c, lo, hi, b);
    if (!rows) return rows.error();
    if (rows.value() == 0) continue;  // its chunks reach into the window, none of its rows do
    lanes.push_back({{"pid", c.pid},
                     {"tid", c.tid},
                     {"comm", comm_of(file, c.pid, c.tid)},
                     {"rows", rows.value()},
                     {"ns", b.to_json()}});
  }
  std::sort(lanes.begin(), lanes.end(), [](const json& a, const json& b) {
    return std::make_pair(a["pid"].get<int64_t>(), a["tid"].get<int64_t>()) <
           std::make_pair(b["pid"].get<int64_t>(), b["tid"].get<int64_t>());
  });
  for (json& l : lanes) out["lanes"].push_back(std::move(l));
  out["threads_not_drawn"] = not_drawn;
  return out;
}

}  // namespace gpuwhy::render
