// SPDX-License-Identifier: Apache-2.0
// The exposition writer: exact text 0.0.4 and OpenMetrics output for each metric type, label
// escaping, and the format an Accept header selects.
#include <gtest/gtest.h>

#include "metrics/exposition.hpp"
#include "metrics/listen_address.hpp"

namespace gpuwhy::metrics {
namespace {

std::vector<Family> sample_families() {
  Family calls{"x_calls", "Calls.", MetricType::Counter, {}, {}};
  calls.series.push_back({{{"process", "a\"b\\c\nd"}, {"api", "cuInit"}}, 3, {}, 0});
  Family up{"x_up", "Up.", MetricType::Gauge, {}, {{{}, 1.5, {}, 0}}};
  Family hist{"x_seconds", "Durations.", MetricType::Histogram, {0.001, 1}, {}};
  hist.series.push_back({{{"api", "cuInit"}}, 0, {2, 0, 1}, 2.5});
  return {calls, up, hist};
}

TEST(MetricsExposition, Text004) {
  std::string out;
  write_exposition(out, sample_families(), Format::Text004);
  EXPECT_EQ(out,
            "# HELP x_calls_total Calls.\n"
            "# TYPE x_calls_total counter\n"
            "x_calls_total{process=\"a\\\"b\\\\c\\nd\",api=\"cuInit\"} 3\n"
            "# HELP x_up Up.\n"
            "# TYPE x_up gauge\n"
            "x_up 1.5\n"
            "# HELP x_seconds Durations.\n"
            "# TYPE x_seconds histogram\n"
            "x_seconds_bucket{api=\"cuInit\",le=\"0.001\"} 2\n"
            "x_seconds_bucket{api=\"cuInit\",le=\"1.0\"} 2\n"
            "x_seconds_bucket{api=\"cuInit\",le=\"+Inf\"} 3\n"
            "x_seconds_sum{api=\"cuInit\"} 2.5\n"
            "x_seconds_count{api=\"cuInit\"} 3\n");
}

TEST(MetricsExposition, OpenMetricsNamesCounterFamiliesWithoutTotalAndEnds) {
  std::string out;
  write_exposition(out, sample_families(), Format::OpenMetrics);
  EXPECT_NE(out.find("# TYPE x_calls counter\nx_calls_total{"), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.size() - 6), "# EOF\n");
  EXPECT_EQ(out.find("# TYPE x_calls_total"), std::string::npos);
}

TEST(MetricsExposition, LabelValuesAreAlwaysPrintableAscii) {
  EXPECT_EQ(escape_label_value(std::string("gpu\x01\xff\xc3\xa9") + "x"), "gpu????x");
  EXPECT_EQ(escape_label_value("python3"), "python3");
}

TEST(MetricsExposition, Negotiation) {
  EXPECT_EQ(negotiate(""), Format::Text004);
  EXPECT_EQ(negotiate("text/plain;version=0.0.4;q=0.5,*/*;q=0.1"), Format::Text004);
  EXPECT_EQ(negotiate("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
            Format::OpenMetrics);
  EXPECT_NE(content_type(Format::Text004).find("version=0.0.4"), std::string_view::npos);
}

TEST(MetricsListenAddress, BarePortsMeanLoopbackAndExplicitHostsAreKept) {
  auto a = parse_listen_address("9464");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->text(), "127.0.0.1:9464");
  a = parse_listen_address(":9500");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->text(), "127.0.0.1:9500");
  a = parse_listen_address("0.0.0.0:9464");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "0.0.0.0");
  a = parse_listen_address("[::1]:9464");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->text(), "[::1]:9464");
  for (const char* bad : {"", "x", ":", "0", "65536", "host:", "[::1]", "[::1]9464", "::1:9464",
                          "[]:9464", "1.2.3.4:94x"}) {
    auto r = parse_listen_address(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().exit_code, 2);
      EXPECT_NE(r.error().line().find("--metrics"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace gpuwhy::metrics
