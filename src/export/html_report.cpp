// SPDX-License-Identifier: Apache-2.0
// The HTML page of an explain report (html_report.hpp). Plain functions appending to one string:
// a header with the verdict, the caveats, one card per chain (evidence, fix, timeline), the
// whole-window timeline (html_whole_timeline_draw.cpp), the time split of every thread, the
// per-operation percentiles, and the JSON it was drawn from.
#include "export/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "analysis/units.hpp"
#include "export/html_escape.hpp"
#include "export/plural.hpp"

namespace gpuwhy::render {
namespace {

using json = nlohmann::ordered_json;
using analysis::fmt_bytes;
using analysis::fmt_count;
using analysis::fmt_duration;
using analysis::fmt_percent;
using analysis::fmt_rel;

// Every name and text from the report (html_escape.hpp).
std::string esc(std::string_view raw) { return html_text(raw); }

std::string str(const json& j, const char* k) {
  return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
}
int64_t i64(const json& j, const char* k) {
  return j.contains(k) && j[k].is_number() ? j[k].get<int64_t>() : 0;
}
double num(const json& j, const char* k) {
  return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0;
}
std::string dur(const json& j, const char* k) {
  return j.contains(k) && j[k].is_number() ? fmt_duration(j[k].get<int64_t>()) : "–";
}
std::string task(const json& t) {
  if (!t.is_object()) return "";
  std::string s = str(t, "comm");
  if (t.contains("tid")) return s + " (tid " + std::to_string(i64(t, "tid")) + ")";
  return s + " (pid " + std::to_string(i64(t, "pid")) + ")";
}
std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

// Numbers and headers never wrap; names and text wrap anywhere (main's overflow-wrap, td.l), so
// no untrusted name, however long and unbroken, makes the page wider than a 1,280 px window;
// only the zoomed whole-window timeline is wider, inside its own scrolling box (.tlw).
constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;background:#f4f5f7}
main{max-width:1180px;margin:0 auto;padding:16px 20px 40px;overflow-wrap:anywhere}
h1{font-size:20px;margin:8px 0 2px}h2{font-size:16px;margin:26px 0 8px}
.meta{color:#5b6472;font-size:12.5px}
.verdict{font-size:17px;font-weight:600;background:#fff;border-left:5px solid #c0392b;padding:10px 14px;margin:12px 0;border-radius:4px}
.verdict.clean{border-color:#27ae60}
.caveat{background:#fff8e1;border:1px solid #f3d37a;padding:6px 10px;margin:4px 0;border-radius:4px;font-size:13px}
.card{background:#fff;border-radius:6px;box-shadow:0 1px 2px rgba(0,0,0,.12);padding:12px 16px;margin:12px 0}
.card h3{margin:0 0 4px;font-size:15.5px}
.sev{display:inline-block;font-size:11px;font-weight:700;padding:1px 7px;border-radius:10px;color:#fff;margin-right:6px;vertical-align:2px}
.HIGH{background:#c0392b}.MEDIUM{background:#e67e22}.LOW{background:#7f8c8d}
.nums{color:#394150;font-size:13px;margin:4px 0}
.nums b{font-variant-numeric:tabular-nums}
ul.ev{margin:6px 0 6px 18px;padding:0;font-size:13px}ul.ev li{margin:2px 0}
.at{color:#5b6472;font-variant-numeric:tabular-nums;margin-right:6px}
.fix{background:#eef6ee;border-radius:4px;padding:6px 10px;font-size:13px;margin-top:6px}
table{border-collapse:collapse;background:#fff;font-size:12.5px;width:100%}
th,td{padding:3px 8px;border-bottom:1px solid #e4e7eb;text-align:right;vertical-align:top;white-space:nowrap}
th{background:#eceff3;position:sticky;top:0}td.l,th.l{text-align:left;white-space:normal}
.bar{display:flex;height:10px;margin-top:3px;border-radius:3px;overflow:hidden;background:#e4e7eb;min-width:260px}
.bar span{display:block;height:100%}
.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px;vertical-align:-1px;border-radius:2px}
.c0{background:#3b7dd8}.c1{background:#d64541}.c2{background:#8e9aaf}.c3{background:#f0a202}.c4{background:#6c5ce7}.c5{background:#27ae60}.c6{background:#16a085}.c7{background:#b33771}
svg.tl{width:100%;height:auto;background:#fafbfc;border:1px solid #e4e7eb;border-radius:4px;margin-top:6px}
svg text{font:11px system-ui,sans-serif;fill:#394150}
details{margin-top:20px}pre{white-space:pre-wrap;font-size:11px;background:#fff;padding:8px}
.tlz{font-size:12.5px;color:#5b6472}.tlz input{margin:0 3px 0 10px;vertical-align:-2px}
.tlw{overflow-x:auto;background:#fff;border:1px solid #e4e7eb;border-radius:4px;margin-top:6px;padding:4px 0}
.tli{width:100%}#tlz4:checked~.tlw .tli{width:400%}#tlz16:checked~.tlw .tli{width:1600%}
.lane{margin:3px 0}.ln{position:sticky;left:0;display:inline-block;max-width:min(100%,1100px);font-size:12px;padding:0 6px}
svg.lane{display:block;width:100%;height:14px;background:#f4f5f7;shape-rendering:crispEdges}
.k-sync{fill:#6c5ce7;background:#6c5ce7}.k-call{fill:#3b7dd8;background:#3b7dd8}.k-pre{fill:#d64541;background:#d64541}.k-blk{fill:#8e9aaf;background:#8e9aaf}
.axis{display:flex;justify-content:space-between;font-size:11px;color:#5b6472;padding:0 6px}
)css";

// A chain's worst stretch of its thread: calls on the top lane, off-CPU intervals below
// (red: preempted, grey: blocked), each with its name in a tooltip.
std::string timeline_svg(const json& t) {
  const int64_t t0 = i64(t, "start_rel_ns"), t1 = std::max(t0 + 1, i64(t, "end_rel_ns"));
  const double w = 1100, left = 90, right = 10, span = static_cast<double>(t1 - t0);
  auto x = [&](int64_t rel) {
    return left + (w - left - right) * std::clamp((rel - t0) / span, 0.0, 1.0);
  };
  std::string s = "<svg class=\"tl\" viewBox=\"0 0 1100 96\" role=\"img\">";
  s += "<text x=\"4\" y=\"30\">GPU calls</text><text x=\"4\" y=\"62\">off-CPU</text>";
  for (const json& c : t["calls"]) {
    const int64_t a = c[0].get<int64_t>(), d = c[1].get<int64_t>();
    const double x0 = x(a), x1 = std::max(x(a + d), x0 + 0.6);
    s += "<rect x=\"" + fmt(x0) + "\" y=\"18\" width=\"" + fmt(x1 - x0) +
         "\" height=\"18\" fill=\"#3b7dd8\"><title>" + esc(c[2].get<std::string>()) + " " +
         fmt_rel(a) + ", " + fmt_duration(d) + "</title></rect>";
  }
  for (const json& o : t["offcpu"]) {
    const int64_t a = o[0].get<int64_t>(), d = o[1].get<int64_t>();
    const double x0 = x(a), x1 = std::max(x(a + d), x0 + 0.6);
    s += "<rect x=\"" + fmt(x0) + "\" y=\"50\" width=\"" + fmt(x1 - x0) +
         "\" height=\"18\" fill=\"" + (o[2].get<bool>() ? "#d64541" : "#8e9aaf") + "\"><title>" +
         esc(o[3].get<std::string>()) + " " + fmt_rel(a) + ", " + fmt_duration(d) +
         "</title></rect>";
  }
  s += "<text x=\"" + fmt(left) + "\" y=\"88\">" + fmt_rel(t0) + "</text>";
  s += "<text x=\"" + fmt(w - right) + "\" y=\"88\" text-anchor=\"end\">" + fmt_rel(t1) + "</text>";
  s += "<text x=\"" + fmt((left + w) / 2) + "\" y=\"88\" text-anchor=\"middle\">" +
       fmt_duration(t1 - t0) + " shown</text></svg>";
  return s;
}

void chain_card(std::string& h, const json& c, const json& timelines) {
  const std::string sev = str(c, "severity");
  h += "<section class=\"card\" id=\"chain-" + std::to_string(i64(c, "rank")) +
       "\"><h3><span class=\"sev " + esc(sev) + "\">" + esc(sev) + "</span>#" +
       std::to_string(i64(c, "rank")) + " " + esc(str(c, "title")) + "</h3><div>" +
       esc(str(c, "summary")) + "</div>";
  h += "<div class=\"nums\">lost <b>" + dur(c, "lost_ns") + "</b> of <b>" + dur(c, "span_ns") +
       "</b> (<b>" + fmt_percent(num(c, "share")) + "</b>) · process <b>" +
       esc(task(c["process"])) + "</b>";
  if (c["thread"].is_object()) h += " · thread <b>" + esc(task(c["thread"])) + "</b>";
  if (c["culprit"].is_object()) h += " · culprit <b>" + esc(task(c["culprit"])) + "</b>";
  if (c.contains("first_rel_ns"))
    h += " · " + fmt_rel(i64(c, "first_rel_ns")) + " … " + fmt_rel(i64(c, "last_rel_ns"));
  h += "</div><ul class=\"ev\">";
  for (const json& e : c["evidence"]) {
    h += "<li>";
    if (e.contains("at_rel_ns"))
      h += "<span class=\"at\">" + fmt_rel(i64(e, "at_rel_ns")) + "</span>";
    h += esc(str(e, "text")) + "</li>";
  }
  h += "</ul><div class=\"fix\"><b>Fix:</b> " + esc(str(c, "fix")) + "</div>";
  const std::string rank = std::to_string(i64(c, "rank"));
  if (timelines.contains(rank)) {
    const json& t = timelines[rank];
    h += "<div class=\"meta\" style=\"margin-top:8px\">Worst stretch of tid " +
         std::to_string(i64(t, "tid")) + ": " +
         count_of(t["calls"].size(), "GPU call", "GPU calls") + ", " +
         count_of(t["offcpu"].size(), "off-CPU interval", "off-CPU intervals") +
         " <span class=\"legend\"><span class=\"c0\"></span>GPU call"
         "<span class=\"c1\"></span>preempted<span class=\"c2\"></span>blocked</span></div>" +
         timeline_svg(t);
  }
  h += "</section>";
}

// The budget of one thread in the report's "budgets" (explain's time budget), or null.
const json* budget_of(const json& budgets, int64_t tid) {
  if (!budgets.is_array()) return nullptr;
  for (const json& b : budgets)
    if (b.contains("thread") && i64(b["thread"], "tid") == tid && b.contains("buckets"))
      return &b["buckets"];
  return nullptr;
}

// Where a thread's active span went. The report's time budget (when the JSON has one) splits the
// span into buckets that add up to it: one stacked bar. Without it (an older report), GPU API
// time, preempted, blocked and wake-up delay overlap (a sleep inside a sync is both): one bar
// each, as a share of the span.
void thread_split(std::string& h, const json& stats, const json& budgets) {
  h += "<h2>Per-thread time split</h2><table><tr><th class=\"l\">thread</th><th>calls</th>"
       "<th>active span</th><th class=\"l\">split of the span</th></tr>";
  for (const json& p : stats["processes"]) {
    for (const json& t : p["threads"]) {
      const int64_t span = std::max<int64_t>(1, i64(t, "last_rel_ns") - i64(t, "first_rel_ns"));
      h += "<tr><td class=\"l\">" + esc(str(t, "comm")) + " (pid " + std::to_string(i64(t, "pid")) +
           ", tid " + std::to_string(i64(t, "tid")) + ")</td><td>" +
           fmt_count(static_cast<uint64_t>(i64(t, "calls"))) + "</td><td>" + fmt_duration(span) +
           "</td><td class=\"l\">";
      // A part's share: the report's own when it gives one (a budget bucket's "share"), else of
      // the span.
      auto bar = [&](const std::vector<std::pair<std::string, int64_t>>& parts, size_t color0,
                     const std::vector<double>& shares = {}) {
        std::string legend;
        h += "<div class=\"bar\">";
        for (size_t i = 0; i < parts.size(); ++i) {
          const double share =
              i < shares.size() && shares[i] >= 0
                  ? shares[i]
                  : std::clamp(parts[i].second / static_cast<double>(span), 0.0, 1.0);
          const std::string cls = "c" + std::to_string((color0 + i) % 8);
          h += "<span class=\"" + cls + "\" style=\"width:" + fmt(share * 100) + "%\" title=\"" +
               esc(parts[i].first) + " " + fmt_duration(parts[i].second) + "\"></span>";
          legend += "<span class=\"" + cls + "\"></span>" + esc(parts[i].first) + " " +
                    fmt_duration(parts[i].second) + " (" + fmt_percent(share) + ")";
        }
        h += "</div><div class=\"legend meta\">" + legend + "</div>";
      };
      if (const json* buckets = budget_of(budgets, i64(t, "tid"))) {
        std::vector<std::pair<std::string, int64_t>> parts;
        std::vector<double> shares;
        for (const json& b : *buckets) {
          parts.emplace_back(str(b, "label"), i64(b, "ns"));
          shares.push_back(b.contains("share") && b["share"].is_number() ? num(b, "share") : -1);
        }
        bar(parts, 0, shares);
      } else {
        const char* names[] = {"GPU API", "preempted", "blocked", "wake-up delay"};
        const char* keys[] = {"api_ns", "preempted_ns", "blocked_ns", "wakeup_ns"};
        for (size_t i = 0; i < 4; ++i) bar({{names[i], i64(t, keys[i])}}, i);
      }
      h += "</td></tr>";
    }
  }
  h += "</table>";
}

void ops_table(std::string& h, const json& ops) {
  h += "<h2>Operations (whole window)</h2><table><tr><th class=\"l\">operation</th>"
       "<th class=\"l\">category</th><th>calls</th><th>total</th><th>p50</th><th>p90</th>"
       "<th>p99</th><th>max</th><th>p99/p50</th><th>errors</th><th>bytes</th></tr>";
  for (const json& o : ops) {
    h += "<tr><td class=\"l\">" + esc(str(o, "name")) + "</td><td class=\"l\">" +
         esc(str(o, "category")) + "</td><td>" + fmt_count(static_cast<uint64_t>(i64(o, "count"))) +
         "</td><td>" + dur(o, "total_ns") + "</td><td>" + dur(o, "p50_ns") + "</td><td>" +
         dur(o, "p90_ns") + "</td><td>" + dur(o, "p99_ns") + "</td><td>" + dur(o, "max_ns") +
         "</td><td>" +
         (o["tail_ratio"].is_number() ? analysis::fmt_ratio(num(o, "tail_ratio")) : "–") +
         "</td><td>" +
         (o["errors"].is_number() ? fmt_count(static_cast<uint64_t>(i64(o, "errors"))) : "–") +
         "</td><td>" + (i64(o, "bytes") ? fmt_bytes(static_cast<uint64_t>(i64(o, "bytes"))) : "") +
         "</td></tr>";
  }
  h += "</table>";
}

// `gpuwhy audit`'s view of each GPU process (audit_json): its regime, the GPU-busy estimate
// with its bound, device memory and its largest sites.
void audit_section(std::string& h, const json& audit) {
  if (!audit.is_object() || !audit.contains("processes") || audit["processes"].empty()) return;
  h += "<h2>Efficiency audit (<code>gpuwhy audit</code>)</h2>";
  for (const json& p : audit["processes"]) {
    const json& b = p["gpu_busy"];
    const json& m = p["memory"];
    h += "<section class=\"card\" id=\"audit-" + std::to_string(i64(p, "pid")) + "\"><h3>" +
         esc(str(p, "comm")) + " (pid " + std::to_string(i64(p, "pid")) +
         "): " + esc(str(p, "regime")) + "</h3><div class=\"nums\">" + esc(str(p, "evidence")) +
         "</div><div class=\"fix\">" + esc(str(p, "move")) + "</div><div class=\"nums\">" +
         esc(str(p, "agreement")) + "</div><div class=\"nums\">" +
         "GPU busy (host-side estimate) <b>" + dur(b, "estimate_ns") + "</b> (" +
         fmt_percent(num(b, "ratio")) + " of its span), within " + dur(b, "lower_ns") + " … " +
         dur(b, "upper_ns") + "</div>";
    // The fixes by the time they return; the transfer lever says what pinning alone returns.
    for (const json& l : p["levers"]) {
      h += "<div class=\"nums\">fix (" + dur(l, "lost_ns") + " back): " + esc(str(l, "title")) +
           "</div>";
      if (!l.contains("pinning")) continue;
      const json& pin = l["pinning"];
      h += "<div class=\"nums\">pinning returns <b>" + dur(pin, "returns_ns") +
           "</b>: pageable copies " + dur(pin, "pageable_ns") + " less " +
           dur(pin, "at_pinned_ns") + " for the same " +
           fmt_bytes(static_cast<uint64_t>(i64(pin, "pageable_bytes"))) + " at " +
           analysis::fmt_bandwidth(num(pin, "pinned_bytes_per_s")) + " (" +
           (str(pin, "rate") == "observed" ? "the pinned rate seen in this trace"
                                           : "assumed: no pinned copy in the trace measures it") +
           ")</div>";
    }
    if (i64(m, "allocations") > 0) {
      h += "<div class=\"nums\">device memory: peak <b>" +
           fmt_bytes(static_cast<uint64_t>(i64(m, "peak_bytes"))) + "</b> at " +
           fmt_rel(i64(m, "peak_rel_ns")) + ", " +
           fmt_bytes(static_cast<uint64_t>(i64(m, "live_end_bytes"))) + " at the end</div>";
      if (m.contains("reserve")) {
        const json& r = m["reserve"];
        h += "<div class=\"nums\">reserved by a caching allocator: <b>" +
             fmt_bytes(static_cast<uint64_t>(i64(r, "bytes"))) + "</b> in " +
             count_of(static_cast<uint64_t>(i64(r, "segments")), "segment", "segments") +
             " at the end, peak " + fmt_bytes(static_cast<uint64_t>(i64(r, "peak_bytes"))) +
             " in " +
             count_of(static_cast<uint64_t>(i64(r, "peak_segments")), "segment", "segments") +
             "; grown at " + count_of(r["growth"].size(), "step", "steps") + ", " +
             count_of(r["sweeps"].size(), "sweep", "sweeps") + "; by " + esc(str(r, "site")) +
             (r.value("still_growing", false) ? "; <b>still growing</b>" : "") + "</div>";
      }
      h += "<table><tr><th class=\"l\">pattern</th><th>kept</th><th>allocated</th>"
           "<th>allocs</th><th>frees</th><th>untouched</th><th class=\"l\">site</th></tr>";
      size_t shown = 0;
      for (const json& site : m["sites"]) {
        if (shown++ == 10) break;
        h += "<tr><td class=\"l\">" + esc(str(site, "pattern")) + "</td><td>" +
             fmt_bytes(static_cast<uint64_t>(i64(site, "kept_bytes"))) + "</td><td>" +
             fmt_bytes(static_cast<uint64_t>(i64(site, "bytes_allocated"))) + "</td><td>" +
             fmt_count(static_cast<uint64_t>(i64(site, "allocs"))) + "</td><td>" +
             fmt_count(static_cast<uint64_t>(i64(site, "frees"))) + "</td><td>" +
             fmt_bytes(static_cast<uint64_t>(i64(site, "untouched_bytes"))) +
             "</td><td class=\"l\">" + esc(str(site, "site")) + "</td></tr>";
      }
      h += "</table>";
    }
    // Per GPU (device ordinal), when the process used more than one.
    if (p.contains("devices") && p["devices"].size() > 1) {
      h += "<table><tr><th>GPU</th><th class=\"l\">regime</th><th>span</th><th>GPU busy</th>"
           "<th>busy within</th><th>memory peak</th><th class=\"l\">threads</th></tr>";
      for (const json& d : p["devices"]) {
        const json& db = d["gpu_busy"];
        std::string tids;
        for (const json& t : d["tids"])
          tids += (tids.empty() ? "" : ", ") + std::to_string(t.get<int64_t>());
        h += "<tr><td>" + std::to_string(i64(d, "device")) + "</td><td class=\"l\">" +
             esc(str(d, "regime")) + "</td><td>" +
             fmt_duration(i64(d, "last_rel_ns") - i64(d, "first_rel_ns")) + "</td><td>" +
             dur(db, "estimate_ns") + " (" + fmt_percent(num(db, "ratio")) + ")</td><td>" +
             dur(db, "lower_ns") + " … " + dur(db, "upper_ns") + "</td><td>" +
             fmt_bytes(static_cast<uint64_t>(i64(d["memory"], "peak_bytes"))) +
             "</td><td class=\"l\">" + esc(tids) + "</td></tr>";
      }
      h += "</table>";
    }
    h += "</section>";
  }
}

}  // namespace

std::string explain_html(const json& report, const json& timelines, const json& audit,
                         const json& whole) {
  const json& tr = report["trace"];
  std::string h =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'\"><title>gpuwhy explain: " +
      esc(str(tr, "host")) + "</title><style>" + kStyle + "</style></head><body><main>";
  h += "<h1>gpuwhy explain</h1><div class=\"meta\">host <b>" + esc(str(tr, "host")) +
       "</b> · kernel " + esc(str(tr, "kernel")) + " · gpuwhy " + esc(str(tr, "agent_version")) +
       " · trace " + esc(str(tr, "status")) + " · window " +
       fmt_rel(i64(tr["window"], "start_rel_ns")) + " … " +
       fmt_rel(i64(tr["window"], "end_rel_ns")) + " (" + dur(tr["window"], "duration_ns") + ") · " +
       count_of(static_cast<uint64_t>(i64(tr, "calls")), "GPU call", "GPU calls") + ", " +
       count_of(static_cast<uint64_t>(i64(tr, "processes")), "process", "processes") + ", " +
       count_of(static_cast<uint64_t>(i64(tr, "threads")), "thread", "threads") + ", " +
       count_of(static_cast<uint64_t>(i64(tr, "lost_events")), "event lost", "events lost") +
       "</div>";
  h += std::string("<div class=\"verdict") + (report.value("clean", false) ? " clean" : "") +
       "\">" + esc(str(report, "verdict")) + "</div>";
  for (const json& c : report["caveats"])
    h += "<div class=\"caveat\">" + esc(str(c, "text")) + "</div>";
  if (!report["chains"].empty()) h += "<h2>Causes, most time lost first</h2>";
  for (const json& c : report["chains"]) chain_card(h, c, timelines);
  h += whole_timeline_html(whole);
  thread_split(h, report["stats"], report.contains("budgets") ? report["budgets"] : json());
  audit_section(h, audit);
  ops_table(h, report["stats"]["ops"]);
  // The data itself, for programs and for checking: the exact `explain --json` object.
  const std::string data = report.dump(2, ' ', false, json::error_handler_t::replace);
  // Inside <script> no '<' at all: a name holding "</script>" or "<!--<script>" cannot end the
  // element or change how the parser reads it. '<' only occurs inside JSON strings, where \u003c
  // is the same character.
  std::string script_data;
  script_data.reserve(data.size());
  for (char c : data) c == '<' ? script_data += "\\u003c" : script_data += c;
  h += "<details><summary>The report as JSON (<code>gpuwhy explain --json</code>)</summary>"
       "<pre>" +
       html_markup(data) +  // the JSON encoder escaped every control character already
       "</pre></details>"
       "<script type=\"application/json\" id=\"gpuwhy-explain\">" +
       script_data + "</script>";
  h += "</main></body></html>\n";
  return h;
}

}  // namespace gpuwhy::render
