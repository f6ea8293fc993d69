// SPDX-License-Identifier: Apache-2.0
// I/O stalls: a thread that issues GPU work spends time in slow file/pipe/socket syscalls (the
// agent records syscalls over a threshold, 1 ms by default) and waits for the disk. While it
// reads a batch or writes a checkpoint, nothing is launched.
#include <algorithm>
#include <map>

#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

struct Io {
  const ThreadSummary* t = nullptr;
  int64_t ns = 0;
  uint64_t calls = 0;
  std::map<uint32_t, std::pair<uint64_t, int64_t>> by_nr;  // nr -> (calls, ns)
  int64_t longest = 0, longest_at = 0, first = -1, last = -1;
  uint32_t longest_nr = 0;
};

Io collect(const Context& ctx, const ThreadSummary& t) {
  Io io;
  io.t = &t;
  auto [b, e] = Joins::range(ctx.joins.syscalls, t.tid);
  for (size_t k = b; k < e; ++k) {
    const SyscallRow& s = ctx.rows.syscalls[k];
    if (!is_io_syscall(ctx.rows, s.nr)) continue;
    const int64_t ns = overlap_ns(s.ts, s.end(), t.first_ns, t.last_ns);
    if (ns <= 0) continue;
    io.ns += ns;
    ++io.calls;
    auto& [n, total] = io.by_nr[s.nr];
    ++n;
    total += ns;
    if (io.first < 0) io.first = s.ts;
    io.last = s.end();
    if (ns > io.longest) {
      io.longest = ns;
      io.longest_at = s.ts;
      io.longest_nr = s.nr;
    }
  }
  return io;
}

void one_thread(const Context& ctx, const Io& io, std::vector<Chain>& out) {
  const ThreadSummary& t = *io.t;
  Chain ch = ctx.thread_chain(t, "io_stall", "I/O on the GPU dispatch thread", io.ns);
  ch.first_ns = ctx.rel(std::max(io.first, t.first_ns));
  ch.last_ns = ctx.rel(std::min(io.last, t.last_ns));
  ch.summary = ctx.who(ch.thread) + " spends " + fmt_percent(ch.share()) +
               " of its time in slow I/O syscalls instead of launching GPU work";

  std::vector<std::pair<int64_t, uint32_t>> order;
  for (const auto& [nr, v] : io.by_nr) order.emplace_back(v.second, nr);
  std::sort(order.rbegin(), order.rend());
  std::string top;
  for (size_t i = 0; i < order.size() && i < 4; ++i) {
    if (!top.empty()) top += ", ";
    const auto& [n, ns] = io.by_nr.at(order[i].second);
    top += ctx.rows.syscall_name(order[i].second) + " " + fmt_count(n) + " x " + fmt_duration(ns);
  }
  ch.evidence.push_back({fmt_count(io.calls) + " slow I/O syscalls, " + fmt_duration(io.ns) + " (" +
                         fmt_percent(ch.share()) + " of " + fmt_duration(t.span_ns()) +
                         "): " + top});
  // Disk requests the thread itself issued (reads it waits for, direct or synchronous writes).
  auto [bb, be] = Joins::range(ctx.joins.block_io, t.tid);
  std::vector<int64_t> lat;
  uint64_t bytes = 0;
  for (size_t k = bb; k < be; ++k) {
    const BlockIoRow& r = ctx.rows.block_io[k];
    if (r.end() < t.first_ns || r.ts >= t.last_ns) continue;
    lat.push_back(r.dur);
    bytes += r.bytes;
  }
  if (!lat.empty()) {
    std::vector<int64_t> tmp = lat;
    ch.evidence.push_back({"block I/O it issued: " + fmt_count(lat.size()) + " requests, " +
                           fmt_bytes(bytes) + ", latency p50 " + fmt_duration(percentile(tmp, 50)) +
                           ", p99 " + fmt_duration(percentile(tmp, 99))});
  }
  ch.evidence.push_back({"longest at " + fmt_rel(ctx.rel(io.longest_at)) + ": " +
                             ctx.rows.syscall_name(io.longest_nr) + " " + fmt_duration(io.longest),
                         ctx.rel(io.longest_at)});
  ch.fix =
      "move file I/O off the GPU dispatch thread: checkpoints and logs from a background "
      "thread or process (async checkpointing), input through DataLoader workers with "
      "prefetch; keep datasets on fast local storage";
  ch.metrics = {{"io_syscall_ns", static_cast<double>(io.ns)},
                {"io_syscalls", static_cast<double>(io.calls)},
                {"block_io_bytes", static_cast<double>(bytes)}};
  out.push_back(std::move(ch));
}

}  // namespace

void detect_io_stall(const Context& ctx, std::vector<Chain>& out) {
  std::map<uint32_t, Io> worst;
  for (const ThreadSummary& t : ctx.joins.threads) {
    Io io = collect(ctx, t);
    if (io.ns <= 0) continue;
    Io& cur = worst[t.pid];
    if (io.ns > cur.ns) cur = std::move(io);
  }
  for (const auto& [pid, io] : worst) one_thread(ctx, io, out);
}

}  // namespace gpuwhy::analysis
