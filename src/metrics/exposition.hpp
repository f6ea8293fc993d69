// SPDX-License-Identifier: Apache-2.0
// The Prometheus text exposition format (version 0.0.4) and OpenMetrics 1.0.0 text, written from
// plain values: what a scrape of `trace --metrics` returns. No state; the registry collects.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuwhy::metrics {

enum class MetricType { Counter, Gauge, Histogram };
enum class Format { Text004, OpenMetrics };

using Labels = std::vector<std::pair<std::string, std::string>>;

struct Series {
  Labels labels;
  double value = 0;  // counter or gauge
  // Histogram: per-bucket (not cumulative) counts, one per upper bound of the family and a last
  // one for +Inf; the sum of the observed values.
  std::vector<uint64_t> buckets;
  double sum = 0;
};

struct Family {
  std::string name;  // a counter's name without "_total": the writer adds it to its samples
  std::string help;
  MetricType type = MetricType::Counter;
  std::vector<double> upper_bounds;  // histogram bucket bounds, ascending, without +Inf
  std::vector<Series> series;
  // The unit its name ends in ("seconds", "bytes"), "" for none: OpenMetrics writes it as
  // "# UNIT", and only where the name ends in "_" + unit, as that format requires.
  std::string unit;
};

// The Content-Type header value of a format.
std::string_view content_type(Format f);
// The format an Accept header asks for: OpenMetrics only when it names it (Prometheus 2.x does,
// first); anything else, or no header, gets text 0.0.4.
Format negotiate(std::string_view accept);

// A label value as the formats quote it (\\, \", \n escaped). Bytes that are not printable ASCII
// (a process name may hold any byte) become '?', so the output is always valid UTF-8.
std::string escape_label_value(std::string_view v);

// Appends the families to `out`; OpenMetrics ends with "# EOF".
void write_exposition(std::string& out, const std::vector<Family>& families, Format format);

}  // namespace gpuwhy::metrics
