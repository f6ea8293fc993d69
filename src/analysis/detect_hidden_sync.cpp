// SPDX-License-Identifier: Apache-2.0
// Hidden or excessive synchronisation: syncs, and small device-to-host copies (a scalar read back
// like loss.item(), which waits for every queued kernel first), recurring inside the step loop.
// Each one drains the GPU queue; until the host launches again the GPU has nothing to run.
// Waiting in a sync while the GPU works is not lost by itself; the loss is that the host work
// after it (the refill gap, less stalls that have causes of their own) cannot overlap the GPU
// work the sync waited for. Per sync: min(host work in the gap, time the sync waited).
#include <algorithm>
#include <map>

#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

// A small D2H copy that made the host wait: a synchronous copy, or an async one that took long
// enough to have waited (pageable destination: the runtime stages it synchronously).
bool is_readback(const TraceRows& rows, const CallRow& c, const ApiMeta& m, uint64_t small) {
  return c.cat == Category::Copy && c.dir == static_cast<int8_t>(CopyDir::DeviceToHost) &&
         rows.ext(c).bytes < small && (!m.async || c.dur >= 50'000);
}

struct SyncUse {
  std::vector<uint32_t> idx;    // the sync / read-back calls
  std::vector<int64_t> gaps;    // refill gap after each one that drained queued work
  std::vector<int64_t> queued;  // work queued ahead of each
  int64_t blocked_ns = 0;       // host time inside them
  int64_t lost_ns = 0;
  uint64_t interleaved = 0;  // pairs of consecutive syncs with a launch in between
  uint64_t readbacks = 0;
  uint64_t odd = 0;  // long waits with (almost) nothing queued: not this thread's GPU work
};

SyncUse collect_sync_uses(const Context& ctx, const ThreadSummary& t) {
  SyncUse u;
  const uint64_t small = ctx.th.small_copy_bytes;
  std::vector<size_t> pending;                           // syncs whose refill gap is not known yet
  std::vector<std::pair<int64_t, int64_t>> other_calls;  // API calls since: their own cost
  bool launched_since = false;
  StallWalk stalls(ctx.rows, ctx.joins, t.tid);  // the gaps come in time order
  using namespace call_bits;
  const uint8_t* const all_bits = ctx.joins.bits.data();
  const CallRow* const calls = ctx.rows.calls.data();
  // A call that queues work and is neither a copy (a read-back, maybe) nor a sync: a launch.
  const auto launch = [](uint8_t bits) { return (bits & kEnqueues) && !(bits & (kCopy | kSync)); };
  for (size_t i = t.call_begin; i < t.call_end; ++i) {
    // The rows read below are far apart (launches are decided on their byte alone): ask for the
    // one far enough on now that it is in the cache when the loop gets there.
    constexpr size_t kAhead = 192;
    if (i + kAhead < t.call_end) {
      const uint8_t ahead = all_bits[i + kAhead];
      if (ahead && !launch(ahead)) __builtin_prefetch(calls + i + kAhead);
    }
    const uint8_t bits = all_bits[i];
    if (!bits) continue;  // nested
    // A launch with no sync waiting for its refill gap only says the host launched since the
    // last sync (then nothing is pending, and no other call is being collected): most calls,
    // decided from their byte in Joins::bits without reading the row.
    if (pending.empty() && launch(bits)) {
      launched_since = true;
      continue;
    }
    const CallRow& c = ctx.rows.calls[i];
    const ApiMeta& m = ctx.rows.api(c.api);
    const bool sync = c.cat == Category::Sync || is_readback(ctx.rows, c, m, small);
    // Any call that hands the GPU work ends the bubble, a synchronous copy included.
    const bool submits = enqueues_work(m) || c.cat == Category::Copy || c.cat == Category::Memset;
    if (submits && !sync) {
      for (size_t p : pending) {
        const CallRow& s = ctx.rows.calls[u.idx[p]];
        if (c.ts < s.end()) continue;  // nested inside the sync itself
        // Stalls in the gap have causes of their own (preemption, a lock, I/O, other API
        // calls): only the host's own work between the drain and the next launch is the sync's.
        const int64_t gap = c.ts - s.end() - stalls.stalled_ns(s.end(), c.ts, other_calls);
        if (c.ts - s.end() <= ctx.th.max_refill_gap_ns && gap > 0) {
          u.gaps.push_back(gap);
          // Without the sync that host work would overlap the GPU work the sync waited for:
          // the saving is bounded by both.
          u.lost_ns += std::min(gap, s.dur);
        }
      }
      pending.clear();
      other_calls.clear();
      launched_since = true;
    }
    // An allocation, a free or another sync between the drain and the next launch is its own
    // cost, not host work.
    if ((!submits || sync) && !pending.empty()) other_calls.emplace_back(c.ts, c.end());
    if (!sync) continue;
    if (!u.idx.empty() && launched_since) ++u.interleaved;
    launched_since = false;
    const uint32_t q = ctx.joins.queued_ahead[i];
    u.idx.push_back(static_cast<uint32_t>(i));
    u.queued.push_back(q);
    u.blocked_ns += c.dur;
    if (c.cat != Category::Sync) ++u.readbacks;
    if (q <= 1 && c.dur > 1'000'000) ++u.odd;
    if (q > 0) pending.push_back(u.idx.size() - 1);
  }
  return u;
}

// Share of the span's tenths that contain at least one of the calls: "all along the loop", as
// opposed to a burst at start-up or at the end.
double spread(const Context& ctx, const ThreadSummary& t, const std::vector<uint32_t>& idx) {
  const int64_t span = std::max<int64_t>(t.span_ns(), 1);
  bool seen[10] = {};
  for (uint32_t i : idx) {
    const int64_t off = ctx.rows.calls[i].ts - t.first_ns;
    seen[std::clamp<int64_t>(off * 10 / span, 0, 9)] = true;
  }
  return static_cast<double>(std::count(std::begin(seen), std::end(seen), true)) / 10.0;
}

void sync_chain(const Context& ctx, const ThreadSummary& t, std::vector<Chain>& out) {
  SyncUse u = collect_sync_uses(ctx, t);
  const uint64_t n = u.idx.size();
  if (n < ctx.th.loop_min_count || t.span_ns() <= 0) return;
  const double per_s = static_cast<double>(n) * 1e9 / static_cast<double>(t.span_ns());
  if (per_s < ctx.th.loop_rate_per_s || spread(ctx, t, u.idx) < ctx.th.loop_spread) return;
  // Inside the step loop: a few syncs at a time (a step's loss.item() and its synchronize())
  // with launches between those groups, not a burst of syncs with nothing queued between them.
  // (Requiring launches between most consecutive syncs put two syncs per step exactly on the
  // threshold: one sync more or less, or a trace cut in two windows, flipped the answer.)
  if (static_cast<double>(n) > 3.0 * static_cast<double>(u.interleaved + 1)) return;

  std::map<std::string, uint64_t> by_op;
  for (uint32_t i : u.idx) {
    const CallRow& c = ctx.rows.calls[i];
    std::string key(ctx.rows.api_name(c.api));
    if (c.cat == Category::Copy) key += " D2H of " + fmt_bytes(ctx.rows.ext(c).bytes);
    ++by_op[key];
  }
  std::vector<std::pair<uint64_t, std::string>> ops;
  for (auto& [k, v] : by_op) ops.emplace_back(v, k);
  std::sort(ops.begin(), ops.end(), [](auto& a, auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string breakdown;
  for (size_t i = 0; i < ops.size() && i < 3; ++i) {
    if (!breakdown.empty()) breakdown += ", ";
    breakdown += fmt_count(ops[i].first) + " x " + ops[i].second;
  }
  const bool mostly_readbacks = u.readbacks * 2 >= n;

  Chain ch = ctx.thread_chain(t, "hidden_sync",
                              mostly_readbacks ? "Per-step device-to-host read-back (hidden sync)"
                                               : "Excessive synchronisation in the step loop",
                              std::min(u.lost_ns, ctx.budget(t)[Bucket::RefillGap]));
  ch.first_ns = ctx.rel(ctx.rows.calls[u.idx.front()].ts);
  ch.last_ns = ctx.rel(ctx.rows.calls[u.idx.back()].end());
  const int64_t gap_med = u.gaps.empty() ? 0 : median_of(u.gaps);
  const int64_t q_med = median_of(std::vector<int64_t>(u.queued.begin(), u.queued.end()));

  ch.summary = fmt_rate(per_s) + (mostly_readbacks ? " small device-to-host reads" : " syncs") +
               " in the step loop of " + ctx.who(ch.thread) +
               " drain the GPU queue: idle GPU for " + fmt_percent(ch.share()) + " of the time";
  ch.evidence.push_back({fmt_count(n) + " host syncs in " + fmt_duration(t.span_ns()) + " (" +
                         fmt_rate(per_s) + "): " + breakdown});
  if (mostly_readbacks) {
    ch.evidence.push_back({"a device-to-host copy under " + fmt_bytes(ctx.th.small_copy_bytes) +
                           " (a scalar like loss.item()) waits for every kernel queued before it"});
  }
  ch.evidence.push_back({"each waited for a median of " + fmt_count(static_cast<uint64_t>(q_med)) +
                         " queued launches/copies; the host was blocked " +
                         fmt_duration(u.blocked_ns) + " in them (" +
                         fmt_percent(static_cast<double>(u.blocked_ns) / t.span_ns()) + ")"});
  ch.evidence.push_back({"after each, the GPU sat idle through a median " + fmt_duration(gap_med) +
                         " of host work until the next launch; overlapping that work with the "
                         "queued GPU work would save " +
                         fmt_duration(ch.lost_ns) + " (" + fmt_percent(ch.share()) + ")"});
  if (u.odd > 0) {
    ch.evidence.push_back({fmt_count(u.odd) +
                           " syncs waited over 1 ms with at most one op queued "
                           "by this thread: they wait on other streams, processes or the host"});
  }
  if (std::string sites = call_sites_line(ctx, u.idx); !sites.empty())
    ch.evidence.push_back({sites});
  ch.evidence.push_back(
      {"first at " + fmt_rel(ch.first_ns) + ", last at " + fmt_rel(ch.last_ns), ch.first_ns});
  const std::string readback_fix =
      "keep the loss/metrics on the GPU and read them every N steps (accumulate in a device "
      "tensor); avoid .item() / .cpu() / cudaMemcpy D2H of scalars every step";
  const std::string sync_fix =
      "remove per-step synchronisation (cudaDeviceSynchronize, cudaStreamSynchronize, "
      "torch.cuda.synchronize()); time with CUDA events and sync only where the host needs the "
      "results";
  ch.fix = mostly_readbacks  ? readback_fix
           : u.readbacks > 0 ? sync_fix + "; " + readback_fix
                             : sync_fix;
  // The user's own line, where the calls came from Python: the fix starts there.
  if (std::string site = top_python_site(ctx, u.idx); !site.empty())
    ch.fix = "at " + site + ": " + ch.fix;
  ch.metrics = {{"syncs", static_cast<double>(n)},
                {"syncs_per_s", per_s},
                {"readbacks", static_cast<double>(u.readbacks)},
                {"host_blocked_ns", static_cast<double>(u.blocked_ns)},
                {"refill_gap_median_ns", static_cast<double>(gap_med)},
                {"queued_median", static_cast<double>(q_med)}};
  out.push_back(std::move(ch));
}

}  // namespace

void detect_hidden_sync(const Context& ctx, std::vector<Chain>& out) {
  for (const ThreadSummary& t : ctx.joins.threads) sync_chain(ctx, t, out);
}

}  // namespace gpuwhy::analysis
