// SPDX-License-Identifier: Apache-2.0
// The time window explain looks at. Traces are read later, on other machines, so every time the
// user gives is about the trace, never about "now": --since counts back from the trace's end,
// --from/--to are seconds from the trace's start (or wall-clock ns, for pasting a ts column).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace gpuwhy::analysis {

struct TimeWindow {
  int64_t trace_start_ns = 0;  // session.start_ns: "+0 s" in every report
  int64_t trace_end_ns = 0;    // session.end_ns, or the last event of an incomplete trace
  bool end_is_last_event = false;
  int64_t start_ns = 0;  // the window explained, wall ns, [start, end)
  int64_t end_ns = 0;
  int64_t duration() const { return end_ns - start_ns; }
};

// A --from/--to value. Bare numbers and durations ("2.5", "300ms", "1m") are relative to the
// trace start; an integer of 16 digits or more is wall-clock ns (as stored in ts columns).
struct TimePoint {
  bool absolute = false;
  int64_t ns = 0;
};
Result<TimePoint> parse_time_point(std::string_view text);

// Wall ns at or above this are absolute timestamps (2001-09-09); below, relative seconds would
// have to exceed 11 days, which no --from means.
inline constexpr int64_t kAbsoluteThresholdNs = 1'000'000'000'000'000;

struct WindowRequest {
  std::optional<int64_t> since_ns;  // --since, counted back from the trace end
  std::optional<TimePoint> from, to;
};

// Parses the three flags as typed (empty string = not given). Errors name the flag and the
// accepted forms.
Result<WindowRequest> parse_window_request(const std::string& since, const std::string& from,
                                           const std::string& to);

// Intersects the request with the trace's span. An empty result is an error that states the
// trace's span, so the user can retype the flags.
Result<TimeWindow> resolve_window(const WindowRequest& req, int64_t trace_start_ns,
                                  int64_t trace_end_ns, bool end_is_last_event);

}  // namespace gpuwhy::analysis
