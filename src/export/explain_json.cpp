// SPDX-License-Identifier: Apache-2.0
#include <cmath>

#include "export/explain_render.hpp"
#include "export/gpu_time_render.hpp"
#include "export/json_rounding.hpp"

namespace gpuwhy::render {
namespace {

using analysis::Chain;
using analysis::OpStats;
using analysis::Report;
using analysis::Task;
using json = nlohmann::ordered_json;

json task_json(const Task& t) {
  json j{{"pid", t.pid}, {"comm", t.comm}};
  if (t.tid != 0) j["tid"] = t.tid;
  if (!t.cgroup.empty()) j["cgroup"] = t.cgroup;
  return j;
}

json budgets_json(const std::vector<analysis::BudgetReport>& budgets) {
  json a = json::array();
  for (const analysis::BudgetReport& b : budgets) {
    json lines = json::array();
    for (const analysis::BudgetLine& l : b.lines) {
      json tasks = json::array();
      for (const auto& [t, ns] : l.tasks) {
        json tj = task_json(t);
        tj["ns"] = ns;
        tasks.push_back(std::move(tj));
      }
      json sys = json::array();
      for (const auto& [name, ns] : l.syscalls) sys.push_back({{"syscall", name}, {"ns", ns}});
      lines.push_back({{"bucket", analysis::bucket_name(l.bucket)},
                       {"label", analysis::bucket_label(l.bucket)},
                       {"ns", l.ns},
                       {"share", round4(b.span_ns > 0 ? static_cast<double>(l.ns) / b.span_ns : 0)},
                       {"gpu_idle_ns", l.idle_ns},
                       {"tasks", std::move(tasks)},
                       {"syscalls", std::move(sys)}});
    }
    a.push_back({{"process", task_json(b.process)},
                 {"thread", task_json(b.thread)},
                 {"first_rel_ns", b.first_ns},
                 {"span_ns", b.span_ns},
                 {"gpu_idle_ns", b.idle_ns},
                 {"gpu_idle_source", b.idle_measured ? "device" : "host"},
                 {"host_gpu_idle_ns", b.host_idle_ns},
                 {"exact_cpu_holders", b.exact_holders},
                 {"in_chain", b.in_chain},
                 {"buckets", std::move(lines)}});
  }
  return a;
}

json ops_json(const std::vector<OpStats>& ops) {
  json a = json::array();
  for (const OpStats& o : ops) {
    a.push_back(
        {{"name", o.name},
         {"api", o.api},
         {"category", o.cat == analysis::kUnknownCategory ? std::string("unknown")
                                                          : std::string(category_name(o.cat))},
         {"count", o.dur.count},
         {"total_ns", o.dur.total_ns},
         {"p50_ns", o.dur.p50},
         {"p90_ns", o.dur.p90},
         {"p99_ns", o.dur.p99},
         {"max_ns", o.dur.max},
         {"tail_ratio", round4(o.dur.tail_ratio())},
         {"errors", o.errors},
         {"bytes", o.bytes}});
    if (o.nested > 0) a.back()["nested"] = o.nested;  // only where both layers were probed
    // Adaptive launch timing: this many of `count` had their duration estimated.
    if (o.imputed > 0) a.back()["durations_imputed"] = o.imputed;
    if (o.entry_only) {  // recorded at entry only (trace --entry-only): no durations, no returns
      for (const char* k :
           {"total_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns", "tail_ratio", "errors"})
        a.back()[k] = nullptr;
      a.back()["entry_only"] = true;
    }
  }
  return a;
}

json chain_json(const Chain& c, size_t rank) {
  json ev = json::array();
  for (const analysis::Evidence& e : c.evidence) {
    json j{{"text", e.text}};
    if (e.at_ns >= 0) j["at_rel_ns"] = e.at_ns;
    ev.push_back(std::move(j));
  }
  json metrics = json::object();
  for (const auto& [k, v] : c.metrics) {
    // Counts and nanoseconds print as integers, fractions with four decimals.
    if (std::fabs(v) < 9e15 && v == std::floor(v)) {
      metrics[k] = static_cast<int64_t>(v);
    } else {
      metrics[k] = round4(v);
    }
  }
  json j{{"rank", rank},
         {"kind", c.kind},
         {"title", c.title},
         {"severity", std::string(analysis::severity_name(c.severity))},
         {"summary", c.summary},
         {"lost_ns", c.lost_ns},
         {"span_ns", c.span_ns},
         {"share", round4(c.share())},
         {"process", task_json(c.process)},
         {"thread", c.thread.tid ? task_json(c.thread) : json(nullptr)},
         {"culprit", c.culprit ? task_json(*c.culprit) : json(nullptr)},
         {"evidence", std::move(ev)},
         {"fix", c.fix},
         {"metrics", std::move(metrics)}};
  if (c.first_ns >= 0) j["first_rel_ns"] = c.first_ns;
  if (c.last_ns >= 0) j["last_rel_ns"] = c.last_ns;
  return j;
}

}  // namespace

json explain_json(const Report& r) {
  const analysis::TimeWindow& w = r.trace.window;
  const int64_t origin = w.trace_start_ns;
  json trace{{"host", r.trace.host},
             {"kernel", r.trace.kernel},
             {"agent_version", r.trace.agent_version},
             {"status", r.trace.status},
             {"live", r.trace.live},
             {"start_ns", w.trace_start_ns},
             {"end_ns", w.trace_end_ns},
             {"end_is_last_event", w.end_is_last_event},
             {"window",
              {{"start_rel_ns", w.start_ns - origin},
               {"end_rel_ns", w.end_ns - origin},
               {"duration_ns", w.duration()}}},
             {"calls", r.trace.calls},
             {"processes", r.trace.processes},
             {"threads", r.trace.threads},
             {"offcpu_intervals", r.trace.offcpu_intervals},
             {"syscalls", r.trace.syscalls},
             {"block_io", r.trace.block_io},
             {"reclaims", r.trace.reclaims},
             {"retransmits", r.trace.retransmits},
             {"lost_events", r.trace.lost_events}};
  // How launches were timed (issue 33): "adaptive" (a thread above the rate timed 1 launch in N,
  // the others' durations estimated: ops' durations_imputed) or "full" (every launch timed).
  const LaunchTiming& lt = r.trace.launch_timing;
  trace["launch_timing"] =
      lt.untimed_above_per_s
          ? json{{"mode", "adaptive"},
                 {"untimed_above_per_s", lt.untimed_above_per_s},
                 {"timed_one_in", lt.timed_one_in},
                 {"durations",
                  "untimed launches: the mean of their thread's timed launches of "
                  "the same API, cut at the thread's next call"}}
          : json{{"mode", "full"}};
  if (r.trace.recorder)  // trace --keep / --max-size: aged out on purpose, not lost
    trace["aged_out"] = {
        {"events", r.trace.aged_out_events},
        {"before_rel_ns",
         r.trace.kept_from_ns > 0 ? json(r.trace.kept_from_ns - origin) : json(nullptr)}};
  json caveats = json::array();
  for (const analysis::Caveat& c : r.caveats)
    caveats.push_back({{"kind", c.kind}, {"text", c.text}});
  json chains = json::array();
  for (size_t i = 0; i < r.chains.size(); ++i) chains.push_back(chain_json(r.chains[i], i + 1));

  json procs = json::array();
  for (const analysis::ProcessStats& p : r.stats.processes) {
    json threads = json::array();
    for (const analysis::ThreadStats& t : p.threads) {
      threads.push_back({{"pid", t.pid},
                         {"tid", t.tid},
                         {"comm", t.comm},
                         {"calls", t.calls},
                         {"first_rel_ns", t.first_ns - origin},
                         {"last_rel_ns", t.last_ns - origin},
                         {"api_ns", t.api_ns},
                         {"preempted_ns", t.off.preempted},
                         {"blocked_ns", t.off.blocked},
                         {"wakeup_ns", t.off.wakeup},
                         {"ops", ops_json(t.ops)}});
    }
    procs.push_back({{"pid", p.pid},
                     {"comm", p.comm},
                     {"calls", p.calls},
                     {"first_rel_ns", p.first_ns - origin},
                     {"last_rel_ns", p.last_ns - origin},
                     {"api_ns", p.api_ns},
                     {"ops", ops_json(p.ops)},
                     {"threads", std::move(threads)}});
  }
  json rates = json::array();
  for (const analysis::RateSeries& s : r.stats.rates) {
    json drop{{"found", s.drop.found}};
    if (s.drop.found) {
      drop["at_rel_ns"] = s.drop.at_ns - origin;
      drop["before_per_s"] = round4(s.drop.before_per_s);
      drop["after_per_s"] = round4(s.drop.after_per_s);
      drop["drop"] = round4(s.drop.drop());
    }
    rates.push_back({{"pid", s.pid},
                     {"comm", s.comm},
                     {"what", s.what},
                     {"start_rel_ns", s.start_ns - origin},
                     {"interval_ns", s.interval_ns},
                     {"counts", s.counts},
                     {"covered_ns", s.covered_ns},
                     {"drop", std::move(drop)}});
  }
  json phases = json::array();
  for (const auto& [pid, p] : r.phases) {
    phases.push_back({{"pid", pid},
                      {"first_rel_ns", p.first_ns - origin},
                      {"last_rel_ns", p.last_ns - origin},
                      {"steady_from_rel_ns", p.steady_from - origin},
                      {"steady_to_rel_ns", p.steady_to - origin},
                      {"start_up", p.start_up},
                      {"tail", p.tail},
                      {"steady_enqueues_per_s", round4(p.steady_rate)}});
  }
  return json{{"schema", "gpuwhy.explain/1"},
              {"verdict", r.verdict},
              {"clean", r.clean},
              {"trace", std::move(trace)},
              {"caveats", std::move(caveats)},
              {"chains", std::move(chains)},
              {"budgets", budgets_json(r.budgets)},
              {"phases", std::move(phases)},
              {"gpu_time", gpu_time_json(r.gpu_time)},
              {"stats",
               {{"calls", r.stats.calls},
                {"ops", ops_json(r.stats.ops)},
                {"processes", std::move(procs)},
                {"rates", std::move(rates)}}}};
}

}  // namespace gpuwhy::render
