// SPDX-License-Identifier: Apache-2.0
// The interpreter's lock: a Python dispatch thread asleep, outside its GPU calls, on a futex
// inside the interpreter's own state (`_PyRuntime`, which holds the GIL's condition variable and
// mutexes on every CPython it reads: budget.cpp, Bucket::Gil). A GPU call made from Python
// releases the GIL (ctypes, torch) and must take it back on return; while another thread runs
// Python, that takes up to the switch interval (5 ms) per call. The holder is the thread that
// woke it (the interpreter hands the lock over) or, for a wait that timed out, the sibling the
// CPU samples found running meanwhile; its Python line comes from its own samples.
#include <algorithm>

#include "analysis/detectors.hpp"
#include "analysis/units.hpp"

namespace gpuwhy::analysis {

void detect_gil(const Context& ctx, std::vector<Chain>& out) {
  for (const ThreadSummary& t : ctx.joins.threads) {
    const ThreadBudget& b = ctx.budget(t);
    const int64_t ns = b[Bucket::Gil];
    if (ns <= 0) continue;
    Chain ch = ctx.thread_chain(t, "gil_contention", "The Python GIL (interpreter lock)", ns);
    ch.first_ns = ctx.rel(t.first_ns);
    ch.last_ns = ctx.rel(t.last_ns);
    const std::vector<Culprit>& holders = b.tasks(Bucket::Gil);
    int64_t named = 0;
    for (const Culprit& c : holders) named += c.ns;
    const Culprit* top = holders.empty() ? nullptr : &holders.front();
    std::string who = "another thread";
    if (top && top->ns * 2 >= ns) {
      const Task holder = ctx.other(top->pid, top->tid, top->comm, true);
      ch.culprit = holder;
      who = holder.label();
    }
    ch.summary = ctx.who(ch.thread) + " waits " + fmt_percent(ch.share()) +
                 " of its time to take the Python GIL back from " + who;
    ch.evidence.push_back(
        {"asleep on the interpreter's lock (a futex inside _PyRuntime) outside "
         "its GPU calls: " +
         fmt_duration(ns) + " (" + fmt_percent(ch.share()) + " of its span)"});
    for (size_t i = 0; i < holders.size() && i < 3; ++i) {
      const Culprit& c = holders[i];
      const Task h = ctx.other(c.pid, c.tid, c.comm, true);
      ch.evidence.push_back({"held by " + h.label() + ": " + fmt_duration(c.ns) +
                             " (inferred: who handed it over when the wait ended, and for waits "
                             "that timed out the CPU samples of the threads running meanwhile)"});
    }
    if (named < ns)
      ch.evidence.push_back({fmt_duration(ns - named) +
                             " with no holder: no other thread of the process handed it over or "
                             "was sampled on a CPU"});
    std::string line;
    if (ch.culprit) {
      line = culprit_python_line(ctx, *ch.culprit, t.first_ns, t.last_ns);
      if (!line.empty()) ch.evidence.push_back({"the holder's Python: " + line});
    }
    ch.fix = "the GIL is the bottleneck, not the GPU: move " +
             (ch.culprit ? ch.culprit->label() + "'s" : std::string("the other threads'")) +
             " pure-Python work" +
             (line.empty() ? std::string() : std::string(" (its line is above)")) +
             " out of the training process (a multiprocessing worker, a separate service), run it "
             "less often or in code that releases the GIL (NumPy, a C extension), or use a "
             "free-threaded Python (3.13t/3.14t); fewer GPU calls per step (CUDA graphs, "
             "torch.compile) also means fewer GIL hand-overs";
    ch.metrics = {{"gil_wait_ns", static_cast<double>(ns)},
                  {"holder_named_ns", static_cast<double>(named)}};
    out.push_back(std::move(ch));
  }
}

}  // namespace gpuwhy::analysis
