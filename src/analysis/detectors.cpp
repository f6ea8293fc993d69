// SPDX-License-Identifier: Apache-2.0
#include "analysis/detectors.hpp"

#include <algorithm>
#include <map>

#include "analysis/units.hpp"

namespace gpuwhy::analysis {
namespace {

constexpr Detector kDetectors[] = {
    {"cpu_contention", "GPU-API threads preempted by another process (named)",
     detect_cpu_contention},
    {"lock_wait", "dispatch thread asleep until a sibling thread of its process woke it",
     detect_lock_wait},
    {"hidden_sync", "syncs / small device-to-host reads inside the step loop", detect_hidden_sync},
    {"transfer_bound", "host<->device copies take a large share; pageable host memory",
     detect_transfer_bound},
    {"alloc_churn", "device/pinned allocations and frees inside the loop", detect_alloc_churn},
    {"rate_drop", "launch rate fell and stayed down; what changed at that point", detect_rate_drop},
    {"io_stall", "file I/O and block I/O on a GPU-API thread", detect_io_stall},
    {"memory_reclaim", "direct reclaim (memory pressure) stalling GPU-API threads", detect_reclaim},
    {"cpu_quota", "GPU-API threads throttled by their cgroup's CPU quota", detect_cpu_quota},
    {"page_faults", "the kernel working for a GPU-API thread outside its calls (page faults)",
     detect_page_faults},
    {"gil_contention", "a Python GPU thread waiting to take the GIL back from another thread",
     detect_gil},
    {"tcp_retransmits", "TCP retransmits during collectives", detect_tcp_retrans},
    {"nccl_straggler", "one rank arrives last at collectives; the others wait for it",
     detect_nccl_straggler},
    {"gpu_polling", "a thread spinning on cudaEventQuery / cudaStreamQuery until the GPU is done",
     detect_polling},
};

}  // namespace

std::span<const Detector> detectors() { return kDetectors; }

std::string_view severity_name(Severity s) {
  switch (s) {
    case Severity::High:
      return "HIGH";
    case Severity::Medium:
      return "MEDIUM";
    case Severity::Low:
      return "LOW";
  }
  return "?";
}

std::string Task::label() const {
  if (!cgroup.empty()) return "cgroup " + cgroup + "'s CPU quota";
  const std::string name = comm.empty() ? "?" : comm;
  if (tid != 0 && tid != pid) return name + " (tid " + std::to_string(tid) + ")";
  return name + " (pid " + std::to_string(pid) + ")";
}

Task Context::process(uint32_t pid) const { return Task{pid, 0, rows.process_name(pid)}; }

Task Context::thread(uint32_t pid, uint32_t tid) const {
  return Task{pid, tid, rows.thread_name(tid)};
}

Chain Context::thread_chain(const ThreadSummary& t, std::string kind, std::string title,
                            int64_t lost_ns) const {
  Chain ch;
  ch.kind = std::move(kind);
  ch.title = std::move(title);
  ch.process = process(t.pid);
  ch.thread = thread(t.pid, t.tid);
  ch.lost_ns = lost_ns;
  ch.span_ns = t.span_ns();
  return ch;
}

Task Context::other(uint32_t pid, uint32_t tid, uint32_t comm, bool as_thread) const {
  // A process is named by its own name when the trace knows it, not by the name of whichever of
  // its threads the scheduler row saw ("cuda-EvtHandlr (pid 1000)" would name neither).
  Task t{pid, as_thread ? tid : 0, std::string(rows.string(comm))};
  if (!as_thread && pid != tid) {
    if (std::string p = rows.process_name(pid); p != "?") t.comm = p;
  }
  if (t.comm.empty()) t.comm = as_thread ? rows.thread_name(tid) : rows.process_name(pid);
  if (pid == 0 && tid == 0 && t.comm == "?") t.comm = "swapper";
  return t;
}

std::string Context::who(const Task& thread) const {
  if (thread.tid == 0 || thread.tid == thread.pid) return process(thread.pid).label();
  return thread.label() + " of " + process(thread.pid).label();
}

const ThreadSummary* Context::dispatch_thread(uint32_t pid) const {
  const ThreadSummary* best = nullptr;
  for (const ThreadSummary& t : joins.threads) {
    if (t.pid != pid) continue;
    if (!best || t.launches > best->launches ||
        (t.launches == best->launches && t.calls() > best->calls()))
      best = &t;
  }
  return best;
}

std::pair<int64_t, int64_t> Context::process_span(uint32_t pid) const {
  int64_t lo = 0, hi = 0;
  bool any = false;
  for (const ThreadSummary& t : joins.threads) {
    if (t.pid != pid) continue;
    lo = any ? std::min(lo, t.first_ns) : t.first_ns;
    hi = any ? std::max(hi, t.last_ns) : t.last_ns;
    any = true;
  }
  return {lo, hi};
}

std::string contention_fix(const Task& victim, const Task& culprit, bool same_process) {
  if (same_process) {
    return "too many busy threads in " + victim.label() +
           ": cap its CPU threads (OMP_NUM_THREADS, torch.set_num_threads, DataLoader "
           "num_workers) and keep a core free for the GPU dispatch thread";
  }
  if (is_kernel_task(culprit.comm)) {
    return "kernel work (" + culprit.comm +
           ") runs on the trainer's CPUs: move IRQs and "
           "kernel threads away (irqbalance, isolcpus/nohz_full) or pin " +
           victim.label() + " to other CPUs (taskset / cpuset)";
  }
  const std::string pid = std::to_string(culprit.pid);
  return "give " + victim.label() + " and " + culprit.label() +
         " separate cores: taskset -a -p -c CPUS " + pid +
         " moves every thread of it (or one cpuset cgroup per job); or lower the priority of "
         "all its threads: for t in /proc/" +
         pid + "/task/*; do renice -n 19 -p ${t##*/}; done (nice is per thread: renice -p " + pid +
         " alone reaches only its main thread)";
}

std::string lock_fix(const Task& sibling) {
  return "shorten what " + sibling.label() +
         " does while holding the lock the dispatch thread waits for: move slow work (I/O, "
         "serialisation, checkpoint writing) out of the critical section, or hand data over "
         "through a lock-free / bounded queue";
}

std::string culprit_list(const Context& ctx, const std::vector<Culprit>& v, int64_t total,
                         bool by_thread, size_t max_items, uint32_t own_pid) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < max_items; ++i) {
    if (!out.empty()) out += ", ";
    // Threads of other processes are named by process; threads of the victim's own by thread.
    const Task t =
        ctx.other(v[i].pid, v[i].tid, v[i].comm, by_thread || (own_pid && v[i].pid == own_pid));
    out += t.label();
    if (is_tracer(t.comm)) out += " (the tracer)";
    const int64_t ns = v[i].ns + v[i].wait_ns;  // a preemptor's run-queue waits count as its own
    out += " " + fmt_duration(ns);
    if (total > 0) out += " (" + fmt_percent(static_cast<double>(ns) / total) + ")";
  }
  return out;
}

bool is_tracer(std::string_view comm) { return comm == "gpuwhy" || comm.starts_with("gpuwhy-"); }

bool is_runtime_helper(std::string_view comm) {
  for (std::string_view p : {"cuda-", "cuda0", "gwsim-", "hip", "rocr", "nccl", "NCCL"}) {
    if (comm.starts_with(p)) return true;
  }
  return false;
}

bool is_io_syscall(const TraceRows& rows, uint32_t nr) {
  static constexpr std::string_view kIo[] = {
      "read",           "write",           "pread64",   "pwrite64",   "readv",
      "writev",         "preadv",          "pwritev",   "preadv2",    "pwritev2",
      "fsync",          "fdatasync",       "sync",      "syncfs",     "sync_file_range",
      "open",           "openat",          "openat2",   "creat",      "close",
      "sendfile",       "copy_file_range", "splice",    "io_submit",  "io_getevents",
      "io_uring_enter", "msync",           "fallocate", "ftruncate",  "truncate",
      "rename",         "renameat",        "renameat2", "unlink",     "unlinkat",
      "stat",           "fstat",           "lstat",     "newfstatat", "statx",
      "getdents64",     "mkdir",           "mkdirat"};
  const std::string name = rows.syscall_name(nr);
  return std::find(std::begin(kIo), std::end(kIo), name) != std::end(kIo);
}

std::vector<CollectiveWait> collective_waits(const Context& ctx) {
  std::vector<CollectiveWait> v;
  for (const ThreadSummary& t : ctx.joins.threads) {
    for (size_t i = t.call_begin; i < t.call_end; ++i) {
      if (!(ctx.joins.bits[i] & call_bits::kCollective)) continue;  // outermost collectives
      const CallRow& c = ctx.rows.calls[i];
      CollectiveWait w{static_cast<uint32_t>(i), c.pid, c.api, c.ts, c.end()};
      for (size_t j = i + 1; j < t.call_end; ++j) {
        if (ctx.joins.nested(j)) continue;
        const Category next = ctx.rows.calls[j].cat;
        if (next == Category::Sync) w.end = std::max(w.end, ctx.rows.calls[j].end());
        if (next != Category::Group) break;  // ncclGroupEnd may sit between the two
      }
      v.push_back(w);
    }
  }
  std::sort(v.begin(), v.end(), [](const CollectiveWait& a, const CollectiveWait& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.call < b.call;
  });
  return v;
}

namespace {

// The Python lines `calls` were made from, costliest first: (time in the calls, calls, site).
struct PySiteCost {
  int64_t ns = 0;
  uint64_t calls = 0;
  std::string site;
};

std::vector<PySiteCost> python_site_costs(const Context& ctx, const std::vector<uint32_t>& calls) {
  std::vector<PySiteCost> v;
  if (ctx.rows.python_sites.empty()) return v;
  std::map<std::string, PySiteCost> by_site;
  for (uint32_t i : calls) {
    const CallRow& c = ctx.rows.calls[i];
    auto it = ctx.rows.python_sites.find(ctx.rows.ext(c).pystack_id);
    if (it == ctx.rows.python_sites.end()) continue;
    PySiteCost& s = by_site[it->second.text()];
    s.ns += c.dur;
    ++s.calls;
  }
  for (auto& [site, cost] : by_site) {
    cost.site = site;
    v.push_back(std::move(cost));
  }
  std::sort(v.begin(), v.end(), [](const PySiteCost& a, const PySiteCost& b) {
    if (a.ns != b.ns) return a.ns > b.ns;
    return a.calls != b.calls ? a.calls > b.calls : a.site < b.site;
  });
  return v;
}

}  // namespace

std::string top_python_site(const Context& ctx, const std::vector<uint32_t>& calls) {
  const std::vector<PySiteCost> v = python_site_costs(ctx, calls);
  return v.empty() ? std::string() : v.front().site;
}

std::string culprit_python_line(const Context& ctx, const Task& culprit, int64_t from, int64_t to) {
  if (ctx.rows.python_sites.empty()) return {};
  std::map<std::string, uint64_t> by_site;
  uint64_t samples = 0;
  auto count = [&](const CpuSampleRow& s) {
    if (s.ts < from || s.ts >= to || s.pid != culprit.pid) return;
    ++samples;
    if (auto it = ctx.rows.python_sites.find(s.pystack_id); it != ctx.rows.python_sites.end())
      ++by_site[it->second.text()];
  };
  if (culprit.tid != 0) {
    auto [b, e] = Joins::range(ctx.joins.cpu_samples, culprit.tid);
    for (size_t k = b; k < e; ++k) count(ctx.rows.cpu_samples[k]);
  } else {
    for (const CpuSampleRow& s : ctx.rows.cpu_samples) count(s);
  }
  // A process that makes no GPU call (a multiprocessing data-loader worker) has its own list.
  for (const CpuSampleRow& s : ctx.rows.worker_samples)
    if (culprit.tid == 0 || s.tid == culprit.tid) count(s);
  if (by_site.empty()) return {};
  std::vector<std::pair<uint64_t, std::string>> v;
  for (auto& [site, n] : by_site) v.emplace_back(n, site);
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  const auto share = [&](uint64_t n) {
    return fmt_percent(static_cast<double>(n) / static_cast<double>(samples));
  };
  std::string line = culprit.label() + " was on the CPU in " + v[0].second + " (" +
                     share(v[0].first) + " of its " + fmt_count(samples) + " samples)";
  if (v.size() > 1) line += ", then " + v[1].second + " (" + share(v[1].first) + ")";
  return line;
}

std::string call_sites_line(const Context& ctx, const std::vector<uint32_t>& calls) {
  // Python lines first (what the person who wrote them can change), by time in the calls.
  std::string python;
  const std::vector<PySiteCost> py = python_site_costs(ctx, calls);
  for (size_t i = 0; i < py.size() && i < 3; ++i) {
    if (i) python += ", ";
    python += py[i].site + " (" + fmt_count(py[i].calls) + " of " + fmt_count(calls.size()) +
              " calls, " + fmt_duration(py[i].ns) + ")";
  }
  std::string native;
  if (!ctx.rows.call_sites.empty()) {
    std::vector<int32_t> ids;
    ids.reserve(calls.size());
    for (uint32_t i : calls) ids.push_back(ctx.rows.ext(ctx.rows.calls[i]).stack_id);
    native = call_sites_line(ctx, ids);
  }
  if (python.empty()) return native;
  if (native.empty()) return "called from: " + python;
  return "called from: " + python + "; natively " + native;
}

std::string call_sites_line(const Context& ctx, const std::vector<int32_t>& stack_ids) {
  if (ctx.rows.call_sites.empty()) return {};
  std::map<std::string, uint64_t> by_site;
  for (int32_t id : stack_ids) {
    auto it = ctx.rows.call_sites.find(id);
    if (it != ctx.rows.call_sites.end()) ++by_site[it->second];
  }
  if (by_site.empty()) return {};
  std::vector<std::pair<uint64_t, std::string>> v;
  for (auto& [site, n] : by_site) v.emplace_back(n, site);
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string out = "called from: ";
  for (size_t i = 0; i < v.size() && i < 3; ++i) {
    if (i) out += ", ";
    out += v[i].second + " (" + fmt_count(v[i].first) + " of " + fmt_count(stack_ids.size()) + ")";
  }
  return out;
}

uint32_t futex_nr(const TraceRows& rows) {
  for (const auto& [nr, name] : rows.syscall_names)
    if (name == "futex") return nr;
  return 202;
}

}  // namespace gpuwhy::analysis
