// SPDX-License-Identifier: Apache-2.0
// Transfer-bound steps: host<->device copies take a large part of a GPU thread's time. Copies
// from or to pageable host memory (a host pointer outside every pinned allocation seen in the
// trace) are staged through a driver bounce buffer: slower, and they block the host even when
// called as async. Small device-to-host copies are left to the hidden-sync detector: their cost
// is the wait, not the bytes.
#include <algorithm>
#include <map>

#include "analysis/addr_ranges.hpp"
#include "analysis/detectors.hpp"
#include "analysis/pinning.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

struct DirAcc {
  uint64_t count = 0, bytes = 0, pageable_bytes = 0;
  int64_t ns = 0, pageable_ns = 0;
};

struct ThreadCopies {
  const ThreadSummary* t = nullptr;
  DirAcc h2d, d2h;
  int64_t ns = 0;
  uint64_t waited = 0;         // synchronous copies that first waited for queued kernels
  int64_t sync_pinned_ns = 0;  // synchronous copies from pinned memory: async ones would overlap
  // Of those, the ones that measure the pinned rate (pinned_copy_rate): (bytes, ns) each.
  uint64_t rate_bytes = 0;
  std::vector<std::pair<uint64_t, int64_t>> rate_samples;
  uint32_t largest = UINT32_MAX;
  std::vector<uint32_t> idx;  // the copies counted
};

std::string dir_line(const char* name, const DirAcc& d) {
  std::string s = std::string(name) + ": " + fmt_count(d.count) + " copies, " + fmt_bytes(d.bytes) +
                  " in " + fmt_duration(d.ns);
  if (d.ns > 0) s += " (" + fmt_bandwidth(static_cast<double>(d.bytes) * 1e9 / d.ns) + ")";
  return s;
}

ThreadCopies collect(const Context& ctx, const ThreadSummary& t, const AddressMap& map) {
  ThreadCopies tc;
  tc.t = &t;
  const int8_t kH2D = static_cast<int8_t>(CopyDir::HostToDevice);
  const int8_t kD2H = static_cast<int8_t>(CopyDir::DeviceToHost);
  for (size_t i = t.call_begin; i < t.call_end; ++i) {
    // Outermost copies, from their byte: most calls are launches, not read.
    if (!(ctx.joins.bits[i] & call_bits::kCopy)) continue;
    const CallRow& c = ctx.rows.calls[i];
    if (c.dir != kH2D && c.dir != kD2H) continue;
    const CallExt& e = ctx.rows.ext(c);
    if (c.dir == kD2H && e.bytes < ctx.th.small_copy_bytes) continue;
    DirAcc& d = c.dir == kH2D ? tc.h2d : tc.d2h;
    const uint64_t host = c.dir == kH2D ? e.addr2 : e.addr;
    // Time the thread was runnable but without a CPU is contention's, not the copy's.
    const CallOverlap* o = ctx.joins.overlap(static_cast<uint32_t>(i));
    const int64_t ns = c.dur - (o ? o->preempted_ns + o->wakeup_ns : 0);
    ++d.count;
    d.bytes += e.bytes;
    d.ns += ns;
    tc.idx.push_back(static_cast<uint32_t>(i));
    // An async copy that returned faster than 25 GB/s could have staged it was DMA'd from
    // pinned memory, even when its allocation predates the trace.
    const bool returned_early = ctx.rows.api(c.api).async &&
                                static_cast<double>(c.dur) * 25.0 < static_cast<double>(e.bytes);
    if (!returned_early && !map.pinned(host, e.bytes, c.ts)) {
      d.pageable_bytes += e.bytes;
      d.pageable_ns += ns;
    } else if (!ctx.rows.api(c.api).async) {
      tc.sync_pinned_ns += ns;
      if (ctx.joins.queued_ahead[i] == 0 && e.bytes >= kRateSampleMinBytes) {
        tc.rate_bytes += e.bytes;
        tc.rate_samples.emplace_back(e.bytes, c.dur - (o ? o->wakeup_ns : 0));
      }
    }
    tc.ns += ns;
    if (!ctx.rows.api(c.api).async && ctx.joins.queued_ahead[i] > 0) ++tc.waited;
    if (tc.largest == UINT32_MAX || c.dur > ctx.rows.calls[tc.largest].dur)
      tc.largest = static_cast<uint32_t>(i);
  }
  return tc;
}

void one_thread(const Context& ctx, const ThreadCopies& tc, const AddressMap& map,
                std::vector<Chain>& out) {
  const ThreadSummary& t = *tc.t;
  const uint64_t bytes = tc.h2d.bytes + tc.d2h.bytes;
  const uint64_t pageable = tc.h2d.pageable_bytes + tc.d2h.pageable_bytes;
  const bool mostly_pageable = pageable * 2 > bytes;
  // What pinning would save: pageable copies, less the time the same bytes take from pinned
  // memory (estimate_pinning: at the pinned rate this trace shows, else a stated default); plus
  // synchronous copies from pinned memory, which an async copy on a side stream would overlap
  // with compute. At most the thread's Transfer bucket: the copies' time with the CPU in hand.
  const int64_t pageable_ns = tc.h2d.pageable_ns + tc.d2h.pageable_ns;
  const PinningEstimate pin =
      estimate_pinning(pageable, pageable_ns, tc.rate_bytes, pinned_copy_rate(tc.rate_samples));
  const double pinned_bw = pin.pinned_bytes_per_s;
  const int64_t at_pinned = pin.at_pinned_ns;
  const int64_t lost =
      std::min(pin.returns_ns + tc.sync_pinned_ns, ctx.budget(t)[Bucket::Transfer]);

  Chain ch = ctx.thread_chain(
      t, "transfer_bound",
      mostly_pageable ? "Transfer-bound steps (pageable host memory)" : "Transfer-bound steps",
      lost);
  const CallRow& big = ctx.rows.calls[tc.largest];
  ch.first_ns = ctx.rel(t.first_ns);
  ch.last_ns = ctx.rel(t.last_ns);
  ch.summary = "host<->device copies take " +
               fmt_percent(static_cast<double>(tc.ns) / t.span_ns()) + " of " + ctx.who(ch.thread) +
               "'s time" +
               (mostly_pageable ? ", mostly from pageable (unpinned) host memory" : "") + ": " +
               fmt_percent(ch.share()) + " could be saved";
  const double api_share = t.api_ns > 0 ? static_cast<double>(tc.ns) / t.api_ns : 0;
  ch.evidence.push_back({"copies took " + fmt_duration(tc.ns) + " of " + ch.thread.label() + "'s " +
                         fmt_duration(t.span_ns()) + " (" +
                         fmt_percent(static_cast<double>(tc.ns) / t.span_ns()) + ") and " +
                         fmt_percent(api_share) +
                         " of its GPU API time; from pinned memory "
                         "the pageable ones would take about " +
                         fmt_duration(at_pinned) + " (" + fmt_bandwidth(pinned_bw) +
                         (pin.rate_observed ? ", the pinned rate seen in this trace"
                                            : ", an assumed PCIe 4 x16 rate: no pinned copy "
                                              "in the trace measures one") +
                         "): " + fmt_duration(lost) + " to save"});
  if (tc.h2d.count) ch.evidence.push_back({dir_line("host-to-device", tc.h2d)});
  if (tc.d2h.count) ch.evidence.push_back({dir_line("device-to-host", tc.d2h)});
  if (pageable > 0) {
    std::string line = fmt_percent(static_cast<double>(pageable) / bytes) +
                       " of the bytes moved to/from pageable host memory (not allocated with "
                       "cudaMallocHost/cudaHostAlloc): staged through a bounce buffer, cannot "
                       "overlap compute";
    if (map.pinned_allocations() == 0)
      line +=
          "; no pinned allocation appears in the trace (one made before tracing began "
          "would not)";
    ch.evidence.push_back({line});
  }
  if (std::string sites = call_sites_line(ctx, tc.idx); !sites.empty())
    ch.evidence.push_back({sites});
  ch.evidence.push_back({"largest at " + fmt_rel(ctx.rel(big.ts)) + ": " +
                             std::string(ctx.rows.api_name(big.api)) + " of " +
                             fmt_bytes(ctx.rows.ext(big).bytes) + " took " + fmt_duration(big.dur),
                         ctx.rel(big.ts)});
  if (tc.waited > 0) {
    ch.evidence.push_back({fmt_count(tc.waited) +
                           " synchronous copies first waited for kernels "
                           "queued before them (their time includes that wait)"});
  }
  ch.fix = mostly_pageable
               ? "pin host buffers (cudaMallocHost / pin_memory=True in the DataLoader) and copy "
                 "with cudaMemcpyAsync / non_blocking=True on a side stream so copies overlap "
                 "compute"
               : "overlap copies with compute (cudaMemcpyAsync on a separate stream, prefetch "
                 "the next batch while this one runs), or move less data per step";
  // The user's own line, where the calls came from Python: the fix starts there.
  if (std::string site = top_python_site(ctx, tc.idx); !site.empty())
    ch.fix = "at " + site + ": " + ch.fix;
  ch.metrics = {{"copy_ns", static_cast<double>(tc.ns)},
                {"copy_share_of_api", api_share},
                {"h2d_bytes", static_cast<double>(tc.h2d.bytes)},
                {"d2h_bytes", static_cast<double>(tc.d2h.bytes)},
                {"pageable_bytes", static_cast<double>(pageable)},
                // estimate_pinning's figures: the audit's transfer lever reads them back.
                {"pageable_ns", static_cast<double>(pin.pageable_ns)},
                {"pinning_returns_ns", static_cast<double>(pin.returns_ns)},
                {"pinned_at_ns", static_cast<double>(pin.at_pinned_ns)},
                {"pinned_bytes_per_s", pin.pinned_bytes_per_s},
                {"pinned_rate_observed", pin.rate_observed ? 1.0 : 0.0},
                {"async_returns_ns", static_cast<double>(tc.sync_pinned_ns)}};
  out.push_back(std::move(ch));
}

}  // namespace

void detect_transfer_bound(const Context& ctx, std::vector<Chain>& out) {
  const AddressMap map = AddressMap::build(ctx.rows, ctx.rows.memory_calls);
  std::map<uint32_t, ThreadCopies> worst;  // per process, the thread copying the longest
  for (const ThreadSummary& t : ctx.joins.threads) {
    ThreadCopies tc = collect(ctx, t, map);
    if (tc.ns <= 0) continue;
    ThreadCopies& cur = worst[t.pid];
    if (tc.ns > cur.ns) cur = tc;
  }
  for (const auto& [pid, tc] : worst) {
    // Transfer-bound means copies dominate the GPU API time, or come from pageable memory; a
    // pinned async upload that returns in microseconds is the healthy pattern.
    const uint64_t bytes = tc.h2d.bytes + tc.d2h.bytes;
    const uint64_t pageable = tc.h2d.pageable_bytes + tc.d2h.pageable_bytes;
    const double api_share = tc.t->api_ns > 0 ? static_cast<double>(tc.ns) / tc.t->api_ns : 0;
    if (api_share >= 0.2 || pageable * 2 > bytes) one_thread(ctx, tc, map, out);
  }
}

}  // namespace gpuwhy::analysis
