// SPDX-License-Identifier: Apache-2.0
// The text report. Layout: a verdict line, one line about the trace, caveats, then each chain as
// a short block (where, culprit, evidence, fix), then a small table of the operations that took
// the most time. --per-process adds one block per process and thread.
#include <algorithm>
#include <sstream>

#include "analysis/units.hpp"
#include "core/untrusted.hpp"
#include "export/explain_render.hpp"
#include "export/gpu_time_render.hpp"
#include "export/plural.hpp"

namespace gpuwhy::render {
namespace {

using namespace analysis;  // NOLINT: the renderer speaks the analysis' vocabulary throughout
// Every string taken from the Report may hold a traced process's name (comm, file names, kernel
// names), inside a chain's sentences too: it goes out through shown(), never raw.
using untrusted::shown;

// Display width of UTF-8 text ("µs" is two bytes, one column).
size_t width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string pad(const std::string& s, size_t w, bool right) {
  const size_t n = width(s);
  if (n >= w) return s;
  return right ? std::string(w - n, ' ') + s : s + std::string(w - n, ' ');
}

// Columns sized to their content; the first column left-aligned, the others right-aligned.
std::string table(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<size_t> w;
  for (const auto& r : rows) {
    if (w.size() < r.size()) w.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], width(r[i]));
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line = indent;
    for (size_t i = 0; i < r.size(); ++i) {
      if (i > 0) line += "  ";
      line += pad(r[i], w[i], i > 0);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string ratio(double r) { return r > 0 ? fmt_ratio(r) : "-"; }

std::vector<std::vector<std::string>> op_rows(const std::vector<OpStats>& ops, size_t limit) {
  std::vector<std::vector<std::string>> rows = {
      {"operation", "calls", "total", "p50", "p90", "p99", "max", "p99/p50"}};
  for (size_t i = 0; i < ops.size() && i < limit; ++i) {
    const OpStats& o = ops[i];
    if (o.entry_only) {  // no durations were recorded
      rows.push_back(
          {shown(o.name), fmt_count(o.dur.count), "entry only", "-", "-", "-", "-", "-"});
      continue;
    }
    rows.push_back({shown(o.name), fmt_count(o.dur.count), fmt_duration(o.dur.total_ns),
                    fmt_duration(o.dur.p50), fmt_duration(o.dur.p90), fmt_duration(o.dur.p99),
                    fmt_duration(o.dur.max), ratio(o.dur.tail_ratio())});
  }
  return rows;
}

std::string span_text(int64_t from_rel, int64_t to_rel) {
  return fmt_rel(from_rel) + " .. " + fmt_rel(to_rel);
}

void chain_block(std::ostringstream& os, const Chain& c, size_t rank) {
  os << "#" << rank << " " << severity_name(c.severity) << "  " << shown(c.title) << "  lost "
     << fmt_duration(c.lost_ns) << " = " << fmt_percent(c.share()) << " of "
     << fmt_duration(c.span_ns) << "\n";
  os << "   " << shown(c.summary) << "\n";
  std::string where = c.process.label();
  if (c.thread.tid != 0 && c.thread.tid != c.process.pid) {
    where += ", thread " + c.thread.label();
  } else if (c.thread.tid != 0) {
    where += ", main thread";
  }
  if (c.first_ns >= 0 && c.last_ns >= 0) where += ", " + span_text(c.first_ns, c.last_ns);
  os << "   where    " << shown(where) << "\n";
  if (c.culprit) os << "   culprit  " << shown(c.culprit->label()) << "\n";
  os << "   evidence\n";
  for (const Evidence& e : c.evidence) os << "     - " << shown(e.text) << "\n";
  os << "   fix      " << shown(c.fix) << "\n";
}

// Where one thread's active span went, bucket by bucket: the numbers every chain draws from.
void budget_block(std::ostringstream& os, const BudgetReport& b) {
  std::string who = b.process.label();
  if (b.thread.tid != 0 && b.thread.tid != b.process.pid)
    who += ", thread " + b.thread.label();
  else
    who += ", main thread";
  const double span = static_cast<double>(std::max<int64_t>(b.span_ns, 1));
  os << "time budget  " << shown(who) << ", " << fmt_duration(b.span_ns) << " active from "
     << fmt_rel(b.first_ns) << "; ";
  if (b.idle_measured) {  // the device's records (trace --gpu-activity), the calls' estimate beside
    os << "GPU idle " << fmt_percent(b.idle_ns / span) << " (measured on the device; its calls "
       << "estimated " << fmt_percent(static_cast<double>(b.host_idle_ns) / span) << ")\n";
  } else {
    os << "no GPU work queued " << fmt_percent(b.idle_ns / span) << "\n";
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> details;  // left-aligned after the table's columns
  for (const BudgetLine& l : b.lines) {
    if (l.ns / span < 0.001) continue;
    std::string detail;
    for (const auto& [t, ns] : l.tasks) {
      if (!detail.empty()) detail += ", ";
      detail += shown(t.label()) + " " + fmt_duration(ns);
    }
    for (const auto& [name, ns] : l.syscalls) {
      if (!detail.empty()) detail += ", ";
      detail += shown(name) + " " + fmt_duration(ns);
    }
    rows.push_back(
        {std::string(bucket_label(l.bucket)), fmt_duration(l.ns), fmt_percent(l.ns / span)});
    details.push_back(detail);
  }
  std::istringstream lines(table(rows, "  "));
  std::string line;
  for (size_t i = 0; std::getline(lines, line); ++i)
    os << line << (i < details.size() && !details[i].empty() ? "  " + details[i] : "") << "\n";
}

void process_block(std::ostringstream& os, const Report& r, const ProcessStats& p) {
  const int64_t origin = r.trace.window.trace_start_ns;
  os << "process " << shown(p.comm) << " (pid " << p.pid
     << "): " << count_of(p.calls, "call", "calls") << ", "
     << span_text(p.first_ns - origin, p.last_ns - origin) << ", " << fmt_duration(p.api_ns)
     << " in GPU API calls\n";
  for (const ThreadStats& t : p.threads) {
    const double span = static_cast<double>(std::max<int64_t>(t.last_ns - t.first_ns, 1));
    os << "  thread " << shown(t.comm) << " (tid " << t.tid
       << "): " << count_of(t.calls, "call", "calls") << " over "
       << fmt_duration(t.last_ns - t.first_ns) << "; in GPU calls " << fmt_percent(t.api_ns / span)
       << ", preempted " << fmt_percent(t.off.preempted / span) << ", asleep "
       << fmt_percent(t.off.blocked / span) << ", waiting for a CPU after wake-up "
       << fmt_percent(t.off.wakeup / span) << "\n";
    os << table(op_rows(t.ops, t.ops.size()), "    ");
  }
  for (const RateSeries& s : r.stats.rates) {
    if (s.pid != p.pid) continue;
    os << "  " << shown(s.what) << " per second, " << fmt_duration(s.interval_ns)
       << " intervals from " << fmt_rel(s.start_ns - origin) << ":";
    for (size_t i = 0; i < s.counts.size(); ++i) {
      os << " "
         << (s.covered_ns[i] * 2 >= s.interval_ns
                 ? fmt_count(static_cast<uint64_t>(s.rate(i) + 0.5))
                 : std::string("~"));
    }
    os << "\n";
    if (s.drop.found) {
      os << "  rate drop: " << fmt_percent(s.drop.drop()) << " at "
         << fmt_rel(s.drop.at_ns - origin) << " (" << fmt_rate(s.drop.before_per_s) << " -> "
         << fmt_rate(s.drop.after_per_s) << ")\n";
    }
  }
}

}  // namespace

std::string explain_text(const Report& r, const TextOptions& opt) {
  std::ostringstream os;
  const TimeWindow& w = r.trace.window;
  os << "VERDICT  " << shown(r.verdict) << "\n";
  os << "trace    host " << (r.trace.host.empty() ? "?" : shown(r.trace.host)) << ", window "
     << span_text(w.start_ns - w.trace_start_ns, w.end_ns - w.trace_start_ns) << " ("
     << fmt_duration(w.duration()) << "), "
     << count_of(r.trace.calls, "GPU API call", "GPU API calls") << ", "
     << count_of(r.trace.processes, "process", "processes") << ", "
     << count_of(r.trace.threads, "thread", "threads") << "\n";
  for (const Caveat& c : r.caveats) os << "caveat   " << shown(c.text) << "\n";
  os << "\n";
  if (r.chains.empty()) {
    os << "No causal chain: no thread lost " << fmt_percent(0.01)
       << " or more of its time to a cause explain knows.\n\n";
  }
  for (size_t i = 0; i < r.chains.size(); ++i) {
    chain_block(os, r.chains[i], i + 1);
    os << "\n";
  }
  if (const std::string g = gpu_time_text(r.gpu_time); !g.empty()) os << g << "\n";
  // The budgets of the threads the chains are about (or, with none, the busiest thread).
  size_t budgets_shown = 0;
  for (const BudgetReport& b : r.budgets) {
    if (budgets_shown >= 3 || (!b.in_chain && budgets_shown > 0)) break;
    budget_block(os, b);
    os << "\n";
    ++budgets_shown;
  }
  if (!r.stats.ops.empty()) {
    // Calls made inside another traced call (a runtime call's own driver call) would list the
    // same time twice: the table has the operations whose calls are mostly outer ones, and a
    // note names the others (--json has every operation, with its nested count).
    std::vector<OpStats> outer;
    std::string inside;
    for (const OpStats& o : r.stats.ops) {
      if (o.nested * 2 < o.dur.count) {
        outer.push_back(o);
        continue;
      }
      inside += (inside.empty() ? "" : ", ") + shown(o.name) + " " + fmt_count(o.nested) +
                (o.nested < o.dur.count ? " of " + fmt_count(o.dur.count) : "");
    }
    os << "top GPU operations by total time\n";
    os << table(op_rows(outer, opt.top_ops), "  ");
    if (!inside.empty())
      os << "  not listed, made inside the runtime's calls (their time is in those): " << inside
         << "\n";
  }
  if (opt.per_process) {
    for (const ProcessStats& p : r.stats.processes) {
      os << "\n";
      process_block(os, r, p);
    }
  }
  return os.str();
}

}  // namespace gpuwhy::render
