// SPDX-License-Identifier: Apache-2.0
#include "analysis/rows.hpp"

#include <algorithm>
#include <span>

#include "analysis/addr_ranges.hpp"

namespace gpuwhy::analysis {
namespace {

constexpr std::string_view kHostAllocs[] = {"cudaMallocHost", "cudaHostAlloc", "cuMemAllocHost",
                                            "cuMemAllocHost_v2", "hipHostMalloc"};
constexpr std::string_view kHostFrees[] = {"cudaFreeHost", "cuMemFreeHost", "hipHostFree"};

bool one_of(std::string_view name, std::span<const std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Sorts by (tid, ts) in O(n) for the usual case: rows arrive nearly in time order, so a counting
// pass by thread followed by a check (and a rare sort) per thread beats one big comparison sort.
template <class Row>
void sort_by_tid_ts(std::vector<Row>& v) {
  auto less = [](const Row& a, const Row& b) {
    return a.tid != b.tid ? a.tid < b.tid : a.ts < b.ts;
  };
  if (std::is_sorted(v.begin(), v.end(), less)) return;
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
  std::vector<Row> out(v.size());
  std::vector<size_t> pos(start.begin(), start.end() - 1);
  for (Row& r : v) out[pos[slot[r.tid]]++] = std::move(r);
  for (size_t i = 0; i < tids.size(); ++i) {
    auto b = out.begin() + static_cast<ptrdiff_t>(start[i]);
    auto e = out.begin() + static_cast<ptrdiff_t>(start[i + 1]);
    if (!std::is_sorted(b, e, less)) std::stable_sort(b, e, less);
  }
  v = std::move(out);
}

}  // namespace

Category category_from_name(std::string_view name) {
  for (uint8_t c = 1; c <= static_cast<uint8_t>(Category::Init); ++c) {
    if (category_name(static_cast<Category>(c)) == name) return static_cast<Category>(c);
  }
  return kUnknownCategory;
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

const ApiMeta& TraceRows::api(uint16_t id) const {
  static const ApiMeta unknown{"?"};
  return id < apis.size() && !apis[id].name.empty() ? apis[id] : unknown;
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

std::string TraceRows::thread_name(uint32_t tid) const {
  for (const ThreadRow& t : threads)
    if (t.tid == tid && !t.comm.empty()) return t.comm;
  for (const ProcessRow& p : processes)
    if (p.pid == tid && !p.comm.empty()) return p.comm;
  return "?";
}

void prepare_rows(TraceRows& rows) {
  if (rows.apis.empty()) rows.apis = catalog_api_table();
  auto fill = [&](CallRow& c) {
    const ApiMeta& m = rows.api(c.api);
    if (c.cat == kUnknownCategory) c.cat = m.cat;
    if (c.cat != Category::Copy) {
      c.dir = -1;
    } else if (c.dir < 0 && m.fixed_dir >= 0) {
      c.dir = m.fixed_dir;
    }
  };
  for (CallRow& c : rows.calls) fill(c);
  for (CallRow& c : rows.memory_calls) fill(c);
  if (rows.memory_calls.empty()) {
    // Hand-built rows: the allocations are among the calls.
    for (const CallRow& c : rows.calls)
      if (c.cat == Category::Alloc || c.cat == Category::Free) rows.memory_calls.push_back(c);
  }
  sort_by_tid_ts(rows.calls);
  sort_by_tid_ts(rows.offcpu);
  sort_by_tid_ts(rows.syscalls);
  sort_by_tid_ts(rows.block_io);
  sort_by_tid_ts(rows.reclaim);
  std::stable_sort(rows.memory_calls.begin(), rows.memory_calls.end(),
                   [](const CallRow& a, const CallRow& b) { return a.ts < b.ts; });
  infer_copy_directions(rows);
  std::stable_sort(rows.tcp.begin(), rows.tcp.end(),
                   [](const TcpRetransRow& a, const TcpRetransRow& b) { return a.ts < b.ts; });
}

}  // namespace gpuwhy::analysis
