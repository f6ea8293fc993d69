// SPDX-License-Identifier: Apache-2.0
// The HTML report's whole-window timeline (render::whole_timeline, whole_timeline_html), checked
// against the trace's own rows: its lanes are the traced threads of the analysed processes, each
// lane's per-bucket state times add up exactly to the thread's time in each state (computed here
// a second way: every interval edge cut into elementary segments), and what the page draws (each
// bucket in its dominant state) is that time to within one bucket per change of state.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis_test_util.hpp"
#include "export/html_report.hpp"
#include "html_test_fixture.hpp"
#include "shell_run.hpp"
#include "store/store.hpp"
#include "store_fixture.hpp"

namespace gpuwhy {
namespace {

using json = nlohmann::ordered_json;
using testing::shell;
using testing::shell_quote;
using testing::TempDir;

// States as the timeline's data orders them; precedence as html_report.hpp states it.
enum { kSync, kCall, kPreempted, kBlocked, kNone };
constexpr int kPrecedence[] = {kPreempted, kBlocked, kSync, kCall};
const char* const kDrawnClass[] = {"k-sync", "k-call", "k-pre", "k-blk"};

struct Row {
  int64_t pid, tid, ts, dur;
  int state;
};

std::vector<Row> rows_of(sqlite3* db) {
  std::vector<Row> out;
  const char* sql =
      "SELECT pid, tid, ts, coalesce(dur, 0), CASE WHEN category = 'sync' THEN 0 ELSE 1 END "
      "FROM api_calls UNION ALL SELECT pid, tid, ts, dur, CASE WHEN preempted THEN 2 ELSE 3 END "
      "FROM offcpu";
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  while (st && sqlite3_step(st) == SQLITE_ROW)
    out.push_back({sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                   sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
                   sqlite3_column_int(st, 4)});
  sqlite3_finalize(st);
  return out;
}

struct Truth {
  std::array<int64_t, 4> ns{};  // per state, inside the window
  int64_t changes = 0;          // instants strictly inside the window where the state changes
};

// One thread's state times, from its rows: every clipped interval edge is a cut; between two
// cuts each state is covered or not (a +1/-1 count per state), the instant's state the first
// covered one in precedence order.
Truth truth_of(const std::vector<Row>& rows, int64_t lo, int64_t hi) {
  std::vector<int64_t> cuts = {lo, hi};
  struct Clip {
    int64_t a, e;
    int s;
  };
  std::vector<Clip> clips;
  for (const Row& r : rows) {
    const int64_t a = std::max(r.ts, lo), e = std::min(r.ts + r.dur, hi);
    if (e <= a) continue;
    clips.push_back({a, e, r.state});
    cuts.push_back(a);
    cuts.push_back(e);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  auto at = [&](int64_t t) { return std::lower_bound(cuts.begin(), cuts.end(), t) - cuts.begin(); };
  std::vector<std::array<int, 4>> delta(cuts.size());
  for (const Clip& c : clips) {
    ++delta[at(c.a)][c.s];
    --delta[at(c.e)][c.s];
  }
  Truth t;
  std::array<int, 4> cover{};
  int prev = -1;
  for (size_t j = 0; j + 1 < cuts.size(); ++j) {
    for (int s = 0; s < 4; ++s) cover[s] += delta[j][s];
    int state = kNone;
    for (int s : kPrecedence) {
      if (cover[s] > 0) {
        state = s;
        break;
      }
    }
    if (state != kNone) t.ns[state] += cuts[j + 1] - cuts[j];
    if (j > 0 && state != prev) ++t.changes;
    prev = state;
  }
  return t;
}

int64_t edge(int64_t start, int64_t span, int n, int64_t i) {
  return start + static_cast<int64_t>((static_cast<__int128>(span) * i + n - 1) / n);
}

// Per state, the time the page draws in that state for the lane `id`: its rects' buckets.
std::array<int64_t, 4> drawn(const std::string& html, const std::string& id, int64_t start,
                             int64_t span, int n) {
  std::array<int64_t, 4> out{};
  const size_t at = html.find("id=\"lane-" + id + "\"");
  EXPECT_NE(at, std::string::npos) << "no lane " << id;
  if (at == std::string::npos) return out;
  const std::string svg = html.substr(at, html.find("</svg>", at) - at);
  static const std::regex rect(R"re(<rect x="(\d+)" width="(\d+)" height="1" class="([a-z-]+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator();
       ++it) {
    const int64_t x = std::stoll((*it)[1]), w = std::stoll((*it)[2]);
    const auto cls = std::find(std::begin(kDrawnClass), std::end(kDrawnClass), (*it)[3].str());
    EXPECT_NE(cls, std::end(kDrawnClass)) << (*it)[3];
    EXPECT_LE(x + w, n);
    if (cls != std::end(kDrawnClass))
      out[cls - std::begin(kDrawnClass)] += edge(start, span, n, x + w) - edge(start, span, n, x);
  }
  return out;
}

// Checks the timeline of the trace at `db` against its rows; returns the lanes' truths by id.
std::map<std::string, Truth> check_timeline(const std::string& db) {
  const testing::ShellResult j =
      shell(std::string(GW_BINARY_DIR) + "/gpuwhy explain --json --db " + shell_quote(db));
  EXPECT_EQ(j.exit_code, 0) << j.out;
  const json report = json::parse(j.out);
  auto file = store::TraceFile::open(db);
  EXPECT_TRUE(file);
  if (!file) return {};
  auto tl = render::whole_timeline(*file.value(), report);
  EXPECT_TRUE(tl) << (tl ? "" : tl.error().line());
  if (!tl) return {};
  const int64_t origin = report["trace"]["start_ns"].get<int64_t>();
  const int64_t lo = origin + report["trace"]["window"]["start_rel_ns"].get<int64_t>();
  const int64_t hi = origin + report["trace"]["window"]["end_rel_ns"].get<int64_t>();
  const int n = tl.value()["buckets"].get<int>();
  EXPECT_EQ(n, render::kWholeTimelineBuckets);

  // The traced threads: those with a row in the window, of a process with a GPU call in it.
  const std::vector<Row> rows = rows_of(file.value()->db());
  auto in_window = [&](const Row& r) { return r.ts < hi && r.ts + r.dur >= lo; };
  std::set<int64_t> gpu_pids;
  for (const Row& r : rows)
    if (in_window(r) && r.state <= kCall) gpu_pids.insert(r.pid);
  std::map<std::pair<int64_t, int64_t>, std::vector<Row>> by_thread;
  for (const Row& r : rows)
    if (gpu_pids.count(r.pid) && in_window(r)) by_thread[{r.pid, r.tid}].push_back(r);
  std::set<std::pair<int64_t, int64_t>> lanes;
  for (const json& l : tl.value()["lanes"])
    lanes.insert({l["pid"].get<int64_t>(), l["tid"].get<int64_t>()});
  std::set<std::pair<int64_t, int64_t>> threads;
  for (const auto& [k, v] : by_thread) threads.insert(k);
  EXPECT_EQ(lanes, threads);
  EXPECT_EQ(tl.value()["threads_not_drawn"], 0);

  const std::string html = render::explain_html(report, json::object(), nullptr, tl.value());
  const int64_t span = hi - lo, max_bucket = (span + n - 1) / n;
  std::map<std::string, Truth> out;
  for (const json& l : tl.value()["lanes"]) {
    const auto key = std::make_pair(l["pid"].get<int64_t>(), l["tid"].get<int64_t>());
    const std::string id = std::to_string(key.first) + "-" + std::to_string(key.second);
    const Truth t = truth_of(by_thread[key], lo, hi);
    EXPECT_EQ(l["rows"].get<size_t>(), by_thread[key].size()) << id;
    // Exclusive states: no bucket holds more than its width.
    for (int i = 0; i < n; ++i) {
      int64_t sum = 0;
      for (int s = 0; s < 4; ++s) sum += l["ns"][s][i].get<int64_t>();
      EXPECT_LE(sum, edge(lo, span, n, i + 1) - edge(lo, span, n, i)) << id << " bucket " << i;
    }
    const std::array<int64_t, 4> d = drawn(html, id, lo - origin, span, n);
    for (int s = 0; s < 4; ++s) {
      int64_t sum = 0;
      for (const json& v : l["ns"][s]) sum += v.get<int64_t>();
      EXPECT_EQ(sum, t.ns[s]) << id << " state " << s;
      // A bucket with no change of state inside is drawn exactly; one with a change is wrong
      // by at most its width, for any state.
      EXPECT_LE(std::llabs(d[s] - t.ns[s]), t.changes * max_bucket)
          << id << " state " << s << ": drawn " << d[s] << " ns, in the trace " << t.ns[s];
    }
    out[id] = t;
  }
  return out;
}

TEST(WholeTimeline, LanesAreTheTracedThreadsAndHoldTheirTimeInEachState) {
  TempDir dir;
  for (const std::string fixture :
       {"lock_wait", "hidden_sync", "cpu_contention", "nccl_straggler", "transfer_pageable"}) {
    SCOPED_TRACE(fixture);
    const std::string db = dir.file(fixture + ".db");
    ASSERT_EQ(analysis::testing::make_trace_db(db, html_test::fixture_sql(fixture)), "");
    const auto lanes = check_timeline(db);
    EXPECT_FALSE(lanes.empty());
  }
}

// Few long intervals, off their buckets' edges: the drawing's bound is tight enough to catch a
// bucket drawn in the wrong state, and the second thread (no GPU call of its own) has a lane.
TEST(WholeTimeline, DrawsASparseThreadToWithinABucketPerChange) {
  TempDir dir;
  const std::string db = dir.file("sparse.db");
  ASSERT_EQ(analysis::testing::make_trace_db(db, html_test::long_names_sql()), "");
  const auto lanes = check_timeline(db);
  ASSERT_TRUE(lanes.count("3000-3000") && lanes.count("3000-3001"));
  const Truth& t = lanes.at("3000-3000");
  EXPECT_GT(t.ns[kSync], 0);
  EXPECT_GT(t.ns[kCall], 0);
  EXPECT_GT(t.ns[kPreempted], 0);
  EXPECT_GT(t.ns[kBlocked], 0);
  EXPECT_LE(t.changes, 12);
  EXPECT_GT(lanes.at("3000-3001").ns[kBlocked], 0);
}

TEST(WholeTimeline, AnEmptyWindowHasNoLane) {
  TempDir dir;
  const std::string db = dir.file("w.db");
  ASSERT_EQ(analysis::testing::make_trace_db(db, html_test::fixture_sql("lock_wait")), "");
  auto file = store::TraceFile::open(db);
  ASSERT_TRUE(file);
  json report = {{"trace", {{"start_ns", 0}, {"window", {{"start_rel_ns", 5}, {"end_rel_ns", 5}}}}},
                 {"stats", {{"processes", json::array()}}}};
  auto tl = render::whole_timeline(*file.value(), report);
  ASSERT_TRUE(tl);
  EXPECT_TRUE(tl.value()["lanes"].empty());
  EXPECT_EQ(render::whole_timeline_html(tl.value()), "");
}

// More threads than lanes: the busiest are drawn (by their rows in the window), the page says
// how many quieter ones are not.
TEST(WholeTimeline, KeepsTheBusiestThreadsWhenThereAreTooMany) {
  TempDir dir;
  const std::string db = dir.file("many.db");
  // Threads 3001..3070 of the trainer's process, thread 3000 + k with k blocked intervals.
  const std::string many = html_test::fixture_sql("lock_wait") + R"sql(
WITH RECURSIVE th(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM th WHERE k < 70),
               r(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM r WHERE j < 69)
INSERT INTO offcpu(ts, dur, runq, pid, tid, cpu, preempted, state)
SELECT t0 + j * 100 * ms + k * 1000, 50 * ms, 0, 2000, 3000 + k, 0, 0, 1
FROM fx, th, r WHERE j < k;
)sql";
  ASSERT_EQ(analysis::testing::make_trace_db(db, many), "");
  ASSERT_EQ(render::kWholeTimelineMaxLanes, 64u);
  const testing::ShellResult j =
      shell(std::string(GW_BINARY_DIR) + "/gpuwhy explain --json --db " + shell_quote(db));
  ASSERT_EQ(j.exit_code, 0) << j.out;
  auto file = store::TraceFile::open(db);
  ASSERT_TRUE(file);
  auto tl = render::whole_timeline(*file.value(), json::parse(j.out));
  ASSERT_TRUE(tl) << tl.error().line();
  // The trainer (8,000 rows) and threads 3070 down to 3008; 3001..3007 left out.
  std::set<int64_t> want = {2000};
  for (int k = 8; k <= 70; ++k) want.insert(3000 + k);
  std::set<int64_t> got;
  for (const json& l : tl.value()["lanes"]) got.insert(l["tid"].get<int64_t>());
  EXPECT_EQ(got, want);
  EXPECT_EQ(tl.value()["threads_not_drawn"], 7);
  EXPECT_NE(render::whole_timeline_html(tl.value()).find("7 quieter threads not drawn"),
            std::string::npos);
}

// Each bucket in the state with most of its time, none (blank) included; runs merged; the
// thread's name escaped like every name on the page.
TEST(WholeTimeline, DrawsEachBucketInItsDominantStateAndEscapesTheName) {
  const json t = {
      {"start_rel_ns", 0},
      {"end_rel_ns", 500},
      {"buckets", 5},
      {"states", {"sync", "call", "preempted", "blocked"}},
      {"lanes",
       {{{"pid", 1},
         {"tid", 2},
         {"comm", "<script>x</script>\x1b]0;t\x07"},
         {"rows", 4},
         {"ns", {{100, 100, 0, 0, 0}, {0, 0, 60, 0, 0}, {0, 0, 0, 0, 40}, {0, 0, 0, 0, 50}}}}}},
      {"threads_not_drawn", 2}};
  const std::string h = render::whole_timeline_html(t);
  std::vector<std::string> rects;
  static const std::regex rect(R"re(<rect x="(\d+)" width="(\d+)" height="1" class="([a-z-]+)")re");
  for (auto it = std::sregex_iterator(h.begin(), h.end(), rect); it != std::sregex_iterator(); ++it)
    rects.push_back((*it)[1].str() + "+" + (*it)[2].str() + " " + (*it)[3].str());
  EXPECT_EQ(rects, (std::vector<std::string>{"0+2 k-sync", "2+1 k-call", "4+1 k-blk"}));
  EXPECT_EQ(h.find("<script>"), std::string::npos);
  EXPECT_EQ(h.find('\x1b'), std::string::npos);
  EXPECT_NE(h.find("&lt;script&gt;x&lt;/script&gt;\\x1b]0;t\\x07 (pid 1, tid 2) · 4 events"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("2 quieter threads not drawn"), std::string::npos);
}

}  // namespace
}  // namespace gpuwhy
