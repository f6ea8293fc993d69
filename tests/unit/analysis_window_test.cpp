// SPDX-License-Identifier: Apache-2.0
// --since / --from / --to: everything is about the trace, never about "now".
#include <gtest/gtest.h>

#include "analysis/window.hpp"

namespace gpuwhy::analysis {
namespace {

constexpr int64_t kStart = 1'700'000'000'000'000'000;
constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kEnd = kStart + 600 * kSec;  // a 10-minute trace

TimeWindow resolve_ok(const std::string& since, const std::string& from, const std::string& to) {
  auto req = parse_window_request(since, from, to);
  EXPECT_TRUE(req.ok()) << req.error().line();
  auto w = resolve_window(req.value(), kStart, kEnd, false);
  EXPECT_TRUE(w.ok()) << w.error().line();
  return w.value();
}

TEST(AnalysisWindow, NoFlagsIsTheWholeTrace) {
  const TimeWindow w = resolve_ok("", "", "");
  EXPECT_EQ(w.start_ns, kStart);
  EXPECT_EQ(w.end_ns, kEnd);
}

TEST(AnalysisWindow, SinceCountsBackFromTheTraceEnd) {
  const TimeWindow w = resolve_ok("5m", "", "");
  EXPECT_EQ(w.end_ns, kEnd);
  EXPECT_EQ(w.start_ns, kEnd - 300 * kSec);
  EXPECT_EQ(w.duration(), 300 * kSec);
}

TEST(AnalysisWindow, SinceLongerThanTheTraceIsAllOfIt) {
  const TimeWindow w = resolve_ok("2h", "", "");
  EXPECT_EQ(w.start_ns, kStart);
  EXPECT_EQ(w.end_ns, kEnd);
}

TEST(AnalysisWindow, SinceFromTheLastEventOfAnIncompleteTrace) {
  auto req = parse_window_request("30s", "", "");
  ASSERT_TRUE(req.ok());
  const int64_t last_event = kStart + 100 * kSec;
  auto w = resolve_window(req.value(), kStart, last_event, true);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->start_ns, kStart + 70 * kSec);
  EXPECT_EQ(w->end_ns, last_event);
  EXPECT_TRUE(w->end_is_last_event);
}

TEST(AnalysisWindow, FromToAreSecondsFromTheTraceStart) {
  const TimeWindow w = resolve_ok("", "2.5", "7");
  EXPECT_EQ(w.start_ns, kStart + 2'500'000'000);
  EXPECT_EQ(w.end_ns, kStart + 7 * kSec);
}

TEST(AnalysisWindow, FromToAcceptDurationsAndWallClockNs) {
  const TimeWindow a = resolve_ok("", "300ms", "1m");
  EXPECT_EQ(a.start_ns, kStart + 300'000'000);
  EXPECT_EQ(a.end_ns, kStart + 60 * kSec);
  const TimeWindow b = resolve_ok("", std::to_string(kStart + 10 * kSec), "");
  EXPECT_EQ(b.start_ns, kStart + 10 * kSec);
  EXPECT_EQ(b.end_ns, kEnd);
}

TEST(AnalysisWindow, WindowIsClippedToTheTrace) {
  const TimeWindow w = resolve_ok("", "590", "900");
  EXPECT_EQ(w.start_ns, kStart + 590 * kSec);
  EXPECT_EQ(w.end_ns, kEnd);
}

TEST(AnalysisWindow, BadValuesAreOneClearError) {
  auto bad = parse_window_request("soon", "", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().what.find("--since"), std::string::npos);
  EXPECT_EQ(bad.error().exit_code, 2);
  EXPECT_FALSE(parse_window_request("", "abc", "").ok());
  EXPECT_FALSE(parse_window_request("", "", "-3").ok());
  EXPECT_FALSE(parse_window_request("0s", "", "").ok());
  EXPECT_FALSE(parse_window_request("5m", "1", "").ok());
}

TEST(AnalysisWindow, EmptyOrOutsideWindowsAreErrorsThatStateTheTraceSpan) {
  auto req = parse_window_request("", "7", "2");
  ASSERT_TRUE(req.ok());
  auto w = resolve_window(req.value(), kStart, kEnd, false);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().what.find("empty window"), std::string::npos);
  EXPECT_NE(w.error().hint.find("+600.000 s"), std::string::npos);

  auto later = parse_window_request("", "700", "800");
  ASSERT_TRUE(later.ok());
  auto out = resolve_window(later.value(), kStart, kEnd, false);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().what.find("outside the trace"), std::string::npos);
}

TEST(AnalysisWindow, TimePointForms) {
  auto rel = parse_time_point("2.5");
  ASSERT_TRUE(rel.ok());
  EXPECT_FALSE(rel->absolute);
  EXPECT_EQ(rel->ns, 2'500'000'000);
  auto abs = parse_time_point("1700000000123456789");
  ASSERT_TRUE(abs.ok());
  EXPECT_TRUE(abs->absolute);
  EXPECT_EQ(abs->ns, 1'700'000'000'123'456'789);
  EXPECT_FALSE(parse_time_point("").ok());
  EXPECT_FALSE(parse_time_point("12 parsecs").ok());
}

}  // namespace
}  // namespace gpuwhy::analysis
