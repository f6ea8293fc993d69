// SPDX-License-Identifier: Apache-2.0
#include "metrics/exposition.hpp"

#include <charconv>
#include <cmath>

namespace gpuwhy::metrics {
namespace {

// Shortest text that reads back as the same double; integers without a fraction or exponent
// (counts are the common case and read best as such).
void append_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buf[64];
  std::to_chars_result r;
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(v));
  else
    r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_help(std::string& out, std::string_view help, Format format) {
  for (char c : help) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && format == Format::OpenMetrics)
      out += "\\\"";
    else
      out += c;
  }
}

// {a="x",b="y"} with an optional extra label last (a histogram's le), or nothing without labels.
void append_labels(std::string& out, const Labels& labels, std::string_view extra_name = {},
                   std::string_view extra_value = {}) {
  if (labels.empty() && extra_name.empty()) return;
  out += '{';
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) out += ',';
    first = false;
    out += name;
    out += "=\"";
    out += escape_label_value(value);
    out += '"';
  }
  if (!extra_name.empty()) {
    if (!first) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}

std::string_view type_name(MetricType t) {
  switch (t) {
    case MetricType::Counter:
      return "counter";
    case MetricType::Gauge:
      return "gauge";
    case MetricType::Histogram:
      return "histogram";
  }
  return "untyped";
}

void write_histogram(std::string& out, const Family& f, const Series& s) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= f.upper_bounds.size(); ++i) {
    cumulative += i < s.buckets.size() ? s.buckets[i] : 0;
    std::string le;
    append_number(le, i < f.upper_bounds.size() ? f.upper_bounds[i] : INFINITY);
    // OpenMetrics wants le as a float ("1.0", not "1"); text 0.0.4 accepts either.
    if (le.find_first_of(".eIN") == std::string::npos) le += ".0";
    out += f.name;
    out += "_bucket";
    append_labels(out, s.labels, "le", le);
    out += ' ';
    append_number(out, static_cast<double>(cumulative));
    out += '\n';
  }
  out += f.name;
  out += "_sum";
  append_labels(out, s.labels);
  out += ' ';
  append_number(out, s.sum);
  out += '\n';
  out += f.name;
  out += "_count";
  append_labels(out, s.labels);
  out += ' ';
  append_number(out, static_cast<double>(cumulative));
  out += '\n';
}

}  // namespace

std::string_view content_type(Format f) {
  return f == Format::OpenMetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                  : "text/plain; version=0.0.4; charset=utf-8";
}

Format negotiate(std::string_view accept) {
  return accept.find("application/openmetrics-text") != std::string_view::npos ? Format::OpenMetrics
                                                                               : Format::Text004;
}

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else if (u < 0x20 || u >= 0x7f)
      out += '?';
    else
      out += c;
  }
  return out;
}

void write_exposition(std::string& out, const std::vector<Family>& families, Format format) {
  for (const Family& f : families) {
    // Text 0.0.4 names a counter's family as its samples ("x_total"); OpenMetrics names the
    // family without the suffix.
    const bool counter = f.type == MetricType::Counter;
    const std::string family_name =
        counter && format == Format::Text004 ? f.name + "_total" : f.name;
    out += "# HELP ";
    out += family_name;
    out += ' ';
    append_help(out, f.help, format);
    out += "\n# TYPE ";
    out += family_name;
    out += ' ';
    out += type_name(f.type);
    out += '\n';
    if (format == Format::OpenMetrics && !f.unit.empty() && f.name.ends_with("_" + f.unit)) {
      out += "# UNIT ";
      out += family_name;
      out += ' ';
      out += f.unit;
      out += '\n';
    }
    for (const Series& s : f.series) {
      if (f.type == MetricType::Histogram) {
        write_histogram(out, f, s);
        continue;
      }
      out += f.name;
      if (counter) out += "_total";
      append_labels(out, s.labels);
      out += ' ';
      append_number(out, s.value);
      out += '\n';
    }
  }
  if (format == Format::OpenMetrics) out += "# EOF\n";
}

}  // namespace gpuwhy::metrics
