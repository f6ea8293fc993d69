// SPDX-License-Identifier: Apache-2.0
// `gpuwhy explain --db a.db --db b.db ...`: joins one job's NCCL ranks across the trace files of
// its hosts (analysis/multihost.hpp), puts the files on one clock, names the rank the others wait
// for (host, rank, pid, how late) and says why from that rank's own host file: the single-host
// analysis of that file (its time budget and chains) against the other ranks' budgets from
// theirs.
#include "cli/explain_hosts.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "analysis/analysis.hpp"
#include "analysis/multihost.hpp"
#include "analysis/multihost_load.hpp"
#include "analysis/percentile.hpp"
#include "analysis/rank_budget.hpp"
#include "analysis/units.hpp"
#include "cli/commands.hpp"
#include "core/untrusted.hpp"
#include "store/store.hpp"

namespace gpuwhy::cli {
namespace {

using analysis::fmt_duration;
using analysis::fmt_percent;
using nlohmann::ordered_json;

struct Loaded {
  std::unique_ptr<store::TraceFile> file;
  analysis::HostFile host;
  analysis::Report report;  // the file's own single-host explain
};

using analysis::dispatch_budget;
using analysis::per_collective;
using analysis::per_collective_text;
using analysis::PerCollective;

double med(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

std::string process_name(const Loaded& l, uint32_t pid) {
  if (const analysis::BudgetReport* b = dispatch_budget(l.report, pid);
      b && !b->process.comm.empty())
    return b->process.comm;
  return "?";
}

// "rank 3 of 4 on host-b, sim_train (pid 4242)"
std::string rank_label(const std::vector<Loaded>& files, const analysis::RankMember& m,
                       uint32_t nranks) {
  return "rank " + std::to_string(m.rank) + " of " + std::to_string(nranks) + " on " +
         files[m.file].host.host + ", " + process_name(files[m.file], m.pid) + " (pid " +
         std::to_string(m.pid) + ")";
}

// Why the straggler is late: the group of its budget that exceeds the other ranks' most.
struct Cause {
  std::string kind;  // "host_work" | "runnable" | "asleep" | "gpu" | "" (nothing stands out)
  double excess_ns = 0;
  std::string why, fix;
};

Cause cause_of(const PerCollective& s, const PerCollective& others, const std::string& label,
               const std::string& host) {
  Cause c;
  if (!s.known || !others.known) return c;
  const std::pair<const char*, double> g[] = {{"host_work", s.host - others.host},
                                              {"runnable", s.runnable - others.runnable},
                                              {"asleep", s.asleep - others.asleep},
                                              {"gpu", s.waiting - others.waiting}};
  const auto* top = std::max_element(std::begin(g), std::end(g),
                                     [](auto& a, auto& b) { return a.second < b.second; });
  if (top->second < 100'000) return c;
  c.kind = top->first;
  c.excess_ns = top->second;
  const std::string more = fmt_duration(static_cast<int64_t>(top->second)) + " more per collective";
  if (c.kind == "host_work") {
    c.why = "it spends " + more +
            " than the other ranks on the CPU in its own code before it "
            "enters the collective";
    c.fix =
        "balance the work per rank (uneven batches, sequence lengths or data shards), or move "
        "that rank's extra host work (data loading, logging, checkpointing) on " +
        host + " off the step";
  } else if (c.kind == "runnable") {
    c.why = "its thread waits " + more + " than the other ranks do for a CPU" +
            (s.holder.empty() ? std::string() : " (held mostly by " + s.holder + ")");
    c.fix = "give " + label + " CPUs of its own" +
            (s.holder.empty() ? std::string() : ", or move " + s.holder + " off them");
  } else if (c.kind == "asleep") {
    c.why = "it is asleep or in I/O " + more + " than the other ranks" +
            (s.syscall.empty() ? std::string() : " (mostly in " + s.syscall + ")");
    c.fix = "see " + host + "'s own report (gpuwhy explain --db on its file) for what it waits on";
  } else {
    c.why = "it waits " + more + " than the other ranks on its own GPU work";
    c.fix = "check " + host + "'s GPU (a slower or throttled device, more work on that rank)";
  }
  return c;
}

struct Outcome {
  analysis::Job job;
  PerCollective straggler, others;
  Cause cause;
  std::vector<const analysis::Chain*> host_chains;  // the straggler's host's chains about it
  std::string severity = "LOW";
  int64_t span_ns = 0;  // the waiting ranks' median span: what the lost time is a share of
};

std::string severity_of(double share) {
  return share >= 0.20 ? "HIGH" : share >= 0.05 ? "MEDIUM" : "LOW";
}

Outcome conclude(const std::vector<Loaded>& files, analysis::Job job) {
  Outcome o;
  o.job = std::move(job);
  if (o.job.straggler < 0) return o;
  const analysis::RankMember& s = o.job.members[static_cast<size_t>(o.job.straggler)];
  const Loaded& home = files[s.file];
  o.straggler = per_collective(home.report, s);
  std::vector<double> host, runnable, asleep, waiting;
  std::vector<int64_t> spans;
  for (size_t r = 0; r < o.job.members.size(); ++r) {
    if (static_cast<int>(r) == o.job.straggler) continue;
    const analysis::RankMember& m = o.job.members[r];
    spans.push_back(o.job.ranks[r].span_ns);
    const PerCollective p = per_collective(files[m.file].report, m);
    if (!p.known) continue;
    host.push_back(p.host), runnable.push_back(p.runnable), asleep.push_back(p.asleep),
        waiting.push_back(p.waiting);
  }
  o.others = {med(host), med(runnable), med(asleep), med(waiting), !host.empty(), {}, {}};
  const std::string label = rank_label(files, s, o.job.nranks);
  o.cause = cause_of(o.straggler, o.others, label, home.host.host);
  for (const analysis::Chain& c : home.report.chains)
    if (c.kind != "nccl_straggler" &&
        (c.process.pid == s.pid || (c.culprit && c.culprit->pid == s.pid)))
      o.host_chains.push_back(&c);
  o.span_ns = analysis::percentile(spans, 50);
  const double share =
      o.span_ns > 0 ? static_cast<double>(o.job.imposed_ns) / static_cast<double>(o.span_ns) : 0;
  o.severity = severity_of(share);
  return o;
}

std::string ns_s(int64_t ns) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%+.6f s", static_cast<double>(ns) / 1e9);
  return buf;
}

// Text: every name from the files (hosts, processes, paths, the reports' sentences) goes out
// through shown(); the JSON keeps them as they are, escaped by the encoder.
std::string render_text(const std::vector<Loaded>& files, const Outcome& o) {
  using untrusted::shown;
  const analysis::Job& job = o.job;
  std::string out;
  const analysis::RankMember* s =
      job.straggler >= 0 ? &job.members[static_cast<size_t>(job.straggler)] : nullptr;
  const analysis::RankLateness* sl =
      job.straggler >= 0 ? &job.ranks[static_cast<size_t>(job.straggler)] : nullptr;
  if (s) {
    out += "VERDICT  " + o.severity +
           ": NCCL straggler across hosts: " + shown(rank_label(files, *s, job.nranks)) +
           " enters each collective " + fmt_duration(sl->late_mean_ns) +
           " after the other ranks (p50 " + fmt_duration(sl->late_p50_ns) + ")\n";
  } else {
    out += "VERDICT  CLEAN: no rank of the job stands out as the one the others wait for\n";
  }
  out += "job      " + std::to_string(job.members.size()) + " of " + std::to_string(job.nranks) +
         " NCCL ranks in " + std::to_string(files.size()) + " files; " +
         analysis::fmt_count(job.instances) + " collectives matched on every rank (" +
         analysis::fmt_count(job.unbalanced) + " unbalanced: the last rank 100 µs or more late)\n";
  for (size_t f = 0; f < files.size(); ++f) {
    const analysis::ClockFit& c = job.clocks[f];
    std::string ranks;
    for (const analysis::RankMember& m : job.members)
      if (m.file == f)
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(m.rank) + " (pid " +
                 std::to_string(m.pid) + ")";
    out += "host     " + shown(files[f].host.host) + " (" + shown(files[f].host.path) +
           "): ranks " + ranks + "; clock ";
    if (f == 0)
      out += "reference";
    else
      out += "offset " + ns_s(c.offset_ns) + " (fitted on " + analysis::fmt_count(c.instances) +
             (c.anchor == "sync_ends" ? " completing syncs' ends" : " collective ends") +
             (c.same_clock ? "; same boot id as the reference: one host" : "") + ")";
    if (c.residual_p90_ns > 0 || f > 0)
      out += ", residual skew p50 " + fmt_duration(c.residual_p50_ns) + ", p90 " +
             fmt_duration(c.residual_p90_ns);
    out += "\n";
  }
  for (const std::string& n : job.notes) out += "note     " + shown(n) + "\n";
  // What each file's own report warns about (lost events, an unfinished trace, families off):
  // the per-host evidence below is only as good as that file.
  for (const Loaded& l : files)
    for (const analysis::Caveat& c : l.report.caveats)
      out += "caveat   " + shown(l.host.host) + " (" + shown(l.host.path) + "): " + shown(c.text) +
             "\n";
  out += "\n";
  if (s) {
    const std::string label = shown(rank_label(files, *s, job.nranks));
    const std::string host = shown(files[s->file].host.host);
    const double share = o.span_ns > 0 ? static_cast<double>(job.imposed_ns) / o.span_ns : 0;
    out += "#1 " + o.severity + "  NCCL straggler across hosts  lost " +
           fmt_duration(job.imposed_ns) + " = " + fmt_percent(share) + " of " +
           fmt_duration(o.span_ns) + "\n";
    out += "   " + label + " arrives last in " + analysis::fmt_count(sl->last) + " of " +
           analysis::fmt_count(job.unbalanced) +
           " unbalanced collectives; the other ranks wait "
           "for it\n";
    out += "   evidence\n";
    out += "     - it enters each collective a mean " + fmt_duration(sl->late_mean_ns) + " (p50 " +
           fmt_duration(sl->late_p50_ns) +
           ") after the other ranks' median entry, on one clock "
           "(each host's aligned on the collectives)\n";
    out += "     - the other ranks waited for it " + fmt_duration(job.imposed_ns) +
           " in all (mean per rank and collective)\n";
    if (o.straggler.known)
      out += "     - per collective, from " + host +
             "'s trace: " + per_collective_text(o.straggler) + "\n";
    if (o.others.known)
      out += "     - the other ranks (median, each from its own host's trace): " +
             per_collective_text(o.others) + "\n";
    for (const analysis::Chain* c : o.host_chains)
      out += "     - " + host + "'s own report: " + std::string(severity_name(c->severity)) + " " +
             shown(c->title) + ": " + shown(c->summary) + "\n";
    if (!o.cause.why.empty()) out += "   why      " + shown(o.cause.why) + "\n";
    out += "   fix      " +
           (o.cause.fix.empty() ? "find why " + label + " is slow (gpuwhy explain --db on " +
                                      shown(files[s->file].host.path) + ")"
                                : shown(o.cause.fix)) +
           "\n\n";
  }
  out += "per rank (one clock)\n";
  char line[1024];  // a host name of 64 bytes, all escaped, still fits with its newline
  std::snprintf(line, sizeof line, "  %5s  %-16s %8s  %-16s %6s %11s %11s %11s\n", "rank", "host",
                "pid", "process", "last", "late mean", "late p50", "waited");
  out += line;
  for (size_t r = 0; r < job.members.size(); ++r) {
    const analysis::RankMember& m = job.members[r];
    const analysis::RankLateness& rl = job.ranks[r];
    std::snprintf(line, sizeof line, "  %5u  %-16s %8u  %-16s %6llu %11s %11s %11s\n", m.rank,
                  shown(files[m.file].host.host).c_str(), m.pid,
                  shown(process_name(files[m.file], m.pid)).c_str(),
                  static_cast<unsigned long long>(rl.last), fmt_duration(rl.late_mean_ns).c_str(),
                  fmt_duration(rl.late_p50_ns).c_str(), fmt_duration(rl.waited_ns).c_str());
    out += line;
  }
  return out;
}

ordered_json per_collective_json(const PerCollective& p) {
  if (!p.known) return nullptr;
  return {{"host_work_ns", p.host},
          {"runnable_ns", p.runnable},
          {"asleep_ns", p.asleep},
          {"gpu_wait_ns", p.waiting}};
}

ordered_json render_json(const std::vector<Loaded>& files, const Outcome& o) {
  const analysis::Job& job = o.job;
  ordered_json j;
  j["nranks"] = job.nranks;
  j["instances"] = job.instances;
  j["unbalanced"] = job.unbalanced;
  j["hosts"] = ordered_json::array();
  for (size_t f = 0; f < files.size(); ++f) {
    const analysis::ClockFit& c = job.clocks[f];
    j["hosts"].push_back({{"file", files[f].host.path},
                          {"host", files[f].host.host},
                          {"reference", f == 0},
                          {"offset_ns", c.offset_ns},
                          {"residual_p50_ns", c.residual_p50_ns},
                          {"residual_p90_ns", c.residual_p90_ns},
                          {"max_residual_ns", c.max_residual_ns},
                          {"same_clock", c.same_clock},
                          {"anchor", c.anchor},
                          {"instances", c.instances}});
  }
  j["ranks"] = ordered_json::array();
  for (size_t r = 0; r < job.members.size(); ++r) {
    const analysis::RankMember& m = job.members[r];
    const analysis::RankLateness& rl = job.ranks[r];
    j["ranks"].push_back({{"rank", m.rank},
                          {"host", files[m.file].host.host},
                          {"file", files[m.file].host.path},
                          {"pid", m.pid},
                          {"comm", process_name(files[m.file], m.pid)},
                          {"collectives", m.collectives.size()},
                          {"last", rl.last},
                          {"late_mean_ns", rl.late_mean_ns},
                          {"late_p50_ns", rl.late_p50_ns},
                          {"waited_ns", rl.waited_ns}});
  }
  if (job.straggler < 0) {
    j["straggler"] = nullptr;
  } else {
    const auto i = static_cast<size_t>(job.straggler);
    const analysis::RankMember& s = job.members[i];
    ordered_json chains = ordered_json::array();
    for (const analysis::Chain* c : o.host_chains)
      chains.push_back(
          {{"kind", c->kind}, {"severity", severity_name(c->severity)}, {"summary", c->summary}});
    j["straggler"] = {
        {"severity", o.severity},
        {"rank", s.rank},
        {"host", files[s.file].host.host},
        {"file", files[s.file].host.path},
        {"pid", s.pid},
        {"comm", process_name(files[s.file], s.pid)},
        {"last", job.ranks[i].last},
        {"late_mean_ns", job.ranks[i].late_mean_ns},
        {"late_p50_ns", job.ranks[i].late_p50_ns},
        {"imposed_wait_ns", job.imposed_ns},
        {"span_ns", o.span_ns},
        {"cause", o.cause.kind.empty() ? ordered_json(nullptr) : ordered_json(o.cause.kind)},
        {"cause_excess_per_collective_ns", o.cause.excess_ns},
        {"why", o.cause.why},
        {"fix", o.cause.fix},
        {"per_collective", per_collective_json(o.straggler)},
        {"others_per_collective", per_collective_json(o.others)},
        {"host_chains", chains}};
  }
  j["notes"] = job.notes;
  j["caveats"] = ordered_json::array();
  for (const Loaded& l : files)
    for (const analysis::Caveat& c : l.report.caveats)
      j["caveats"].push_back(
          {{"host", l.host.host}, {"file", l.host.path}, {"kind", c.kind}, {"text", c.text}});
  return j;
}

}  // namespace

int run_explain_hosts(const std::vector<std::string>& dbs, bool json) {
  std::vector<Loaded> files(dbs.size());
  for (size_t i = 0; i < dbs.size(); ++i) {
    auto f = store::TraceFile::open(dbs[i]);
    if (!f) return fail(f.error().line(), f.error().exit_code);
    files[i].file = std::move(f.value());
    auto h = analysis::load_host_file(*files[i].file, i);
    if (!h) return fail(h.error().line(), h.error().exit_code);
    files[i].host = std::move(h.value());
  }
  std::vector<analysis::HostFile> hosts;
  hosts.reserve(files.size());
  for (const Loaded& l : files) hosts.push_back(l.host);
  auto job = analysis::join_hosts(hosts);
  if (!job) return fail(job.error().line(), job.error().exit_code);
  // Each file's own analysis: the budgets and chains the "why" is read from.
  for (Loaded& l : files) {
    auto rows = analysis::load_trace(*l.file, {});
    if (!rows) return fail(l.host.path + ": " + rows.error().line(), rows.error().exit_code);
    l.report = analysis::analyze(std::move(rows.value()));
  }
  const Outcome o = conclude(files, std::move(job.value()));
  const std::string out =
      json
          ? render_json(files, o).dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n"
          : render_text(files, o);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace gpuwhy::cli
