// SPDX-License-Identifier: Apache-2.0
// The cross-host join: which communicator is the job's, which process is which rank, how the
// files' clocks line up, and who arrives last. See multihost.hpp.
#include "analysis/multihost.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "analysis/percentile.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

Error refuse(std::string what, std::string hint) {
  return Error{std::move(what), std::move(hint), 2};
}

std::string where(const HostFile& f) { return f.path + " (host " + f.host + ")"; }

int64_t median(std::vector<int64_t> v) { return v.empty() ? 0 : percentile(v, 50); }

// The communicator size the job is about: the one every file has a rank of (most collectives
// when several qualify: a data-parallel communicator carries more than a pipeline's).
Result<uint32_t> job_size(const std::vector<HostFile>& files) {
  std::map<uint32_t, std::pair<size_t, uint64_t>> sizes;  // nranks -> (files, collectives)
  for (const HostFile& f : files) {
    std::set<uint32_t> seen;
    for (const RankMember& m : f.members) {
      if (seen.insert(m.nranks).second) ++sizes[m.nranks].first;
      sizes[m.nranks].second += m.collectives.size();
    }
  }
  uint32_t best = 0;
  std::pair<size_t, uint64_t> score{0, 0};
  for (const auto& [n, s] : sizes)
    if (s > score) best = n, score = s;
  if (score.first == files.size()) return best;
  // Name a file that has no rank of that size, and what it has instead.
  for (const HostFile& f : files) {
    bool has = false;
    std::set<uint32_t> own;
    for (const RankMember& m : f.members) has |= m.nranks == best, own.insert(m.nranks);
    if (has) continue;
    std::string list;
    for (uint32_t n : own) list += (list.empty() ? "" : ", ") + std::to_string(n);
    return refuse(where(f) +
                      " shares no NCCL communicator with the other files: its "
                      "communicators have " +
                      list + " ranks, theirs " + std::to_string(best),
                  "these traces are not one job; pass the files of one job's hosts");
  }
  return best;
}

}  // namespace

Result<Job> join_hosts(const std::vector<HostFile>& files, uint32_t min_collectives,
                       double majority) {
  for (const HostFile& f : files) {
    if (f.members.empty())
      return refuse(where(f) + " records no NCCL communicator set-up (ncclCommInitRank)",
                    "trace every host from before the job starts, so that each rank's set-up is "
                    "in its file");
  }
  for (size_t i = 0; i < files.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (!files[i].path.empty() && files[i].path == files[j].path)
        return refuse(files[i].path + " is given twice", "pass each host's trace once");
  auto size = job_size(files);
  if (!size) return size.error();
  Job job;
  job.nranks = *size;

  // The job's ranks: per process its busiest communicator of that size.
  std::map<std::pair<size_t, uint32_t>, const RankMember*> per_process;
  size_t other_comms = 0;
  for (const HostFile& f : files) {
    for (const RankMember& m : f.members) {
      if (m.nranks != job.nranks) {
        ++other_comms;
        continue;
      }
      const RankMember*& slot = per_process[{m.file, m.pid}];
      if (slot == nullptr || m.collectives.size() > slot->collectives.size()) slot = &m;
    }
  }
  std::map<uint32_t, const RankMember*> by_rank;
  for (const auto& [key, m] : per_process) {
    auto [it, fresh] = by_rank.emplace(m->rank, m);
    if (fresh) continue;
    const RankMember& a = *it->second;
    return refuse("rank " + std::to_string(m->rank) + " of " + std::to_string(job.nranks) +
                      " is both pid " + std::to_string(a.pid) + " in " + where(files[a.file]) +
                      " and pid " + std::to_string(m->pid) + " in " + where(files[m->file]),
                  "these traces are not one job (or one host's trace was given twice)");
  }
  for (const auto& [rank, m] : by_rank) job.members.push_back(*m);
  if (job.members.size() < 2)
    return refuse("only one NCCL rank is in these files", "pass the traces of at least two ranks");
  if (job.members.size() < job.nranks)
    job.notes.push_back("ranks seen: " + std::to_string(job.members.size()) + " of " +
                        std::to_string(job.nranks) + " (the other ranks' traces were not given)");
  if (other_comms > 0)
    job.notes.push_back(std::to_string(other_comms) +
                        " communicator set-up(s) of another size were left out");

  // Instances: the k-th collective of every rank, as long as they agree on which collective.
  size_t n = SIZE_MAX;
  for (const RankMember& m : job.members) n = std::min(n, m.collectives.size());
  for (size_t k = 0; k < n; ++k) {
    const uint16_t api = job.members[0].collectives[k].api;
    bool same = true;
    for (const RankMember& m : job.members) same = same && m.collectives[k].api == api;
    if (!same) {
      n = k;
      break;
    }
  }
  if (n < kMinInstances)
    return refuse("only " + std::to_string(n) +
                      " NCCL collectives line up across the ranks of these files (the ranks' "
                      "k-th collectives must be the same call)",
                  "these traces are not one job's, or they cover different parts of it; trace "
                  "every host over the same run");
  job.instances = n;

  // The refusal bound: 2 ms, or a quarter of the reference rank's median step between instances.
  int64_t max_residual = kMaxResidualNs;
  {
    std::vector<int64_t> steps;
    const RankMember& r0 = job.members[0];
    for (size_t k = 1; k < n; ++k)
      steps.push_back(r0.collectives[k].end - r0.collectives[k - 1].end);
    max_residual = std::max<int64_t>(
        max_residual,
        static_cast<int64_t>(kMaxResidualOfPeriod * static_cast<double>(median(steps))));
  }

  // Clocks: each file against the first, on the moment every rank of an instance shares. For
  // blocking collectives (a quarter or more of the calls waited 200 µs or more for their peers)
  // that is the call's end; for asynchronous ones (every call returns once queued) the end of the
  // blocked sync that completes it (RankCollective::done), a coarser anchor.
  uint64_t blocked = 0;
  for (const RankMember& m : job.members)
    for (size_t k = 0; k < n; ++k)
      blocked += m.collectives[k].end - m.collectives[k].ts >= kBlockedSyncNs;
  const bool on_ends = 4 * blocked >= n * job.members.size();
  auto moment = [&](const RankMember& m, size_t k) {
    return on_ends ? m.collectives[k].end : m.collectives[k].done;
  };
  // Per instance, the median moment of one file's ranks (0: none of them has one).
  auto file_moment = [&](size_t f, size_t k) {
    std::vector<int64_t> v;
    for (const RankMember& m : job.members)
      if (m.file == f && moment(m, k) != 0) v.push_back(moment(m, k));
    return median(std::move(v));
  };
  job.clocks.resize(files.size());
  for (size_t f = 0; f < files.size(); ++f) {
    ClockFit& fit = job.clocks[f];
    fit.same_clock = !files[f].boot_id.empty() && files[f].boot_id == files[0].boot_id;
    fit.anchor = on_ends ? "collective_ends" : "sync_ends";
    fit.max_residual_ns = max_residual;
    std::vector<int64_t> d;
    std::vector<int64_t> ref(n);
    for (size_t k = 0; k < n; ++k) {
      ref[k] = file_moment(0, k);
      const int64_t here = file_moment(f, k);
      if (ref[k] != 0 && here != 0) d.push_back(ref[k] - here);
    }
    fit.instances = d.size();
    if (d.size() < kMinInstances)
      return refuse("only " + std::to_string(d.size()) + " collective instances of " +
                        where(files[f]) + " have a moment shared with " + where(files[0]) +
                        (on_ends ? " (the ends of blocking collectives)"
                                 : " (the collectives return at once: asynchronous NCCL; the "
                                   "syncs that complete them did not block)"),
                    "the clocks cannot be aligned; trace every host over the same run");
    fit.offset_ns = f == 0 ? 0 : median(d);
    // Residuals: each rank of the file against the reference file's median moment; on the
    // reference file itself, against the median of its other ranks (not against itself).
    std::vector<int64_t> res;
    for (const RankMember& m : job.members) {
      if (m.file != f) continue;
      for (size_t k = 0; k < n; ++k) {
        if (moment(m, k) == 0) continue;
        int64_t against = ref[k];
        if (f == 0) {
          std::vector<int64_t> others;
          for (const RankMember& o : job.members)
            if (o.file == 0 && &o != &m && moment(o, k) != 0) others.push_back(moment(o, k));
          against = median(std::move(others));
        }
        if (against != 0) res.push_back(std::abs(against - (moment(m, k) + fit.offset_ns)));
      }
    }
    if (f > 0 && std::abs(fit.offset_ns) >= kClockNoteNs)
      job.notes.push_back(files[f].host + "'s wall clock is " +
                          fmt_duration(std::abs(fit.offset_ns)) +
                          (fit.offset_ns < 0 ? " ahead of " : " behind ") + files[0].host +
                          "'s (the collectives say so): check its time synchronisation (NTP, PTP)");
    if (res.empty()) continue;
    std::vector<int64_t> r90 = res;
    fit.residual_p50_ns = median(res);
    fit.residual_p90_ns = percentile(r90, 90);
    if (fit.residual_p50_ns > max_residual)
      return refuse(
          "the NCCL collectives of " + where(files[f]) + " do not line up with " + where(files[0]) +
              "'s: after the best clock offset (" + fmt_duration(fit.offset_ns) + ") their " +
              (on_ends ? "ends" : "completing syncs' ends") + " still differ by " +
              fmt_duration(fit.residual_p50_ns) + " (median of " + std::to_string(res.size()) +
              "; at most " + fmt_duration(max_residual) + " is trusted)",
          "these traces are not one job's, or they cover different parts of it");
  }
  if (!on_ends)
    job.notes.push_back(
        "the collectives return once queued (asynchronous NCCL): clocks aligned on the ends of "
        "the syncs that complete them, a coarser anchor than blocking collectives' ends");

  // Arrivals on the common clock.
  const size_t R = job.members.size();
  std::vector<std::vector<int64_t>> late(R);
  job.ranks.resize(R);
  std::vector<int64_t> imposed_by(R, 0);
  for (size_t k = 0; k < n; ++k) {
    std::vector<int64_t> e(R);
    for (size_t r = 0; r < R; ++r)
      e[r] = job.members[r].collectives[k].ts + job.clocks[job.members[r].file].offset_ns;
    const size_t last = static_cast<size_t>(std::max_element(e.begin(), e.end()) - e.begin());
    int64_t imposed = 0;
    for (size_t r = 0; r < R; ++r) {
      std::vector<int64_t> others;
      for (size_t o = 0; o < R; ++o)
        if (o != r) others.push_back(e[o]);
      late[r].push_back(e[r] - median(others));
      if (r != last) {
        imposed += e[last] - e[r];
        job.ranks[r].waited_ns += e[last] - e[r];
      }
    }
    imposed /= static_cast<int64_t>(R - 1);
    if (imposed < 100'000) continue;  // balanced: everyone within 100 µs names nobody
    ++job.unbalanced;
    ++job.ranks[last].last;
    imposed_by[last] += imposed;
  }
  for (size_t r = 0; r < R; ++r) {
    RankLateness& rl = job.ranks[r];
    const RankMember& m = job.members[r];
    rl.member = r;
    int64_t sum = 0;
    for (int64_t v : late[r]) sum += v;
    rl.late_mean_ns = sum / static_cast<int64_t>(n);
    rl.late_p50_ns = median(late[r]);
    rl.span_ns = m.collectives[n - 1].end - m.collectives[0].ts;
  }
  const auto top = std::max_element(job.ranks.begin(), job.ranks.end(),
                                    [](auto& a, auto& b) { return a.last < b.last; });
  if (job.unbalanced >= min_collectives &&
      static_cast<double>(top->last) >= majority * static_cast<double>(job.unbalanced)) {
    job.straggler = static_cast<int>(top - job.ranks.begin());
    job.imposed_ns = imposed_by[static_cast<size_t>(job.straggler)];
  }
  return job;
}

}  // namespace gpuwhy::analysis
