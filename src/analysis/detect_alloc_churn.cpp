// SPDX-License-Identifier: Apache-2.0
// Allocator churn: device or pinned allocations and frees that keep happening inside the loop
// instead of once at start-up. Each is a driver round trip (milliseconds for large sizes), and a
// free synchronises the whole device first. Often the caching allocator being defeated
// (torch.cuda.empty_cache() per step, changing shapes) or a hand-written loop allocating scratch.
#include <algorithm>
#include <map>

#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

struct Churn {
  const ThreadSummary* t = nullptr;
  std::vector<uint32_t> idx;
  int64_t ns = 0;
};

Churn collect_churn(const Context& ctx, const ThreadSummary& t) {
  Churn c;
  c.t = &t;
  for (size_t i = t.call_begin; i < t.call_end; ++i) {
    // Outermost allocations and frees, from their byte: most calls are launches, not read.
    if (!(ctx.joins.bits[i] & call_bits::kAllocFree)) continue;
    const CallRow& r = ctx.rows.calls[i];
    c.idx.push_back(static_cast<uint32_t>(i));
    c.ns += r.dur;
  }
  return c;
}

bool recurring(const Context& ctx, const Churn& c) {
  const ThreadSummary& t = *c.t;
  if (c.idx.size() < ctx.th.loop_min_count || t.span_ns() <= 0) return false;
  const double per_s = static_cast<double>(c.idx.size()) * 1e9 / static_cast<double>(t.span_ns());
  if (per_s < ctx.th.loop_rate_per_s) return false;
  bool seen[10] = {};
  for (uint32_t i : c.idx) {
    const int64_t off = ctx.rows.calls[i].ts - t.first_ns;
    seen[std::clamp<int64_t>(off * 10 / t.span_ns(), 0, 9)] = true;
  }
  return std::count(std::begin(seen), std::end(seen), true) >= ctx.th.loop_spread * 10;
}

void one_thread(const Context& ctx, const Churn& c, std::vector<Chain>& out) {
  const ThreadSummary& t = *c.t;
  Chain ch = ctx.thread_chain(t, "alloc_churn", "Allocator churn in the loop",
                              std::min(c.ns, ctx.budget(t)[Bucket::Alloc]));
  ch.first_ns = ctx.rel(ctx.rows.calls[c.idx.front()].ts);
  ch.last_ns = ctx.rel(ctx.rows.calls[c.idx.back()].end());
  const double per_s = static_cast<double>(c.idx.size()) * 1e9 / static_cast<double>(t.span_ns());

  struct OpAcc {
    std::vector<int64_t> durs;
    std::vector<int64_t> sizes;
    int64_t ns = 0;
    Category cat = kUnknownCategory;
  };
  std::map<uint16_t, OpAcc> ops;
  uint32_t slowest = c.idx.front();
  int64_t free_ns = 0;
  uint64_t frees = 0;
  for (uint32_t i : c.idx) {
    const CallRow& r = ctx.rows.calls[i];
    OpAcc& a = ops[r.api];
    a.durs.push_back(r.dur);
    if (r.cat == Category::Alloc) a.sizes.push_back(static_cast<int64_t>(ctx.rows.ext(r).bytes));
    a.ns += r.dur;
    a.cat = r.cat;
    if (r.dur > ctx.rows.calls[slowest].dur) slowest = i;
    if (r.cat == Category::Free && !ctx.rows.api(r.api).host_free) {
      free_ns += r.dur;
      ++frees;
    }
  }
  ch.summary = fmt_rate(per_s) + " allocations/frees inside " + ctx.who(ch.thread) +
               "'s loop cost " + fmt_percent(ch.share()) + " of its time";
  ch.evidence.push_back({fmt_count(c.idx.size()) + " allocation/free calls (" + fmt_rate(per_s) +
                         "), " + fmt_duration(c.ns) + " in all, spread over the whole run (" +
                         fmt_rel(ch.first_ns) + " .. " + fmt_rel(ch.last_ns) +
                         "), not only at "
                         "start-up"});
  std::vector<std::pair<int64_t, uint16_t>> order;
  for (auto& [api, a] : ops) order.emplace_back(a.ns, api);
  std::sort(order.rbegin(), order.rend());
  for (size_t k = 0; k < order.size() && k < 3; ++k) {
    OpAcc& a = ops[order[k].second];
    std::string line = std::string(ctx.rows.api_name(order[k].second)) + ": " +
                       fmt_count(a.durs.size()) + " calls, " + fmt_duration(a.ns) + ", median " +
                       fmt_duration(median_of(a.durs));
    if (!a.sizes.empty())
      line += ", median size " + fmt_bytes(static_cast<uint64_t>(median_of(a.sizes)));
    ch.evidence.push_back({line});
  }
  if (frees > 0) {
    ch.evidence.push_back({fmt_count(frees) + " device frees took " + fmt_duration(free_ns) +
                           ": each synchronises the device before it returns"});
  }
  if (std::string sites = call_sites_line(ctx, c.idx); !sites.empty())
    ch.evidence.push_back({sites});
  const CallRow& s = ctx.rows.calls[slowest];
  ch.evidence.push_back({"slowest at " + fmt_rel(ctx.rel(s.ts)) + ": " +
                             std::string(ctx.rows.api_name(s.api)) + " " + fmt_duration(s.dur),
                         ctx.rel(s.ts)});
  ch.fix =
      "reuse buffers: allocate once outside the loop and let the caching allocator work "
      "(PyTorch: no torch.cuda.empty_cache() in the loop; keep shapes stable; "
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation)";
  // The user's own line, where the calls came from Python: the fix starts there.
  if (std::string site = top_python_site(ctx, c.idx); !site.empty())
    ch.fix = "at " + site + ": " + ch.fix;
  ch.metrics = {{"calls", static_cast<double>(c.idx.size())},
                {"calls_per_s", per_s},
                {"alloc_free_ns", static_cast<double>(c.ns)},
                {"free_ns", static_cast<double>(free_ns)}};
  out.push_back(std::move(ch));
}

}  // namespace

void detect_alloc_churn(const Context& ctx, std::vector<Chain>& out) {
  std::map<uint32_t, Churn> worst;
  for (const ThreadSummary& t : ctx.joins.threads) {
    Churn c = collect_churn(ctx, t);
    if (!recurring(ctx, c)) continue;
    Churn& cur = worst[t.pid];
    if (c.ns > cur.ns) cur = std::move(c);
  }
  for (const auto& [pid, c] : worst) one_thread(ctx, c, out);
}

}  // namespace gpuwhy::analysis
