// SPDX-License-Identifier: Apache-2.0
#include "analysis/addr_ranges.hpp"

#include <algorithm>
#include <map>

namespace gpuwhy::analysis {

AddressMap AddressMap::build(const TraceRows& rows, const CallRows& memory_calls) {
  AddressMap m;
  // Live allocations by start address, per kind, so a free closes the right one.
  std::map<uint64_t, size_t> live_pinned, live_device;
  for (const CallRow& c : memory_calls) {
    const CallExt& e = rows.ext(c);
    if (e.ret != 0) continue;
    const ApiMeta& api = rows.api(c.api);
    // Managed memory is never staged through a bounce buffer: it counts as pinned here.
    const bool pinned = api.host_alloc || api.managed;
    if ((pinned || api.device_alloc) && e.addr != 0 && e.bytes > 0) {
      auto& v = pinned ? m.pinned_ : m.device_;
      auto& live = pinned ? live_pinned : live_device;
      live[e.addr] = v.size();
      v.push_back({e.addr, e.addr + e.bytes, c.ts});
    } else if (c.cat == Category::Free && e.addr != 0) {
      // cudaFree releases device and managed memory alike: look in both.
      for (auto [v, live] :
           {std::pair{&m.pinned_, &live_pinned}, std::pair{&m.device_, &live_device}}) {
        if (auto it = live->find(e.addr); it != live->end()) {
          (*v)[it->second].to = c.ts;
          live->erase(it);
          break;
        }
      }
    }
  }
  auto by_lo = [](const Range& a, const Range& b) { return a.lo < b.lo; };
  std::sort(m.pinned_.begin(), m.pinned_.end(), by_lo);
  std::sort(m.device_.begin(), m.device_.end(), by_lo);
  return m;
}

const AddressMap::Range* AddressMap::find(const std::vector<Range>& v, uint64_t addr, int64_t ts) {
  // Ranges reused over time can repeat the same lo: scan back over those starting at or below.
  auto it = std::upper_bound(v.begin(), v.end(), addr,
                             [](uint64_t a, const Range& r) { return a < r.lo; });
  for (int guard = 0; it != v.begin() && guard < 64; ++guard) {
    --it;
    if (addr < it->hi && ts >= it->from && ts < it->to) return &*it;
  }
  return nullptr;
}

bool AddressMap::pinned(uint64_t addr, uint64_t bytes, int64_t ts) const {
  const Range* r = find(pinned_, addr, ts);
  return r && addr + bytes <= r->hi;
}

bool AddressMap::device(uint64_t addr, int64_t ts) const { return find(device_, addr, ts); }

int8_t AddressMap::infer_dir(uint64_t dst, uint64_t src, int64_t ts) const {
  const bool d = device(dst, ts), s = device(src, ts);
  if (d && s) return static_cast<int8_t>(CopyDir::DeviceToDevice);
  if (d) return static_cast<int8_t>(CopyDir::HostToDevice);
  if (s) return static_cast<int8_t>(CopyDir::DeviceToHost);
  return -1;
}

void infer_copy_directions(TraceRows& rows, std::span<const size_t> copies) {
  if (copies.empty()) return;
  const AddressMap map = AddressMap::build(rows, rows.memory_calls);
  for (size_t i : copies) {
    CallRow& c = rows.calls[i];
    const CallExt& e = rows.ext(c);
    if (int8_t d = map.infer_dir(e.addr, e.addr2, c.ts); d >= 0) c.dir = d;
  }
}

}  // namespace gpuwhy::analysis
