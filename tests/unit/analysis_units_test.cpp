// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

TEST(AnalysisUnits, Durations) {
  EXPECT_EQ(fmt_duration(850), "850 ns");
  EXPECT_EQ(fmt_duration(12'345), "12.3 µs");
  EXPECT_EQ(fmt_duration(4'512'000), "4.51 ms");
  EXPECT_EQ(fmt_duration(3'800'000'000), "3.80 s");
  EXPECT_EQ(fmt_duration(999'999), "1.00 ms");
  EXPECT_EQ(fmt_duration(150'000'000'000), "2.50 min");
}

TEST(AnalysisUnits, Others) {
  EXPECT_EQ(fmt_rel(4'512'300'000), "+4.512 s");
  EXPECT_EQ(fmt_bytes(4), "4 B");
  EXPECT_EQ(fmt_bytes(64 * 1024), "64.0 KiB");
  EXPECT_EQ(fmt_bytes(12ull << 20), "12.0 MiB");
  EXPECT_EQ(fmt_count(1234567), "1,234,567");
  EXPECT_EQ(fmt_count(12), "12");
  EXPECT_EQ(fmt_percent(0.382), "38.2%");
  EXPECT_EQ(fmt_rate(41.2), "41/s");
  EXPECT_EQ(fmt_rate(2.5), "2.5/s");
  EXPECT_EQ(fmt_rate(2010), "2,010/s");
  EXPECT_EQ(fmt_bandwidth(1.29e9), "1,290 MB/s");
  EXPECT_EQ(fmt_ratio(98.6), "98.6x");
}

}  // namespace
}  // namespace gpuwhy::analysis
