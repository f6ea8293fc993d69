// SPDX-License-Identifier: Apache-2.0
// The memory half of the audit: live device memory over time from the allocation and free calls,
// by allocation site, and which held allocations no copy or memset ever touched.
//
// One chronological sweep per process over its allocations, frees and copies/memsets, with the
// live allocations in an address-ordered map: a free or a copy endpoint finds its allocation by
// address at the time it happened, so an address reused after a free is a new allocation.
//
// A caching allocator's segments (PyTorch's CUDACachingAllocator and the like) are told apart by
// who allocated them: a frame naming an allocator (names_allocator), for an allocation of at
// least kSegmentMinBytes. They are summed as the process's reserve (AllocatorReserve) and their
// site is the "reserve" pattern, never "growing" or an untouched candidate: the allocator hands
// pieces of them to tensors with no runtime call, so neither their growth nor the absence of
// copies into their first bytes says anything of the program's own buffers.
#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <string_view>
#include <unordered_map>

#include "analysis/audit.hpp"

namespace gpuwhy::analysis {
namespace {

// An allocation allocated in the first tenth of the process's window is "held from the start"
// (weights, optimizer state); later ones that stay are growth.
constexpr double kEarlyFraction = 0.1;
// A site needs this many allocations to show a pattern over time.
constexpr uint64_t kPatternMin = 3;
constexpr size_t kTimelinePoints = 100;
// The smallest segment a caching allocator reserves: PyTorch's small pool and its expandable
// segments' pages are 2 MiB, its large-pool segments 20 MiB or more, all multiples of 2 MiB.
// Smaller allocations from an allocator's frame are ordinary sites.
constexpr uint64_t kSegmentMinBytes = 2ull << 20;
// Segment allocations (or frees) closer than this are one step of growth (or one sweep).
constexpr int64_t kReserveStepGapNs = 10'000'000;
// Growth steps in the window's last half, with no sweep after them, that make it still growing.
constexpr size_t kStillGrowingSteps = 3;

struct Alloc {
  uint64_t lo = 0, bytes = 0;
  int64_t at = 0;
  int64_t freed = -1;  // -1: live at the window's end
  int32_t site = 0;    // index into the process's site names
  bool pinned_host = false;
  bool touched = false;  // a copy or memset read or wrote it while it was live
  bool reserve = false;  // a caching allocator's segment
};

// What a sweep event is, in the order events at the same ns apply: a buffer is allocated before
// a copy into it, and a copy out of it comes before its free.
enum class Ev : uint8_t { Alloc = 0, Use = 1, Free = 2 };
struct Event {
  int64_t ts;
  Ev kind;
  uint64_t addr;
  size_t idx;  // Alloc: into allocs; Free, Use: unused
};

// The allocator frame of an allocation, when one of its frames names an allocator: the native
// call site (trace --stacks), else the Python line's file and function. Empty otherwise.
std::string allocator_frame(const TraceRows& rows, const CallRow& c) {
  const CallExt& e = rows.ext(c);
  if (e.stack_id >= 0)
    if (auto it = rows.call_sites.find(e.stack_id);
        it != rows.call_sites.end() && names_allocator(it->second))
      return it->second;
  if (e.pystack_id >= 0)
    if (auto it = rows.python_sites.find(e.pystack_id);
        it != rows.python_sites.end() &&
        names_allocator(it->second.file + " " + it->second.function))
      return it->second.text();
  return {};
}

std::string site_of(const TraceRows& rows, const CallRow& c) {
  const CallExt& e = rows.ext(c);
  if (e.pystack_id >= 0)
    if (auto it = rows.python_sites.find(e.pystack_id); it != rows.python_sites.end())
      return it->second.text();
  if (e.stack_id >= 0)
    if (auto it = rows.call_sites.find(e.stack_id); it != rows.call_sites.end()) return it->second;
  return rows.api(c.api).name + " (no stack recorded)";
}

struct PerProcess {
  std::vector<Alloc> allocs;
  std::vector<Event> events;
  std::vector<std::string> sites;
  std::unordered_map<std::string, int32_t> site_ids;
  int64_t first = INT64_MAX, last = INT64_MIN;
  int32_t site(const std::string& s) {
    auto [it, fresh] = site_ids.try_emplace(s, static_cast<int32_t>(sites.size()));
    if (fresh) sites.push_back(s);
    return it->second;
  }
};

std::vector<MemoryPoint> downsample(const std::vector<MemoryPoint>& all, int64_t from, int64_t to) {
  if (all.size() <= kTimelinePoints || to <= from) return all;
  std::vector<MemoryPoint> out;
  const int64_t step = std::max<int64_t>(1, (to - from) / static_cast<int64_t>(kTimelinePoints));
  for (const MemoryPoint& p : all) {
    const int64_t slot = from + (p.at_ns - from) / step * step;
    if (!out.empty() && out.back().at_ns == slot) {
      out.back().live_bytes = std::max(out.back().live_bytes, p.live_bytes);
    } else {
      out.push_back({slot, p.live_bytes});
    }
  }
  return out;
}

ProcessMemory summarize(PerProcess& p, int64_t trace_start) {
  ProcessMemory m;
  std::stable_sort(p.events.begin(), p.events.end(), [](const Event& a, const Event& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.kind < b.kind;
  });
  std::map<uint64_t, size_t> live;  // lo -> allocation
  uint64_t live_bytes = 0, pinned = 0;
  AllocatorReserve& r = m.reserve;
  std::map<std::string, uint64_t> reserve_sites;  // segments per allocator frame
  int64_t last_reserve_ts = INT64_MIN;
  bool last_was_growth = false;
  // A segment reserved (+1) or freed (-1): the reserve's bytes, its peak, and its steps.
  auto reserve_change = [&](const Alloc& a, int64_t ts, bool grow) {
    if (grow) {
      r.bytes += a.bytes;
      ++r.segments;
      ++r.reserved_segments;
      ++reserve_sites[p.sites[static_cast<size_t>(a.site)]];
    } else {
      r.bytes -= a.bytes;
      --r.segments;
      ++r.released_segments;
    }
    if (r.bytes > r.peak_bytes) {
      r.peak_bytes = r.bytes;
      r.peak_segments = r.segments;
      r.peak_at_ns = ts - trace_start;
    }
    std::vector<ReserveStep>& steps = grow ? r.growth : r.sweeps;
    if (steps.empty() || last_was_growth != grow || ts - last_reserve_ts > kReserveStepGapNs)
      steps.push_back({ts - trace_start, 0, 0, 0});
    ++steps.back().segments;
    steps.back().bytes += a.bytes;
    steps.back().reserved_after = r.bytes;
    last_reserve_ts = ts;
    last_was_growth = grow;
  };
  std::vector<MemoryPoint> points;
  bool started = false;
  auto containing = [&](uint64_t addr) -> Alloc* {
    auto it = live.upper_bound(addr);
    if (it == live.begin()) return nullptr;
    --it;
    Alloc& a = p.allocs[it->second];
    return addr < a.lo + a.bytes ? &a : nullptr;
  };
  for (const Event& e : p.events) {
    if (!started && e.ts >= p.first) {
      m.live_start = live_bytes;  // what was allocated before the window
      started = true;
    }
    switch (e.kind) {
      case Ev::Alloc: {
        Alloc& a = p.allocs[e.idx];
        if (auto old = live.find(a.lo); old != live.end()) {
          // The same address handed out again with no free seen: the free was not recorded.
          Alloc& prev = p.allocs[old->second];
          prev.freed = e.ts;
          (prev.pinned_host ? pinned : live_bytes) -= prev.bytes;
          if (prev.reserve) reserve_change(prev, e.ts, false);
        }
        live[a.lo] = e.idx;
        (a.pinned_host ? pinned : live_bytes) += a.bytes;
        if (a.reserve) reserve_change(a, e.ts, true);
        ++m.allocations;
        break;
      }
      case Ev::Use:
        if (Alloc* a = containing(e.addr)) a->touched = true;
        break;
      case Ev::Free:
        if (auto it = live.find(e.addr); it != live.end()) {
          Alloc& a = p.allocs[it->second];
          a.freed = e.ts;
          (a.pinned_host ? pinned : live_bytes) -= a.bytes;
          if (a.reserve) reserve_change(a, e.ts, false);
          live.erase(it);
        }
        break;
    }
    m.pinned_host_peak = std::max(m.pinned_host_peak, pinned);
    if (live_bytes > m.peak) {
      m.peak = live_bytes;
      m.peak_at_ns = e.ts - trace_start;
    }
    if (e.kind != Ev::Use) points.push_back({e.ts - trace_start, live_bytes});
  }
  if (!started) m.live_start = live_bytes;
  m.live_end = live_bytes;
  m.timeline = downsample(points, p.first - trace_start, p.last - trace_start);
  if (r.reserved_segments > 0) {
    r.site = std::max_element(reserve_sites.begin(), reserve_sites.end(), [](auto& a, auto& b) {
               return a.second < b.second;
             })->first;
    // Still growing: enough growth steps in the last half, and no sweep after the first of them.
    const int64_t mid = p.first + (p.last - p.first) / 2 - trace_start;
    size_t late = 0;
    int64_t first_late = INT64_MAX;
    for (const ReserveStep& g : r.growth) {
      if (g.at_ns < mid) continue;
      ++late;
      first_late = std::min(first_late, g.at_ns);
    }
    const bool swept_after =
        std::any_of(r.sweeps.begin(), r.sweeps.end(),
                    [&](const ReserveStep& w) { return w.at_ns > first_late; });
    r.still_growing = late >= kStillGrowingSteps && !swept_after;
  }

  // Sites: what each allocation did over the window. Freed in its last tenth counts as kept to
  // the end (a program's own clean-up at exit frees everything).
  const int64_t len = p.last - p.first;
  const int64_t early = p.first + static_cast<int64_t>(kEarlyFraction * double(len));
  const int64_t late = p.last - static_cast<int64_t>(kEarlyFraction * double(len));
  struct Tally {
    MemorySite s;
    uint64_t held = 0, growing = 0, churned = 0;  // from the start / later / freed early
    uint64_t reserve = 0;                         // a caching allocator's segments
  };
  std::vector<Tally> t(p.sites.size());
  for (const Alloc& a : p.allocs) {
    if (a.pinned_host) continue;
    Tally& x = t[static_cast<size_t>(a.site)];
    ++x.s.allocs;
    x.s.bytes_allocated += a.bytes;
    if (a.freed >= 0) ++x.s.frees;
    if (a.reserve) {
      // The allocator's, not the program's: kept or not, never growth or a candidate to free.
      ++x.reserve;
      if (a.freed < 0 || (a.freed >= late && a.at < late)) x.s.kept_bytes += a.bytes;
      continue;
    }
    if (a.freed >= 0 && (a.freed < late || a.at >= late)) {  // freed within the window
      ++x.churned;
      continue;
    }
    x.s.kept_bytes += a.bytes;
    ++(a.at <= early ? x.held : x.growing);
    if (!a.touched) {
      ++x.s.untouched_allocs;
      x.s.untouched_bytes += a.bytes;
    }
  }
  for (size_t k = 0; k < t.size(); ++k) {
    Tally& x = t[k];
    if (x.s.allocs == 0) continue;
    x.s.site = p.sites[k];
    if (x.reserve > 0)
      x.s.pattern = "reserve";
    else if (x.growing >= kPatternMin && x.growing >= x.churned)
      x.s.pattern = "growing";
    else if (x.churned >= kPatternMin && x.churned * 2 >= x.s.allocs)
      x.s.pattern = "per_step";
    else if (x.held > 0 && x.growing == 0 && x.churned == 0)
      x.s.pattern = "held";
    else if (x.churned == x.s.allocs)
      x.s.pattern = "freed";  // too few to call it a pattern
    else
      x.s.pattern = "mixed";
    m.sites.push_back(std::move(x.s));
  }
  std::sort(m.sites.begin(), m.sites.end(), [](const MemorySite& a, const MemorySite& b) {
    if (a.kept_bytes != b.kept_bytes) return a.kept_bytes > b.kept_bytes;
    if (a.bytes_allocated != b.bytes_allocated) return a.bytes_allocated > b.bytes_allocated;
    return a.site < b.site;
  });
  return m;
}

}  // namespace

bool names_allocator(std::string_view frame) {
  // PyTorch (c10::cuda::CUDACachingAllocator, c10::hip::HIPCachingAllocator, mangled or not;
  // torch.cuda.caching_allocator_alloc and empty_cache in torch/cuda/memory.py), CuPy
  // (MemoryPool), RAPIDS RMM (pool_memory_resource), XLA/TensorFlow (BFCAllocator).
  static constexpr std::array<std::string_view, 6> kNames = {
      "cachingallocator", "caching_allocator",    "torch/cuda/memory.py",
      "memorypool",       "pool_memory_resource", "bfcallocator"};
  std::string low(frame);
  for (char& ch : low) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return std::any_of(kNames.begin(), kNames.end(),
                     [&](std::string_view n) { return low.find(n) != std::string::npos; });
}

std::vector<std::pair<uint32_t, ProcessMemory>> audit_memory(const TraceRows& rows) {
  std::map<uint32_t, PerProcess> by_pid;
  // The window of each process: its first to last GPU call.
  for (const CallRow& c : rows.calls) {
    PerProcess& p = by_pid[c.pid];
    p.first = std::min(p.first, c.ts);
    p.last = std::max(p.last, c.end());
  }
  for (const CallRow& c : rows.memory_calls) {
    const CallExt& e = rows.ext(c);
    if (e.ret != 0 || e.addr == 0) continue;
    const ApiMeta& m = rows.api(c.api);
    PerProcess& p = by_pid[c.pid];
    if (c.cat == Category::Alloc && e.bytes > 0) {
      Alloc a{e.addr, e.bytes, c.ts};
      a.pinned_host = m.host_alloc;
      std::string frame;
      if (!a.pinned_host && e.bytes >= kSegmentMinBytes) frame = allocator_frame(rows, c);
      a.reserve = !frame.empty();
      a.site = p.site(a.reserve ? frame : site_of(rows, c));
      p.events.push_back({c.ts, Ev::Alloc, e.addr, p.allocs.size()});
      p.allocs.push_back(a);
    } else if (c.cat == Category::Free) {
      p.events.push_back({c.end(), Ev::Free, e.addr, 0});
    }
  }
  // Copies and memsets touch their endpoints (a copy: destination addr, source addr2).
  for (const CallRow& c : rows.calls) {
    if (c.cat != Category::Copy && c.cat != Category::Memset) continue;
    auto it = by_pid.find(c.pid);
    if (it == by_pid.end() || it->second.allocs.empty()) continue;
    const CallExt& e = rows.ext(c);
    if (e.addr) it->second.events.push_back({c.ts, Ev::Use, e.addr, 0});
    if (e.addr2 && c.cat == Category::Copy)
      it->second.events.push_back({c.ts, Ev::Use, e.addr2, 0});
  }
  std::vector<std::pair<uint32_t, ProcessMemory>> out;
  for (auto& [pid, p] : by_pid) {
    if (p.allocs.empty()) continue;
    if (p.first > p.last) p.first = p.last = p.allocs.front().at;
    out.emplace_back(pid, summarize(p, rows.window.trace_start_ns));
  }
  return out;
}

}  // namespace gpuwhy::analysis
