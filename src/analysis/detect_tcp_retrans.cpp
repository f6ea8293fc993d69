// SPDX-License-Identifier: Apache-2.0
// TCP retransmits during collectives: on Ethernet/RoCE-less clusters NCCL's socket transport
// carries the collective; a lost segment waits for a retransmission timeout and the whole ring
// waits with it. A collective's wait is the call itself plus the stream sync right after it
// (NCCL calls only enqueue; the wait surfaces in the sync).
#include <algorithm>
#include <map>

#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

struct Coll {
  CollectiveWait w;
  uint32_t retrans = 0;
};

}  // namespace

void detect_tcp_retrans(const Context& ctx, std::vector<Chain>& out) {
  const auto& tcp = ctx.rows.tcp;
  if (tcp.size() < ctx.th.min_retransmits) return;
  std::vector<Coll> colls;
  for (const CollectiveWait& w : collective_waits(ctx)) colls.push_back({w});
  if (colls.empty()) return;
  std::vector<uint8_t> during(tcp.size(), 0);
  for (Coll& c : colls) {
    auto it = std::lower_bound(tcp.begin(), tcp.end(), c.w.ts,
                               [](const TcpRetransRow& r, int64_t ts) { return r.ts < ts; });
    for (; it != tcp.end() && it->ts < c.w.end; ++it) {
      ++c.retrans;
      during[static_cast<size_t>(it - tcp.begin())] = 1;
    }
  }
  const uint64_t n_during = std::count(during.begin(), during.end(), 1);
  if (n_during < ctx.th.min_retransmits) return;

  // Typical effective duration per (pid, api) from collectives without a retransmit.
  std::map<std::pair<uint32_t, uint16_t>, std::vector<int64_t>> clean, hit;
  for (const Coll& c : colls) {
    (c.retrans ? hit : clean)[{c.w.pid, c.w.api}].push_back(c.w.end - c.w.ts);
  }
  std::map<uint32_t, int64_t> lost_by_pid;
  std::map<uint32_t, uint64_t> hit_by_pid;
  std::vector<int64_t> hit_all, clean_all;
  for (const auto& [key, durs] : hit) {
    auto cit = clean.find(key);
    const int64_t typical = cit == clean.end() ? 0 : median_of(cit->second);
    for (int64_t d : durs) {
      lost_by_pid[key.first] += std::max<int64_t>(0, d - typical);
      ++hit_by_pid[key.first];
      hit_all.push_back(d);
    }
  }
  for (const auto& [key, durs] : clean) clean_all.insert(clean_all.end(), durs.begin(), durs.end());
  const auto victim = std::max_element(lost_by_pid.begin(), lost_by_pid.end(),
                                       [](auto& a, auto& b) { return a.second < b.second; });
  if (victim == lost_by_pid.end() || victim->second <= 0) return;

  std::map<std::string, uint64_t> peers;
  int64_t first = -1, last = -1;
  for (size_t k = 0; k < tcp.size(); ++k) {
    if (!during[k]) continue;
    ++peers[tcp[k].daddr + ":" + std::to_string(tcp[k].dport)];
    if (first < 0) first = tcp[k].ts;
    last = tcp[k].ts;
  }
  const auto peer = std::max_element(peers.begin(), peers.end(),
                                     [](auto& a, auto& b) { return a.second < b.second; });

  Chain ch;
  ch.kind = "tcp_retransmits";
  ch.title = "Network retransmits during collectives";
  ch.process = ctx.process(victim->first);
  if (const ThreadSummary* t = ctx.dispatch_thread(victim->first))
    ch.thread = ctx.thread(t->pid, t->tid);
  const auto [ps, pe] = ctx.process_span(victim->first);
  ch.lost_ns = victim->second;
  ch.span_ns = pe - ps;
  ch.first_ns = ctx.rel(first);
  ch.last_ns = ctx.rel(last);
  ch.summary = fmt_count(n_during) + " TCP retransmits hit " + ch.process.label() +
               "'s collectives: " + fmt_percent(ch.share()) + " of its time spent waiting on them";
  ch.evidence.push_back({fmt_count(n_during) + " of the window's " + fmt_count(tcp.size()) +
                             " TCP retransmits happened during collectives, mostly to " +
                             peer->first + " (" + fmt_count(peer->second) + ")",
                         ch.first_ns});
  ch.evidence.push_back(
      {fmt_count(hit_by_pid[victim->first]) +
       " collectives of this process overlapped a retransmit; all processes: "
       "median " +
       fmt_duration(median_of(hit_all)) + " with, " +
       (clean_all.empty() ? std::string("none") : fmt_duration(median_of(clean_all))) +
       " without"});
  ch.evidence.push_back(
      {"first at " + fmt_rel(ch.first_ns) + ", last at " + fmt_rel(ch.last_ns), ch.first_ns});
  ch.fix =
      "the network drops packets under collective traffic: check NIC and switch counters "
      "(ethtool -S, drops, pause frames), MTU and congestion settings, and that NCCL uses "
      "the intended interface (NCCL_SOCKET_IFNAME) or RDMA (NCCL_IB_HCA)";
  ch.metrics = {{"retransmits_during_collectives", static_cast<double>(n_during)},
                {"retransmits", static_cast<double>(tcp.size())},
                {"collectives_hit", static_cast<double>(hit_by_pid[victim->first])}};
  out.push_back(std::move(ch));
}

}  // namespace gpuwhy::analysis
