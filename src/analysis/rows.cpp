// SPDX-License-Identifier: Apache-2.0
#include "analysis/rows.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <span>

#include "analysis/addr_ranges.hpp"
#include "analysis/launch_timing.hpp"
#include "analysis/parallel.hpp"
#include "store/store.hpp"

namespace gpuwhy::analysis {
namespace {

constexpr std::string_view kHostAllocs[] = {"cudaMallocHost", "cudaHostAlloc", "cuMemAllocHost",
                                            "cuMemAllocHost_v2", "hipHostMalloc"};
constexpr std::string_view kHostFrees[] = {"cudaFreeHost", "cuMemFreeHost", "hipHostFree"};

bool one_of(std::string_view name, std::span<const std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

template <class Row>
bool before_by_tid_ts(const Row& a, const Row& b) {
  return a.tid != b.tid ? a.tid < b.tid : a.ts < b.ts;
}

// Sorts rows known not to be in (tid, ts) order, in O(n) for the usual case: rows arrive nearly
// in time order, so a counting pass by thread followed by a check (and a rare sort) per thread
// beats one big comparison sort.
template <class Row, class A>
void regroup_by_tid_ts(std::vector<Row, A>& v) {
  std::vector<uint32_t> tids;
  tids.reserve(64);
  for (const Row& r : v) tids.push_back(r.tid);
  std::sort(tids.begin(), tids.end());
  tids.erase(std::unique(tids.begin(), tids.end()), tids.end());
  std::unordered_map<uint32_t, size_t> slot;
  slot.reserve(tids.size() * 2);
  for (size_t i = 0; i < tids.size(); ++i) slot[tids[i]] = i;
  std::vector<size_t> start(tids.size() + 1, 0);
  for (const Row& r : v) ++start[slot[r.tid] + 1];
  for (size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
  std::vector<Row, A> out(v.size());
  std::vector<size_t> pos(start.begin(), start.end() - 1);
  for (Row& r : v) out[pos[slot[r.tid]]++] = std::move(r);
  for (size_t i = 0; i < tids.size(); ++i) {
    auto b = out.begin() + static_cast<ptrdiff_t>(start[i]);
    auto e = out.begin() + static_cast<ptrdiff_t>(start[i + 1]);
    if (!std::is_sorted(b, e, before_by_tid_ts<Row>)) std::stable_sort(b, e, before_by_tid_ts<Row>);
  }
  v = std::move(out);
}

template <class Row, class A>
void sort_by_tid_ts(std::vector<Row, A>& v) {
  if (!std::is_sorted(v.begin(), v.end(), before_by_tid_ts<Row>)) regroup_by_tid_ts(v);
}

// What filling in a call needs to know about its API, for every apis.id: a small table read in
// a loop over millions of calls (whose int8_t stores would make the compiler reload
// TraceRows::apis on every one).
class CallFiller {
 public:
  explicit CallFiller(const TraceRows& rows) {
    for (size_t id = 0; id < rows.apis.size(); ++id) {
      const ApiMeta& m = rows.api(static_cast<uint16_t>(id));
      by_api_.push_back({m.cat, m.fixed_dir});
    }
  }
  // The derived fields of a call: its category from the API where the file left it out, and
  // the copy direction an API's name fixes.
  void fill(CallRow& c) const {
    const Api a = c.api < by_api_.size() ? by_api_[c.api] : Api{};
    fill_call(c, a.cat, a.fixed_dir);
  }

 private:
  struct Api {
    Category cat = kUnknownCategory;  // as ApiMeta: unknown_api_meta() for ids without a name
    int8_t fixed_dir = -1;
  };
  std::vector<Api> by_api_;
};

// Fills in memory_calls (taken from the calls for hand-built rows) and sorts them by ts.
void prepare_memory_calls(TraceRows& rows, const CallFiller& filler) {
  for (CallRow& c : rows.memory_calls) filler.fill(c);
  if (rows.memory_calls.empty()) {
    // Hand-built rows: the allocations are among the calls.
    for (CallRow c : rows.calls) {
      filler.fill(c);
      if (c.cat == Category::Alloc || c.cat == Category::Free || c.cat == Category::Init ||
          c.cat == Category::Device)
        rows.memory_calls.push_back(c);
    }
  }
  std::stable_sort(rows.memory_calls.begin(), rows.memory_calls.end(),
                   [](const CallRow& a, const CallRow& b) { return a.ts < b.ts; });
  // A process's NCCL rank, from its communicator set-up (the last one wins).
  for (const CallRow& c : rows.memory_calls) {
    const CallExt& e = rows.ext(c);
    if (c.cat != Category::Init || e.ret != 0 || e.bytes == 0) continue;
    rows.nccl_ranks[c.pid] = {static_cast<uint32_t>(e.addr), static_cast<uint32_t>(e.bytes)};
  }
}

using FilledCalls = TraceRows::CallsFilled;

// Fills in every call: one pass over millions of them, in pieces on every core.
FilledCalls fill_calls(CallRows& calls, const CallFiller& filler) {
  const size_t n = calls.size();
  const size_t pieces = std::max<size_t>(1, std::min<size_t>(n / 65536, 64));
  std::vector<FilledCalls> part(pieces);
  parallel_for(pieces, [&](size_t k) {
    bool sorted = true;  // a local: flags side by side in memory would bounce between cores
    for (size_t i = n * k / pieces; i < n * (k + 1) / pieces; ++i) {
      CallRow& c = calls[i];
      filler.fill(c);
      if (c.cat == Category::Copy && c.dir == static_cast<int8_t>(CopyDir::Default))
        part[k].default_copies.push_back(i);
      // At a piece's start this reads the previous piece's last call: its tid and ts only,
      // which fill() leaves alone.
      if (i > 0 && sorted) sorted = !before_by_tid_ts(c, calls[i - 1]);
    }
    part[k].sorted = sorted;
  });
  FilledCalls all;
  for (const FilledCalls& p : part) {
    all.default_copies.insert(all.default_copies.end(), p.default_copies.begin(),
                              p.default_copies.end());
    all.sorted = all.sorted && p.sorted;
  }
  return all;
}

}  // namespace

Category category_from_name(std::string_view name) {
  return category_of_name(name).value_or(kUnknownCategory);
}

ApiMeta make_api_meta(std::string_view name, std::string_view category) {
  ApiMeta m;
  m.name = std::string(name);
  m.cat = category_from_name(category);
  const ApiInfo* info = find_api(name);
  if (m.cat == kUnknownCategory && info) m.cat = info->category;
  if (info && info->fixed_dir) m.fixed_dir = static_cast<int8_t>(*info->fixed_dir);
  // Launches never wait for the GPU; a copy or memset waits unless it is the …Async variant.
  m.async = m.cat == Category::Launch || m.cat == Category::Graph ||
            m.cat == Category::StreamWait || name.find("Async") != std::string_view::npos;
  m.host_alloc = one_of(name, kHostAllocs);
  m.host_free = one_of(name, kHostFrees);
  m.managed = name.find("Managed") != std::string_view::npos;
  m.device_alloc = m.cat == Category::Alloc && !m.host_alloc && !m.managed;
  return m;
}

std::vector<ApiMeta> catalog_api_table() {
  std::vector<ApiMeta> t;
  for (const ApiInfo& a : api_catalog()) {
    if (a.id >= t.size()) t.resize(a.id + 1u);
    t[a.id] = make_api_meta(a.name, category_name(a.category));
  }
  return t;
}

CallExt make_call_ext(Category cat, uint64_t bytes, uint64_t addr, uint64_t addr2, int32_t ret) {
  // A device selection keeps its ordinal in addr.
  const bool memory = cat == Category::Copy || cat == Category::Memset || cat == Category::Alloc ||
                      cat == Category::Free || cat == Category::Init || cat == Category::Device;
  return memory ? CallExt{bytes, addr, addr2, ret} : CallExt{bytes, 0, 0, ret};
}

const ApiMeta& unknown_api_meta() {
  static const ApiMeta unknown{"?"};
  return unknown;
}

std::string PySite::text() const {
  std::string out = file.substr(file.rfind('/') + 1);
  if (line >= 0) out += ":" + std::to_string(line);
  if (!function.empty()) out += " in " + function;
  if (!source.empty()) out += ": " + source;
  return out;
}

void TraceRows::set_ext(CallRow& c, const CallExt& e) {
  if (e.empty()) {
    c.ext = kNoExt;
    return;
  }
  c.ext = static_cast<uint32_t>(call_ext.size());
  call_ext.push_back(e);
}

bool TraceRows::family_off(std::string_view family) const {
  return std::any_of(families_off.begin(), families_off.end(),
                     [&](const FamilyOff& f) { return f.family == family; });
}

bool TraceRows::entry_only(Category c) const {
  return c != kUnknownCategory && family_off(store::entry_only_family(category_name(c)));
}

LaunchTiming TraceRows::launch_timing() const {
  for (const FamilyOff& f : families_off)
    if (f.family == kLaunchTimingFamily && f.state == "sampled")
      return parse_launch_timing(f.detail);
  return {};
}

bool TraceRows::syscalls_from_scheduler() const {
  return session.abi_version >= 3 && family_off("syscalls");
}

std::string_view TraceRows::string(uint32_t id) const {
  auto it = strings.find(id);
  return it == strings.end() ? std::string_view() : std::string_view(it->second);
}

std::string TraceRows::syscall_name(uint32_t nr) const {
  auto it = syscall_names.find(nr);
  return it == syscall_names.end() ? "syscall " + std::to_string(nr) : it->second;
}

std::string TraceRows::process_name(uint32_t pid) const {
  // pids are reused: prefer the process that started last before the window ends.
  const ProcessRow* best = nullptr;
  for (const ProcessRow& p : processes) {
    if (p.pid != pid || p.comm.empty()) continue;
    if (!best || (p.start_ns <= window.end_ns && p.start_ns > best->start_ns)) best = &p;
  }
  if (best) return best->comm;
  for (const ThreadRow& t : threads)
    if (t.tid == pid && !t.comm.empty()) return t.comm;
  return "?";
}

std::string TraceRows::rank_label(uint32_t pid) const {
  auto it = nccl_ranks.find(pid);
  if (it == nccl_ranks.end()) return {};
  return "rank " + std::to_string(it->second.first) + " of " + std::to_string(it->second.second);
}

std::string TraceRows::thread_name(uint32_t tid) const {
  for (const ThreadRow& t : threads)
    if (t.tid == tid && !t.comm.empty()) return t.comm;
  for (const ProcessRow& p : processes)
    if (p.pid == tid && !p.comm.empty()) return p.comm;
  return "?";
}

namespace {

// What the syscall family records by default (trace --min-syscall-us): slow syscalls only.
constexpr int64_t kSlowSyscallNs = 1'000'000;

// Without the syscall family, a slow syscall is still seen: where it slept, the off-CPU interval
// records the syscall the thread left the CPU in; where it ran (a large write into the page
// cache), the CPU samples record it. Both become the syscall rows the I/O and lock detectors
// read, so explain names futex, read or write in either mode.
//
// One walk over a thread's off-CPU intervals and samples in time order (both sorted by tid, ts):
// consecutive pieces in the same syscall join into one stretch; anything else in between (user
// code, another syscall, a sleep outside one) ends it, and a stretch ends where the next piece
// begins, so rows never overlap. A sample is a point: it extends a stretch by half a period, and
// one alone (no second sample, no sleep in the same syscall) is not placed at all: it says the
// thread spent about a period in that syscall somewhere around it, and a row claiming the time
// after it would take host work between GPU calls away from the detectors that measure it.
// Stretches of 1 ms or more are kept. The tracer's own syscalls (a uretprobe's return trap) are
// not the application's.
void derive_syscalls(TraceRows& rows) {
  if (!rows.syscalls_from_scheduler() || !rows.syscalls.empty()) return;
  struct Stretch {
    int64_t ts = 0, end = 0;
    uint32_t pid = 0, tid = 0;
    int32_t nr = -1;
    uint32_t samples = 0;
    bool slept = false;
    bool last_sample = false;  // its latest piece is a sample
  };
  const OffCpuRows& off = rows.offcpu;
  const std::vector<CpuSampleRow>& smp = rows.cpu_samples;
  const int64_t period = smp.empty() ? 0 : smp.front().dur;
  std::vector<bool> tracer_nr;  // by nr: the uprobe/uretprobe trap syscalls
  for (const auto& [nr, name] : rows.syscall_names) {
    if (name != "uretprobe" && name != "uprobe") continue;
    if (tracer_nr.size() <= nr) tracer_nr.resize(nr + 1);
    tracer_nr[nr] = true;
  }
  auto app_nr = [&](int32_t nr) {
    return nr >= 0 && !(static_cast<size_t>(nr) < tracer_nr.size() && tracer_nr[nr]) ? nr : -1;
  };
  auto before = [](uint32_t tid_a, int64_t ts_a, uint32_t tid_b, int64_t ts_b) {
    return tid_a != tid_b ? tid_a < tid_b : ts_a <= ts_b;
  };
  std::optional<Stretch> cur;
  auto close = [&](const Stretch* next) {
    if (!cur) return;
    if (next && next->tid == cur->tid) cur->end = std::min(cur->end, next->ts);
    if (cur->nr >= 0 && (cur->slept || cur->samples >= 2) && cur->end - cur->ts >= kSlowSyscallNs)
      rows.syscalls.push_back(
          {cur->ts, cur->end - cur->ts, cur->pid, cur->tid, static_cast<uint32_t>(cur->nr), 0});
    cur.reset();
  };
  for (size_t i = 0, j = 0; i < off.size() || j < smp.size();) {
    Stretch p;
    if (j == smp.size() ||
        (i < off.size() && before(off[i].tid, off[i].ts, smp[j].tid, smp[j].ts))) {
      const OffCpuRow& o = off[i++];
      p = {o.ts, o.end(), o.pid, o.tid, app_nr(o.syscall), 0, true, false};
    } else {
      const CpuSampleRow& c = smp[j++];
      p = {c.ts, c.ts + period / 2, c.pid, c.tid, app_nr(c.syscall), 1, false, true};
    }
    // The next piece of the same syscall joins when a sample bridges the gap to it: a sample
    // within a period of a sleep (a woken thread runs on in the syscall), a sleep within a
    // period of a sample. Two sleeps with nothing seen between are two calls: the gap between
    // them may be any work at all.
    const bool bridged = p.samples > 0 || (cur && cur->last_sample);
    const bool joins = cur && p.nr >= 0 && p.tid == cur->tid && p.nr == cur->nr &&
                       p.ts - cur->end <= (bridged ? period : 0);
    if (joins) {
      cur->end = std::max(cur->end, p.end);
      cur->samples += p.samples;
      cur->slept = cur->slept || p.slept;
      cur->last_sample = p.samples > 0;
      continue;
    }
    close(&p);
    cur = p;
  }
  close(nullptr);
}

}  // namespace

std::vector<PyLayoutGap> python_layout_gaps(const TraceRows& rows,
                                            const std::unordered_map<uint32_t, int64_t>& layouts) {
  std::map<uint32_t, PyLayoutGap> by_pid;
  if (layouts.empty()) return {};
  for (const CallRow& c : rows.calls) {
    auto it = layouts.find(c.pid);
    if (it == layouts.end() || c.ts >= it->second || rows.ext(c).pystack_id >= 0) continue;
    PyLayoutGap& g = by_pid[c.pid];
    g.pid = c.pid;
    g.layout_ns = it->second;
    ++g.calls;
  }
  std::vector<PyLayoutGap> out;
  for (auto& [pid, g] : by_pid) out.push_back(g);
  return out;
}

void prepare_rows(TraceRows& rows) {
  if (rows.prepared) return;
  sort_by_tid_ts(rows.offcpu);
  sort_by_tid_ts(rows.cpu_samples);
  derive_syscalls(rows);  // needs the two above sorted
  if (rows.apis.empty()) rows.apis = catalog_api_table();
  const CallFiller filler(rows);
  prepare_memory_calls(rows, filler);
  // The loader fills its calls as it reads them; hand-built rows are filled here.
  const FilledCalls f =
      rows.calls_filled ? std::move(*rows.calls_filled) : fill_calls(rows.calls, filler);
  rows.calls_filled.reset();
  infer_copy_directions(rows, f.default_copies);  // needs memory_calls prepared
  if (!f.sorted) regroup_by_tid_ts(rows.calls);
  impute_untimed_launches(rows);  // needs the calls grouped by thread
  sort_by_tid_ts(rows.syscalls);
  sort_by_tid_ts(rows.driver_ioctls);
  sort_by_tid_ts(rows.block_io);
  sort_by_tid_ts(rows.reclaim);
  std::stable_sort(rows.tcp.begin(), rows.tcp.end(),
                   [](const TcpRetransRow& a, const TcpRetransRow& b) { return a.ts < b.ts; });
  // The loader reads cpu_runs chunk by chunk of each CPU: usually in order already.
  auto by_cpu_ts = [](const CpuRunRow& a, const CpuRunRow& b) {
    return a.cpu != b.cpu ? a.cpu < b.cpu : a.ts < b.ts;
  };
  if (!std::is_sorted(rows.cpu_runs.begin(), rows.cpu_runs.end(), by_cpu_ts))
    std::stable_sort(rows.cpu_runs.begin(), rows.cpu_runs.end(), by_cpu_ts);
  sort_by_tid_ts(rows.wait_migrations);
  auto by_pid_ts = [](const DeviceActivityRow& a, const DeviceActivityRow& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.ts < b.ts;
  };
  if (!std::is_sorted(rows.device_activity.begin(), rows.device_activity.end(), by_pid_ts))
    std::stable_sort(rows.device_activity.begin(), rows.device_activity.end(), by_pid_ts);
  rows.prepared = true;
}

}  // namespace gpuwhy::analysis
