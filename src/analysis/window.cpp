// SPDX-License-Identifier: Apache-2.0
#include "analysis/window.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "analysis/units.hpp"
#include "core/clock.hpp"

namespace gpuwhy::analysis {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(c); });
}

std::string span_text(int64_t start, int64_t end, int64_t origin) {
  return fmt_rel(start - origin) + " .. " + fmt_rel(end - origin);
}

}  // namespace

Result<TimePoint> parse_time_point(std::string_view text) {
  const std::string bad =
      "expected seconds from the trace start (2.5), a duration (300ms, 1m) "
      "or wall-clock ns (a ts value)";
  if (text.empty()) return Error{"empty time value", bad, 2};
  if (all_digits(text) && text.size() >= 16) {
    int64_t v = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec != std::errc() || v < kAbsoluteThresholdNs) {
      return Error{"time value '" + std::string(text) + "' is out of range", bad, 2};
    }
    return TimePoint{true, v};
  }
  const std::string s(text);
  const int64_t ns = parse_duration_ns(s.c_str());
  if (ns < 0) return Error{"cannot read time value '" + s + "'", bad, 2};
  return TimePoint{false, ns};
}

Result<WindowRequest> parse_window_request(const std::string& since, const std::string& from,
                                           const std::string& to) {
  WindowRequest req;
  if (!since.empty()) {
    if (!from.empty() || !to.empty()) {
      return Error{"--since cannot be combined with --from/--to", "use one or the other", 2};
    }
    const int64_t ns = parse_duration_ns(since.c_str());
    if (ns < 0) {
      return Error{"cannot read --since '" + since + "'", "expected a duration: 30s, 5m, 2h", 2};
    }
    if (ns == 0) return Error{"--since " + since + " selects an empty window", "", 2};
    req.since_ns = ns;
    return req;
  }
  if (!from.empty()) {
    auto p = parse_time_point(from);
    if (!p) return Error{"--from: " + p.error().what, p.error().hint, 2};
    req.from = p.value();
  }
  if (!to.empty()) {
    auto p = parse_time_point(to);
    if (!p) return Error{"--to: " + p.error().what, p.error().hint, 2};
    req.to = p.value();
  }
  return req;
}

Result<TimeWindow> resolve_window(const WindowRequest& req, int64_t trace_start_ns,
                                  int64_t trace_end_ns, bool end_is_last_event) {
  TimeWindow w;
  w.trace_start_ns = trace_start_ns;
  w.trace_end_ns = std::max(trace_end_ns, trace_start_ns);
  w.end_is_last_event = end_is_last_event;
  w.start_ns = w.trace_start_ns;
  w.end_ns = w.trace_end_ns;
  auto abs_of = [&](const TimePoint& p) { return p.absolute ? p.ns : trace_start_ns + p.ns; };

  int64_t start = w.trace_start_ns, end = w.trace_end_ns;
  if (req.since_ns) {
    // Saturating: a --since longer than the trace means "all of it".
    start = *req.since_ns >= end - w.trace_start_ns ? w.trace_start_ns : end - *req.since_ns;
  }
  if (req.from) start = abs_of(*req.from);
  if (req.to) end = abs_of(*req.to);
  const std::string span = span_text(w.trace_start_ns, w.trace_end_ns, trace_start_ns);
  if (start >= end) {
    return Error{
        "empty window: " + span_text(start, end, trace_start_ns) + " (start is not before end)",
        "the trace spans " + span, 2};
  }
  const int64_t cs = std::max(start, w.trace_start_ns);
  const int64_t ce = std::min(end, w.trace_end_ns);
  if (cs >= ce) {
    return Error{"window " + span_text(start, end, trace_start_ns) + " is outside the trace",
                 "the trace spans " + span, 2};
  }
  w.start_ns = cs;
  w.end_ns = ce;
  return w;
}

}  // namespace gpuwhy::analysis
