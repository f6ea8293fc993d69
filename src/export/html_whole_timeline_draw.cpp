// SPDX-License-Identifier: Apache-2.0
// The whole-window timeline as a page section (html_report.hpp). One inline SVG per lane, its
// viewBox one unit per bucket, stretched to the lane's width; zoom without script (the page runs
// none): radio buttons whose :checked state widens the lanes 4x or 16x inside a box that scrolls
// sideways, the thread's name sticking to the box's left edge.
#include <algorithm>
#include <iterator>
#include <string>

#include "analysis/units.hpp"
#include "export/html_escape.hpp"
#include "export/html_report.hpp"
#include "export/plural.hpp"

namespace gpuwhy::render {
namespace {

using json = nlohmann::ordered_json;

// CSS class and legend label per state, in the order of the data's "states".
constexpr const char* kClass[] = {"k-sync", "k-call", "k-pre", "k-blk"};
constexpr const char* kLabel[] = {"sync", "GPU call", "preempted", "blocked"};
constexpr int kDrawnStates = static_cast<int>(std::size(kClass));  // the data's state count

int64_t edge(int64_t start, int64_t span, int n, int i) {
  return start + static_cast<int64_t>((static_cast<__int128>(span) * i + n - 1) / n);
}

// One lane's rects: each bucket in its dominant state, runs of one state as one rect.
std::string lane_rects(const json& ns, int64_t start, int64_t span, int n) {
  std::string s;
  int run_state = -1, run_from = 0;
  auto close_run = [&](int to) {
    if (run_state < 0 || to == run_from) return;
    s += "<rect x=\"" + std::to_string(run_from) + "\" width=\"" + std::to_string(to - run_from) +
         "\" height=\"1\" class=\"" + kClass[run_state] + "\"><title>" + kLabel[run_state] + " " +
         analysis::fmt_rel(edge(start, span, n, run_from)) + " … " +
         analysis::fmt_rel(edge(start, span, n, to)) + "</title></rect>";
  };
  for (int i = 0; i < n; ++i) {
    const int64_t width = edge(start, span, n, i + 1) - edge(start, span, n, i);
    int64_t in_states = 0, best_ns = 0;
    int best = -1;
    for (int k = 0; k < kDrawnStates; ++k) {
      const int64_t v = ns[k][static_cast<size_t>(i)].get<int64_t>();
      in_states += v;
      if (v > best_ns) {
        best_ns = v;
        best = k;
      }
    }
    // None (on CPU outside any call) is dominant when it has more than any one state.
    if (width - in_states > best_ns) best = -1;
    if (best != run_state) {
      close_run(i);
      run_state = best;
      run_from = i;
    }
  }
  close_run(n);
  return s;
}

}  // namespace

std::string whole_timeline_html(const json& t) {
  if (!t.is_object() || !t.contains("lanes") || t["lanes"].empty()) return "";
  const int64_t start = t["start_rel_ns"].get<int64_t>(), end = t["end_rel_ns"].get<int64_t>();
  const int n = t["buckets"].get<int>();
  const int64_t span = end - start;
  std::string h =
      "<section id=\"whole-timeline\"><h2>Whole-window timeline</h2><div class=\"meta\">" +
      count_of(t["lanes"].size(), "thread", "threads") + " over " + analysis::fmt_rel(start) +
      " … " + analysis::fmt_rel(end) + ", in " +
      count_of(static_cast<uint64_t>(n), "bucket", "buckets") + " of " +
      analysis::fmt_duration(std::max<int64_t>(1, span / n)) +
      ", each drawn in the state that has most of its time <span class=\"legend\">";
  for (int k = 0; k < kDrawnStates; ++k)
    h += std::string("<span class=\"") + kClass[k] + "\"></span>" + kLabel[k];
  h += "</span>";
  if (const auto left = t.value("threads_not_drawn", 0); left > 0)
    h += " · " + count_of(static_cast<uint64_t>(left), "quieter thread", "quieter threads") +
         " not drawn";
  h += "</div><div class=\"tlz\">zoom <input type=\"radio\" name=\"tlz\" id=\"tlz1\" checked>"
       "<label for=\"tlz1\">1×</label><input type=\"radio\" name=\"tlz\" id=\"tlz4\">"
       "<label for=\"tlz4\">4×</label><input type=\"radio\" name=\"tlz\" id=\"tlz16\">"
       "<label for=\"tlz16\">16×</label><div class=\"tlw\"><div class=\"tli\">";
  for (const json& l : t["lanes"]) {
    const std::string id =
        std::to_string(l["pid"].get<int64_t>()) + "-" + std::to_string(l["tid"].get<int64_t>());
    h += "<div class=\"lane\" id=\"lane-" + id + "\"><div class=\"ln\">" +
         html_text(l["comm"].get<std::string>()) + " (pid " +
         std::to_string(l["pid"].get<int64_t>()) + ", tid " +
         std::to_string(l["tid"].get<int64_t>()) + ") · " +
         count_of(l["rows"].get<uint64_t>(), "event", "events") +
         "</div><svg class=\"lane\" viewBox=\"0 0 " + std::to_string(n) +
         " 1\" preserveAspectRatio=\"none\" role=\"img\">" + lane_rects(l["ns"], start, span, n) +
         "</svg></div>";
  }
  h += "<div class=\"axis\">";
  for (int q = 0; q <= 4; ++q)
    h += "<span>" + analysis::fmt_rel(start + static_cast<int64_t>(span * (q / 4.0))) + "</span>";
  h += "</div></div></div></div></section>";
  return h;
}

}  // namespace gpuwhy::render
