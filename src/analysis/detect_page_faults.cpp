// SPDX-License-Identifier: Apache-2.0
// The kernel working for the thread: CPU samples that found a GPU thread, outside its GPU calls,
// in kernel code but in no system call (budget.cpp: KernelWork). For a user thread that is page
// faults above all: memory touched for the first time after an allocation (a fresh buffer per
// step, a collate that builds new arrays), copy-on-write after fork, pages the kernel reclaimed.
// Without this the time reads as the thread's own host work ("move work off the dispatch
// thread"), when the fix is to stop allocating. Draws on KernelWork; the samples' fault
// counters say how many faults, and their Python stacks where.
#include <algorithm>

#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {

void detect_page_faults(const Context& ctx, std::vector<Chain>& out) {
  for (const ThreadSummary& t : ctx.joins.threads) {
    const ThreadBudget& b = ctx.budget(t);
    const int64_t ns = b[Bucket::KernelWork];
    if (ns <= 0) continue;
    Chain ch = ctx.thread_chain(t, "page_faults", "Kernel work on the thread (page faults)", ns);
    ch.first_ns = ctx.rel(t.first_ns);
    ch.last_ns = ctx.rel(t.last_ns);
    const bool counted = b.minor_faults >= 0;
    const double secs = static_cast<double>(t.span_ns()) / 1e9;
    std::string faults;
    if (counted)
      faults = fmt_count(static_cast<uint64_t>(b.minor_faults)) + " minor and " +
               fmt_count(static_cast<uint64_t>(b.major_faults)) + " major page faults (" +
               fmt_count(static_cast<uint64_t>(static_cast<double>(b.minor_faults) /
                                               std::max(secs, 1e-9))) +
               " per second)";
    ch.summary = ctx.who(ch.thread) + " spends " + fmt_percent(ch.share()) +
                 " of its time in the kernel outside its GPU calls and syscalls" +
                 (counted ? ": " + faults : std::string(" (page faults, interrupts)"));
    ch.evidence.push_back(
        {"CPU samples in kernel code, in no syscall, outside GPU calls: " + fmt_duration(ns) +
         " (" + fmt_percent(ch.share()) + " of its span, counted as its own host work otherwise)"});
    if (counted) ch.evidence.push_back({faults + " over " + fmt_duration(t.span_ns())});
    std::string where;
    for (const auto& [py, n] : b.kernel_sites) {
      auto it = ctx.rows.python_sites.find(py);
      if (it == ctx.rows.python_sites.end()) continue;
      where = it->second.text();
      ch.evidence.push_back(
          {"where the kernel worked, by its samples: " + where + " (" + fmt_duration(n) + ")"});
      break;
    }
    const bool major = counted && b.major_faults * 10 > b.minor_faults;
    ch.fix = major ? "major faults read pages from disk: keep the data in memory (mlock the "
                     "working set, a larger page cache, no memory limit below the working set)"
                   : "stop touching fresh memory every step" +
                         (where.empty() ? std::string() : " (" + where + ")") +
                         ": allocate the buffers once and reuse them (preallocated arrays, "
                         "out= arguments, a pinned-memory pool), or make faults cheaper with "
                         "transparent huge pages (madvise / MAP_POPULATE)";
    ch.metrics = {{"kernel_work_ns", static_cast<double>(ns)},
                  {"minor_faults", static_cast<double>(b.minor_faults)},
                  {"major_faults", static_cast<double>(b.major_faults)}};
    out.push_back(std::move(ch));
  }
}

}  // namespace gpuwhy::analysis
