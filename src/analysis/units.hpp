// SPDX-License-Identifier: Apache-2.0
// Numbers as an engineer reads them at 3 a.m.: always with a unit, three significant digits,
// thousands separators on counts. Evidence lines are built with these so that the text report,
// the JSON "text" fields and the docs all say the same thing.
#pragma once

#include <cstdint>
#include <string>

namespace gpuwhy::analysis {

std::string fmt_duration(int64_t ns);   // "850 ns", "12.3 µs", "4.51 ms", "3.80 s", "2.5 min"
std::string fmt_rel(int64_t rel_ns);    // "+4.512 s" (time since the trace start)
std::string fmt_bytes(uint64_t bytes);  // "4 B", "64.0 KiB", "12.0 MiB", "1.50 GiB"
std::string fmt_bandwidth(double bytes_per_s);  // "1,290 MB/s" (decimal, like copy benchmarks)
std::string fmt_rate(double per_s);             // "41/s", "2.5/s", "2,010/s"
std::string fmt_count(uint64_t n);              // "12,345"
std::string fmt_percent(double fraction);       // 0.382 -> "38.2%"
std::string fmt_ratio(double r);                // "98.6x"

}  // namespace gpuwhy::analysis
