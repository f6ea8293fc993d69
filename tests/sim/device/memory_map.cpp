// SPDX-License-Identifier: Apache-2.0
#include "device/memory_map.hpp"

#include <sys/mman.h>
#include <unistd.h>

namespace gwsim {
namespace {

constexpr uint64_t kDeviceSpace = 64ull << 30;      // 64 GiB of simulated device memory
constexpr uint64_t kDeviceLowSpace = 256ull << 20;  // legacy 32-bit allocations
constexpr uint64_t kAlign = 512;                    // cudaMalloc's alignment guarantee

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

uint64_t page_round(uint64_t bytes) {
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return align_up(bytes, page);
}

}  // namespace

MemoryMap::~MemoryMap() {
  for (const auto& [base, r] : regions_) {
    if (r.kind != MemKind::kDevice) munmap(reinterpret_cast<void*>(base), page_round(r.size));
  }
  if (device_.size) munmap(reinterpret_cast<void*>(device_.base), device_.size);
  if (device_low_.size) munmap(reinterpret_cast<void*>(device_low_.base), device_low_.size);
}

bool MemoryMap::reserve(Arena* arena, uint64_t size, bool low32) {
  if (arena->size) return true;
  // NORESERVE + PROT_NONE: address space only, no commit charge, faults if dereferenced.
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (low32 ? MAP_32BIT : 0);
  void* p = mmap(nullptr, size, PROT_NONE, flags, -1, 0);
  if (p == MAP_FAILED) return false;
  arena->base = reinterpret_cast<uint64_t>(p);
  arena->size = size;
  return true;
}

std::optional<uint64_t> MemoryMap::first_fit(const Arena& arena, uint64_t bytes) const {
  const uint64_t end = arena.base + arena.size;
  uint64_t cursor = arena.base;
  for (auto it = regions_.lower_bound(arena.base); it != regions_.end() && it->first < end; ++it) {
    if (it->first - cursor >= bytes) return cursor;
    cursor = align_up(it->first + it->second.size, kAlign);
  }
  if (end - cursor >= bytes) return cursor;
  return std::nullopt;
}

std::optional<uint64_t> MemoryMap::alloc_device(uint64_t bytes, bool low32) {
  Arena* arena = low32 ? &device_low_ : &device_;
  if (!reserve(arena, low32 ? kDeviceLowSpace : kDeviceSpace, low32)) return std::nullopt;
  const uint64_t size = align_up(bytes, kAlign);
  const auto base = first_fit(*arena, size);
  if (base) regions_[*base] = Region{*base, size, MemKind::kDevice};
  return base;
}

void* MemoryMap::alloc_host(uint64_t bytes, MemKind kind) {
  void* p =
      mmap(nullptr, page_round(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const auto base = reinterpret_cast<uint64_t>(p);
  regions_[base] = Region{base, bytes, kind};
  return p;
}

bool MemoryMap::is_allocation(uint64_t base, unsigned kinds) const {
  const auto it = regions_.find(base);
  return it != regions_.end() && (kinds & kind_bit(it->second.kind)) != 0;
}

bool MemoryMap::release(uint64_t base, unsigned kinds) {
  const auto it = regions_.find(base);
  if (it == regions_.end() || (kinds & kind_bit(it->second.kind)) == 0) return false;
  if (it->second.kind != MemKind::kDevice) {
    munmap(reinterpret_cast<void*>(base), page_round(it->second.size));
  }
  regions_.erase(it);
  return true;
}

const Region* MemoryMap::find(uint64_t addr, uint64_t bytes) const {
  auto it = regions_.upper_bound(addr);
  if (it == regions_.begin()) return nullptr;
  --it;
  const Region& r = it->second;
  if (addr - r.base >= r.size || bytes > r.size - (addr - r.base)) return nullptr;
  return &r;
}

}  // namespace gwsim
