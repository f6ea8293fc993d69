// SPDX-License-Identifier: Apache-2.0
#include "analysis/explain.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>

#include "analysis/parallel.hpp"
#include "analysis/units.hpp"
#include "core/phase_timer.hpp"
#include "store/store.hpp"

namespace gpuwhy::analysis {
namespace {

TraceInfo trace_info(const TraceRows& rows, const Joins& joins) {
  TraceInfo t;
  t.host = rows.session.host;
  t.kernel = rows.session.kernel;
  t.agent_version = rows.session.agent_version;
  t.status = rows.session.status;
  t.live = rows.live;
  t.window = rows.window;
  t.calls = rows.calls.size();
  std::set<uint32_t> pids;
  for (const ThreadSummary& th : joins.threads) pids.insert(th.pid);
  t.processes = pids.size();
  t.threads = joins.threads.size();
  t.offcpu_intervals = rows.offcpu.size();
  t.syscalls = rows.syscalls.size();
  t.block_io = rows.block_io.size();
  t.reclaims = rows.reclaim.size();
  t.retransmits = rows.tcp.size();
  for (const LossRow& l : rows.losses) t.lost_events += l.count;
  t.recorder = rows.aged_out.recorder;
  t.kept_from_ns = rows.aged_out.window_start_ns;
  t.aged_out_events = rows.aged_out.events;
  t.launch_timing = rows.launch_timing();
  return t;
}

std::string verdict_for(const Report& r) {
  if (!r.chains.empty() && r.chains.front().severity != Severity::Low) {
    const Chain& c = r.chains.front();
    return std::string(severity_name(c.severity)) + ": " + c.title + ": " + c.summary;
  }
  const std::string seen = " in " + fmt_duration(r.trace.window.duration()) + " of trace (" +
                           fmt_count(r.trace.calls) + " GPU API calls, " +
                           fmt_count(r.trace.processes) +
                           (r.trace.processes == 1 ? " process)" : " processes)");
  if (r.chains.empty()) return "CLEAN: no cause of GPU slowdown found" + seen;
  return "CLEAN: nothing costs more than " + fmt_percent(0.05) + " of wall time" + seen +
         "; minor findings below";
}

// `top`: how many tasks and syscalls a line names (all, for a window of a longer analysis).
std::vector<BudgetReport> budget_reports(const Context& ctx, const std::vector<Chain>& chains,
                                         size_t top) {
  std::set<uint32_t> named;
  for (const Chain& c : chains) named.insert(c.thread.tid);
  std::vector<BudgetReport> out;
  for (size_t k = 0; k < ctx.budgets.size(); ++k) {
    const ThreadBudget& b = ctx.budgets[k];
    const ThreadSummary& t = ctx.joins.threads[k];
    BudgetReport r;
    r.process = ctx.process(b.pid);
    r.thread = ctx.thread(b.pid, b.tid);
    r.first_ns = ctx.rel(b.first_ns);
    r.span_ns = b.span_ns();
    r.idle_ns = b.idle_total();
    r.idle_measured = b.idle_measured;
    r.host_idle_ns = b.host_idle_ns;
    r.exact_holders = b.exact_holders;
    r.in_chain = named.count(b.tid) > 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      if (b.ns[i] <= 0) continue;
      BudgetLine line;
      line.bucket = static_cast<Bucket>(i);
      line.ns = b.ns[i];
      line.idle_ns = b.idle_ns[i];
      for (size_t j = 0; j < b.by_task[i].size() && j < top; ++j) {
        const Culprit& c = b.by_task[i][j];
        // Holders of another process by process; wakers and own threads by thread.
        const bool as_thread = c.pid == t.pid || line.bucket != Bucket::Runnable;
        line.tasks.emplace_back(ctx.other(c.pid, c.tid, c.comm, as_thread), c.ns);
      }
      for (size_t j = 0; j < b.by_syscall[i].size() && j < top; ++j)
        line.syscalls.emplace_back(ctx.rows.syscall_name(b.by_syscall[i][j].first),
                                   b.by_syscall[i][j].second);
      r.lines.push_back(std::move(line));
    }
    std::stable_sort(r.lines.begin(), r.lines.end(),
                     [](const BudgetLine& a, const BudgetLine& c) { return a.ns > c.ns; });
    out.push_back(std::move(r));
  }
  sort_budgets(out);
  return out;
}

}  // namespace

void sort_budgets(std::vector<BudgetReport>& budgets) {
  std::sort(budgets.begin(), budgets.end(), [](const BudgetReport& a, const BudgetReport& c) {
    if (a.in_chain != c.in_chain) return a.in_chain;
    if (a.span_ns != c.span_ns) return a.span_ns > c.span_ns;
    return a.thread.tid < c.thread.tid;
  });
}

void set_verdict(Report& r) {
  r.clean = std::none_of(r.chains.begin(), r.chains.end(),
                         [](const Chain& c) { return c.severity != Severity::Low; });
  r.verdict = verdict_for(r);
}

void add_host_bound_hint(Report& r) {
  if (!r.clean) return;
  for (const ProcessStats& p : r.stats.processes) {
    for (const ThreadStats& t : p.threads) {
      const int64_t span = t.last_ns - t.first_ns;
      if (span <= 0) continue;
      int64_t launch_ns = 0, wait_ns = 0;
      uint64_t launches = 0;
      for (const OpStats& o : t.ops) {
        if (o.entry_only || o.nested * 2 >= o.dur.count) continue;
        if (o.cat == Category::Launch || o.cat == Category::Graph) {
          launch_ns += o.dur.total_ns;
          launches += o.dur.count;
        } else if (o.cat == Category::Sync || o.cat == Category::Copy ||
                   o.cat == Category::Collective) {
          wait_ns += o.dur.total_ns;
        }
      }
      const auto spanf = static_cast<double>(span);
      if (launches < 1000 || launch_ns < 0.3 * spanf || wait_ns > 0.05 * spanf) continue;
      r.caveats.push_back(
          {"host_bound",
           t.comm + " (tid " + std::to_string(t.tid) + ") of pid " + std::to_string(t.pid) +
               " never waited for the GPU: " + fmt_percent(static_cast<double>(launch_ns) / spanf) +
               " of its time in " + fmt_count(launches) +
               " kernel launches, the rest its own work; when kernels are shorter than their "
               "launches the GPU waits for the host, which no chain can measure without GPU-side "
               "times: gpuwhy audit estimates how busy the GPU was (CUDA graphs, torch.compile and "
               "fewer, larger kernels cut launches)"});
      return;  // one line is enough
    }
  }
}

Severity grade(double share, const Thresholds& th) {
  if (share >= th.high_share) return Severity::High;
  if (share >= th.medium_share) return Severity::Medium;
  return Severity::Low;
}

std::vector<Chain> run_detectors(const Context& ctx) {
  // Detectors only read the context: they run side by side, and their chains are put together
  // in registry order, as if they had run one after another.
  const std::span<const Detector> list = detectors();
  std::vector<std::vector<Chain>> found(list.size());
  parallel_for(list.size(), [&](size_t i) { list[i].run(ctx, found[i]); });
  std::vector<Chain> chains;
  for (std::vector<Chain>& v : found) std::move(v.begin(), v.end(), std::back_inserter(chains));
  return chains;
}

// A launch-rate drop is a symptom seen from the rate's side. When another chain on the same
// victim names the same culprit, that chain says what happened (the lock, the contention) and
// comes first whatever their estimates: the drop follows it. Left to lost time, two estimates
// of one cause within a few percent of each other would pick the headline by noise.
void causes_before_their_drops(std::vector<Chain>& kept) {
  auto same = [](const Task& a, const Task& b) { return a.pid == b.pid && a.tid == b.tid; };
  for (size_t i = 0; i < kept.size();) {
    const Chain& drop = kept[i];
    size_t cause = kept.size();
    if (drop.kind == "rate_drop" && drop.culprit) {
      for (size_t j = i + 1; j < kept.size() && cause == kept.size(); ++j) {
        const Chain& c = kept[j];
        if (c.kind != "rate_drop" && c.culprit && same(c.process, drop.process) &&
            same(c.thread, drop.thread) && same(*c.culprit, *drop.culprit))
          cause = j;
      }
    }
    if (cause == kept.size()) {
      ++i;
      continue;
    }
    std::rotate(kept.begin() + static_cast<std::ptrdiff_t>(i),
                kept.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                kept.begin() + static_cast<std::ptrdiff_t>(cause) + 1);
  }
}

// A launch-rate drop is a symptom: its time is some cause's time, seen from the rate's side, and
// its estimate (the rate's fall over the rest of the span) is not drawn from the thread's budget.
// It keeps what the thread's other chains left of its span, so one thread's chains never add up
// to more than its span, even when the drop's cause has a chain of its own (a straggler's wait
// that starts at the drop, a contention chain naming the same culprit).
namespace {
void drops_take_what_is_left(std::vector<Chain>& chains) {
  std::map<std::pair<uint32_t, uint32_t>, double> claimed;  // share of the thread's span
  for (const Chain& c : chains)
    if (c.kind != "rate_drop") claimed[{c.process.pid, c.thread.tid}] += c.share();
  for (Chain& c : chains) {
    if (c.kind != "rate_drop") continue;
    const double left = std::max(0.0, 1.0 - claimed[{c.process.pid, c.thread.tid}]);
    const auto cap = static_cast<int64_t>(left * static_cast<double>(c.span_ns));
    if (c.lost_ns <= cap) continue;
    c.evidence.push_back({"its other chains account for " + fmt_percent(1.0 - left) +
                          " of the thread's time: the drop is counted for the " +
                          fmt_duration(cap) + " they leave, not the " + fmt_duration(c.lost_ns) +
                          " the rate's fall alone would give"});
    c.lost_ns = cap;
  }
}
}  // namespace

// Severity weighs the share of the victim's span and the time lost in the whole window: 1.3 ms
// lost in a thread that was active for 2 ms is 65% of its span but nothing worth a HIGH.
Severity grade_chain(const Chain& c, const Thresholds& th, int64_t window_ns) {
  Severity s = grade(c.share(), th);
  // No window given (0): only the absolute minimums apply.
  const double of_window = window_ns > 0 ? static_cast<double>(c.lost_ns) / window_ns : 1.0;
  if (s == Severity::High && (c.lost_ns < th.high_min_lost_ns || of_window < th.medium_share))
    s = Severity::Medium;
  if (s == Severity::Medium && (c.lost_ns < th.medium_min_lost_ns || of_window < th.low_share))
    s = Severity::Low;
  return std::min(s, c.cap);
}

std::vector<Chain> rank_chains(std::vector<Chain> chains, const Thresholds& th, int64_t window_ns) {
  std::vector<Chain> kept;
  for (Chain& c : chains) {
    if (c.lost_ns < th.min_lost_ns || c.share() < th.low_share) continue;
    c.severity = grade_chain(c, th, window_ns);
    kept.push_back(std::move(c));
  }
  // The steady state's causes first, the start-up and the tail after them (they are summarised,
  // not the story); then most time lost first; ties by kind then victim, so the order never
  // depends on hash order.
  std::stable_sort(kept.begin(), kept.end(), [](const Chain& a, const Chain& b) {
    const bool sa = is_phase(a), sb = is_phase(b);
    if (sa != sb) return sb;
    if (a.lost_ns != b.lost_ns) return a.lost_ns > b.lost_ns;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.process.pid < b.process.pid;
  });
  causes_before_their_drops(kept);
  return kept;
}

// What a kernel probe family records, for a caveat when it was not on.
std::string family_evidence(std::string_view family) {
  if (family == "syscalls") return "slow syscalls";
  if (family == "block_io") return "block I/O";
  if (family == "tcp") return "TCP retransmissions";
  if (family == "reclaim") return "direct-reclaim stalls";
  if (family == "cpu_samples") return "CPU samples";
  return std::string(family) + " events";
}

std::vector<Caveat> caveats_for(const TraceRows& rows) {
  return caveats_for(rows, !rows.offcpu.empty());
}

std::vector<Caveat> caveats_for(const TraceRows& rows, bool has_offcpu) {
  std::vector<Caveat> out;
  uint64_t lost = 0, late = 0;
  std::string parts, late_parts;
  uint64_t py_gaps = 0;
  std::string py_parts;
  for (const LossRow& l : rows.losses) {
    if (l.source == "python") {  // gaps in the Python lines, not lost events
      py_gaps += l.count;
      if (l.count) py_parts += (py_parts.empty() ? "" : ", ") + l.cause + " " + fmt_count(l.count);
      continue;
    }
    // Source "discovery" counts processes whose runtime was probed after they mapped it.
    const bool processes = l.source == "discovery";
    (processes ? late : lost) += l.count;
    if (l.count == 0 && processes) continue;
    std::string& p = processes ? late_parts : parts;
    if (!p.empty()) p += ", ";
    p += processes ? l.cause + " " + fmt_count(l.count)
                   : l.source + "/" + l.cause + " " + fmt_count(l.count);
  }
  if (lost > 0) {
    out.push_back({"lost_events", fmt_count(lost) + " events were lost while tracing (" + parts +
                                      "): counts and times are lower bounds"});
  }
  if (late > 0) {
    out.push_back({"startup_gaps", fmt_count(late) +
                                       " processes may have made GPU calls before "
                                       "their runtime was probed (" +
                                       late_parts +
                                       "; table startup_gaps names them): their first calls "
                                       "may be missing"});
  }
  if (py_gaps > 0)
    out.push_back({"python_gaps", fmt_count(py_gaps) +
                                      " Python stacks or frames could not be named (" + py_parts +
                                      "; the process ended or a code object was freed before "
                                      "it was read, or its memory could not be read): those "
                                      "calls have no Python line"});
  for (const PyProcessGap& g : rows.python_unsupported)
    out.push_back({"python_unsupported", "process " + std::to_string(g.pid) + " runs Python " +
                                             (g.version.empty() ? "?" : g.version) + " (" +
                                             g.interpreter + "): " + g.detail +
                                             "; its calls have no Python lines"});
  for (const PyLayoutGap& g : rows.python_before_layout)
    out.push_back({"python_before_layout",
                   "process " + std::to_string(g.pid) + ": " + fmt_count(g.calls) +
                       " GPU calls made before its Python layout was known (until " +
                       fmt_rel(rows.rel(g.layout_ns)) + ", its discovery) have no Python line"});
  const TimeWindow& w = rows.window;
  if (rows.live) {
    out.push_back({"live", "the trace is still being recorded; this report covers it up to " +
                               fmt_rel(w.trace_end_ns - w.trace_start_ns)});
  } else if (rows.session.status == "stopped") {
    // The writer stored why in losses (store/<cause>).
    std::string why = "recording stopped early";
    for (const LossRow& l : rows.losses) {
      if (l.source != "store") continue;
      if (l.cause == "disk_full") why = "recording stopped early because the disk was full";
      if (l.cause == "io_error") why = "recording stopped early on a write error";
      if (l.cause == "file_replaced")
        why = "recording stopped early because the file was removed or replaced";
      if (l.cause == "interrupted") why = "recording was interrupted twice";
    }
    out.push_back({"incomplete", "the trace is incomplete (status 'stopped': " + why +
                                     "); it ends at its last event, " +
                                     fmt_rel(w.trace_end_ns - w.trace_start_ns)});
  } else if (rows.session.status != "complete") {
    out.push_back({"incomplete", "the trace is incomplete (status '" + rows.session.status +
                                     "': the agent was killed; the rows it still held in open "
                                     "chunks, up to about a second per thread, are missing); it "
                                     "ends at its last event, " +
                                     fmt_rel(w.trace_end_ns - w.trace_start_ns)});
  }
  if (!rows.wal_warning.empty()) out.push_back({"damaged_wal", rows.wal_warning});
  if (!rows.damaged.empty()) {
    std::string parts;
    for (size_t i = 0; i < rows.damaged.size() && i < 5; ++i) {
      const DamagedChunk& d = rows.damaged[i];
      parts += (i ? "; " : "") + std::string(d.table) + " of thread " + std::to_string(d.tid) +
               " from " + fmt_rel(d.ts_min - w.trace_start_ns) + " to " +
               fmt_rel(d.end_max - w.trace_start_ns);
    }
    if (rows.damaged.size() > 5)
      parts += "; and " + std::to_string(rows.damaged.size() - 5) + " more";
    out.push_back(
        {"damaged", std::to_string(rows.damaged.size()) +
                        (rows.damaged.size() == 1 ? " stored chunk is" : " stored chunks are") +
                        " damaged (checksum mismatch or bad encoding) and were skipped: " + parts +
                        "; the events there are missing from this report"});
  }
  if (rows.unchecked_chunks || rows.unchecked_index) {
    std::string what = rows.unchecked_chunks ? "event chunks written before chunk checksums "
                                               "(chunk format 1 or 2)"
                                             : "";
    if (rows.unchecked_index)
      what += std::string(what.empty() ? "" : ", and ") +
              "a chunk index written before its checksums (no index_crc)";
    out.push_back({"unverified", "this file cannot be verified: it holds " + what +
                                     "; damage there would read as other events, not be reported"});
  }
  if (!has_offcpu) {
    out.push_back({"no_sched",
                   "no scheduler data for the GPU threads: preemption, lock waits "
                   "and sleeps cannot be seen"});
  }
  for (const TraceRows::FamilyOff& f : rows.families_off) {
    if (f.family == "rtld_hook") continue;  // what it cost is counted: the startup_gaps caveat
    // Off where the host has no NVIDIA driver (nothing to time) or when left out: the driver
    // boundary is extra evidence for audit, and nothing explain concludes rests on it.
    if (f.family == "driver_ioctls" && f.state == "off") continue;
    if (f.family == "python_stacks") {
      out.push_back({"python_off", "Python stacks were not recorded (" + f.detail +
                                       "): calls name no Python line"});
      continue;
    }
    if (f.family == kLaunchTimingFamily) {  // adaptive launch timing (trace --untimed-above)
      const LaunchTiming t = rows.launch_timing();
      if (t.untimed_above_per_s == 0 || rows.entry_only(Category::Launch)) continue;
      out.push_back({"launches_sampled",
                     "a thread making more than " + fmt_count(t.untimed_above_per_s) +
                         " launches a second timed 1 launch in " + fmt_count(t.timed_one_in) +
                         " and recorded the others at entry only: every launch is counted and "
                         "placed, the untimed ones' durations are the mean of their thread's "
                         "timed launches of the same API (--json: durations_imputed per "
                         "operation; trace --full times every launch)"});
      continue;
    }
    if (f.family.starts_with(store::kEntryOnlyFamilyPrefix)) {  // trace --entry-only CATEGORY
      const std::string category = f.family.substr(store::kEntryOnlyFamilyPrefix.size());
      out.push_back({"entry_only", category + " calls were recorded at entry only (trace " +
                                       "--entry-only " + category + "): they have no duration " +
                                       "or return code, and time inside them counts as time " +
                                       "between calls"});
      continue;
    }
    if (f.family == "syscalls" && rows.syscalls_from_scheduler()) {
      const bool sampled = !rows.family_off("cpu_samples");
      out.push_back({"syscalls_from_scheduler",
                     std::string("syscalls are seen where a thread slept in them (the scheduler "
                                 "names the syscall)") +
                         (sampled ? " and, sampled, where they ran on the CPU"
                                  : "; time a syscall spent on the CPU is not (no CPU samples)") +
                         "; their counts are stretches of time, not calls (trace --with syscalls "
                         "records every slow syscall, at a cost to every syscall on the host)"});
      continue;
    }
    out.push_back(
        {"family_" + f.state,
         "no " + family_evidence(f.family) + " in this trace: the " + f.family + " probes were " +
             (f.state != "off"   ? "not attached (" + f.detail + ")"
              : f.detail.empty() ? std::string("left out")
                                 : f.detail) +
             (f.family == "syscalls" ? "; lock waits and I/O are named by their wakers only" : "") +
             "; their absence is not evidence"});
  }
  if (rows.aged_out.recorder && rows.aged_out.window_start_ns > 0) {
    // Aged-out events were dropped on purpose (trace --keep / --max-size), not lost.
    const TraceRows::AgedOut& a = rows.aged_out;
    std::string limits;
    if (a.keep_ns > 0) limits += "--keep " + fmt_duration(a.keep_ns);
    if (a.max_bytes > 0)
      limits += (limits.empty() ? "" : " ") + std::string("--max-size ") +
                store::format_size(a.max_bytes);
    out.push_back({"aged_out",
                   "flight recorder (" + limits + "): " + fmt_count(a.events) +
                       " events aged out before " + fmt_rel(a.window_start_ns - w.trace_start_ns) +
                       "; the file covers " + fmt_rel(a.window_start_ns - w.trace_start_ns) +
                       " .. " + fmt_rel(w.trace_end_ns - w.trace_start_ns)});
  }
  if (!rows.session.pid_filter.empty()) {
    out.push_back({"pid_filter", "the trace was limited to pids " + rows.session.pid_filter +
                                     ": other processes' GPU work is not in it"});
  }
  return out;
}

// `part`: one window of a longer analysis (analyze_window_part).
Report analyze_rows(TraceRows& rows, const Thresholds& th, bool part) {
  PhaseTimer timer("analyze");
  prepare_rows(rows);
  timer.lap("prepare");
  const Joins joins = compute_joins(rows, th.small_copy_bytes);
  timer.lap("joins");
  Report r;
  r.stats = compute_stats(rows, joins, th.rate_drop);
  timer.lap("stats");
  // Phases need a process's whole span: a window of a longer analysis has only part of it.
  const PhaseMap phases = part ? PhaseMap{} : process_phases(rows, joins);
  const std::vector<ThreadBudget> budgets =
      compute_budgets(rows, joins, th.small_copy_bytes, phases);
  timer.lap("budgets");
  const Context ctx{rows, joins, r.stats, th, budgets, part};
  r.trace = trace_info(rows, joins);
  r.phases.insert(phases.begin(), phases.end());
  r.caveats = caveats_for(rows);
  r.gpu_time = gpu_time_report(ctx);
  std::vector<Chain> found = run_detectors(ctx);
  // GPU-idle time is what is left of the budgets once every other chain has drawn its share.
  detect_gpu_idle(ctx, found);
  drops_take_what_is_left(found);
  if (part) {
    r.chains = std::move(found);
    r.budgets = budget_reports(ctx, r.chains, SIZE_MAX);
    return r;
  }
  r.chains = rank_chains(std::move(found), th, rows.window.duration());
  r.budgets = budget_reports(ctx, r.chains, 3);
  timer.lap("detectors");
  set_verdict(r);
  add_host_bound_hint(r);
  return r;
}

Report analyze(TraceRows rows, const Thresholds& th) { return analyze_rows(rows, th, false); }

Report analyze_window_part(TraceRows rows, const Thresholds& th) {
  return analyze_rows(rows, th, true);
}

}  // namespace gpuwhy::analysis
