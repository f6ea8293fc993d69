// SPDX-License-Identifier: Apache-2.0
// Direct reclaim: the host ran short of free memory and a GPU thread's own allocation (a page
// fault, a pinned-buffer allocation, a read into page cache) had to free pages itself before it
// could continue. The stall lands on whatever the thread was doing, launches included.
#include <algorithm>
#include <map>

#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

struct Reclaims {
  const ThreadSummary* t = nullptr;
  int64_t ns = 0;
  uint64_t count = 0, pages = 0;
  int64_t longest = 0, longest_at = 0, first = -1, last = -1;
};

Reclaims collect_reclaims(const Context& ctx, const ThreadSummary& t) {
  Reclaims r;
  r.t = &t;
  auto [b, e] = Joins::range(ctx.joins.reclaim, t.tid);
  for (size_t k = b; k < e; ++k) {
    const ReclaimRow& row = ctx.rows.reclaim[k];
    const int64_t ns = overlap_ns(row.ts, row.end(), t.first_ns, t.last_ns);
    if (ns <= 0) continue;
    r.ns += ns;
    ++r.count;
    r.pages += row.nr_reclaimed;
    if (r.first < 0) r.first = row.ts;
    r.last = row.end();
    if (ns > r.longest) {
      r.longest = ns;
      r.longest_at = row.ts;
    }
  }
  return r;
}

void one_thread(const Context& ctx, const Reclaims& r, std::vector<Chain>& out) {
  const ThreadSummary& t = *r.t;
  Chain ch = ctx.thread_chain(t, "memory_reclaim", "Host memory pressure (direct reclaim)",
                              std::min(r.ns, ctx.budget(t)[Bucket::Reclaim]));
  ch.first_ns = ctx.rel(std::max(r.first, t.first_ns));
  ch.last_ns = ctx.rel(std::min(r.last, t.last_ns));
  ch.summary = ctx.who(ch.thread) + " stalls in direct memory reclaim: " + fmt_percent(ch.share()) +
               " of its time";
  ch.evidence.push_back({fmt_count(r.count) + " direct reclaims on " + ch.thread.label() + ", " +
                         fmt_duration(r.ns) + " (" + fmt_percent(ch.share()) + "), freeing " +
                         fmt_bytes(r.pages * 4096) + " (" + fmt_count(r.pages) + " pages)"});
  uint64_t others = 0;
  int64_t others_ns = 0;
  for (const ReclaimRow& row : ctx.rows.reclaim) {
    if (row.pid == t.pid && row.tid != t.tid) {
      ++others;
      others_ns += row.dur;
    }
  }
  if (others > 0) {
    ch.evidence.push_back({"other threads of " + ch.process.label() + ": " + fmt_count(others) +
                           " reclaims, " + fmt_duration(others_ns)});
  }
  ch.evidence.push_back(
      {"longest at " + fmt_rel(ctx.rel(r.longest_at)) + ": " + fmt_duration(r.longest),
       ctx.rel(r.longest_at)});
  ch.fix =
      "the host is short of free memory: reduce host memory use (fewer DataLoader workers, "
      "smaller prefetch, page cache filled by checkpoint writes), or raise "
      "vm.min_free_kbytes so kswapd reclaims in the background before threads must";
  ch.metrics = {{"reclaim_ns", static_cast<double>(r.ns)},
                {"reclaims", static_cast<double>(r.count)},
                {"pages", static_cast<double>(r.pages)}};
  out.push_back(std::move(ch));
}

}  // namespace

void detect_reclaim(const Context& ctx, std::vector<Chain>& out) {
  std::map<uint32_t, Reclaims> worst;
  for (const ThreadSummary& t : ctx.joins.threads) {
    Reclaims r = collect_reclaims(ctx, t);
    if (r.ns <= 0) continue;
    Reclaims& cur = worst[t.pid];
    if (r.ns > cur.ns) cur = r;
  }
  for (const auto& [pid, r] : worst) one_thread(ctx, r, out);
}

}  // namespace gpuwhy::analysis
