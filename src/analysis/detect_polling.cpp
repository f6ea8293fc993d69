// SPDX-License-Identifier: Apache-2.0
// Polling for GPU work: a thread asking again and again whether an event or a stream is done
// (cudaEventQuery / cudaStreamQuery, their driver and HIP twins) instead of blocking until it is.
// Each not-ready answer (600) and the loop between two polls are a wait for the GPU spent on the
// CPU: the time budget gives them to its own bucket (budget.cpp, Bucket::Polling), so the spin
// reads neither as the thread's own host work nor as CPU time it needed. A caching allocator that
// asks once per allocation between launches polls only for the query itself: the gap after it
// ends in a launch, not in the next poll, and stays host work.
#include <algorithm>
#include <map>

#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

// One API's polls on one thread: outermost calls only (a runtime's query calls the driver's).
struct PolledApi {
  uint64_t calls = 0, not_ready = 0;
  int64_t not_ready_ns = 0;  // own time of the not-ready ones
};

struct Polls {
  std::map<uint16_t, PolledApi> by_api;
  std::vector<uint32_t> not_ready;  // call indices, for their call sites
  int64_t first_ts = -1, last_end = -1;
};

Polls collect_polls(const Context& ctx, const ThreadSummary& t) {
  Polls p;
  for (size_t i = t.call_begin; i < t.call_end; ++i) {
    if (!ctx.joins.bits[i]) continue;  // nested
    const CallRow& c = ctx.rows.calls[i];
    if (c.cat != Category::Poll) continue;
    PolledApi& a = p.by_api[c.api];
    ++a.calls;
    if (c.ext == kNoExt || ctx.rows.ext(c).ret != kNotReadyRet) continue;
    ++a.not_ready;
    a.not_ready_ns += c.dur;
    p.not_ready.push_back(static_cast<uint32_t>(i));
    if (p.first_ts < 0) p.first_ts = c.ts;
    p.last_end = std::max(p.last_end, c.end());
  }
  return p;
}

}  // namespace

void detect_polling(const Context& ctx, std::vector<Chain>& out) {
  for (const ThreadSummary& t : ctx.joins.threads) {
    const ThreadBudget& b = ctx.budget(t);
    const int64_t ns = b[Bucket::Polling];
    if (ns <= 0) continue;
    const Polls polls = collect_polls(ctx, t);
    if (polls.not_ready.empty()) continue;
    Chain ch = ctx.thread_chain(t, "gpu_polling", "Polling for GPU work", ns);
    // Spinning costs a CPU core, not GPU time by itself: the wait would be there blocked too.
    ch.cap = Severity::Medium;
    ch.first_ns = ctx.rel(polls.first_ts);
    ch.last_ns = ctx.rel(polls.last_end);
    // The API polled the most, for the summary and the fix.
    const auto top = std::max_element(
        polls.by_api.begin(), polls.by_api.end(),
        [](const auto& a, const auto& c) { return a.second.not_ready < c.second.not_ready; });
    const std::string api = ctx.rows.api(top->first).name;
    uint64_t calls = 0, not_ready = 0;
    for (const auto& [id, a] : polls.by_api) {
      calls += a.calls;
      not_ready += a.not_ready;
    }
    const double seconds =
        static_cast<double>(std::max<int64_t>(polls.last_end - polls.first_ts, 1)) / 1e9;
    ch.summary = ctx.who(ch.thread) + " spins on " + api + " for " + fmt_percent(ch.share()) +
                 " of its time, waiting for the GPU on a CPU core";
    ch.evidence.push_back({"polling for GPU work: " + fmt_duration(ns) + " (" +
                           fmt_percent(ch.share()) +
                           " of its span), inside polls that returned not ready (600) and on the "
                           "CPU between one such poll and the next"});
    for (const auto& [id, a] : polls.by_api) {
      if (a.not_ready == 0) continue;
      ch.evidence.push_back({std::string(ctx.rows.api(id).name) + ": " + fmt_count(a.calls) +
                             " calls, " + fmt_count(a.not_ready) + " not ready (" +
                             fmt_rate(static_cast<double>(a.not_ready) / seconds) + "), " +
                             fmt_duration(a.not_ready_ns) + " inside them"});
    }
    ch.evidence.push_back(
        {"the CPU it burns: that time is spent on a CPU (less any sleep inside the polls "
         "themselves), a core the job's other threads (data loading, the next step's dispatch) "
         "cannot use meanwhile"});
    if (std::string sites = call_sites_line(ctx, polls.not_ready); !sites.empty())
      ch.evidence.push_back({sites});
    const std::string site = top_python_site(ctx, polls.not_ready);
    ch.fix = "block instead of spinning" + (site.empty() ? std::string() : " at " + site) +
             ": wait with cudaEventSynchronize / cudaStreamSynchronize on an event created with "
             "cudaEventBlockingSync (cudaEventCreateWithFlags), or set "
             "cudaDeviceScheduleBlockingSync (cudaSetDeviceFlags), so the thread sleeps until the "
             "GPU is done and its core is free; or do useful work between polls (queue the next "
             "step, prepare inputs) and poll less often";
    ch.metrics = {{"polling_ns", static_cast<double>(ns)},
                  {"polls", static_cast<double>(calls)},
                  {"not_ready_polls", static_cast<double>(not_ready)},
                  {"polling_idle_ns", static_cast<double>(b.idle(Bucket::Polling))}};
    out.push_back(std::move(ch));
  }
}

}  // namespace gpuwhy::analysis
