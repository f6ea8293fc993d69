// SPDX-License-Identifier: Apache-2.0
// The simulated GPU's memory: which address ranges are device allocations, pinned host memory or
// managed memory. Copies use it to validate pointers, infer cudaMemcpyDefault directions and
// pick the bandwidth (pinned or pageable host memory).
//
// Device memory is address space only: a large PROT_NONE reservation carved into allocations,
// so device pointers look and behave like real ones (unique, reusable after free, fault when the
// host dereferences them) without using memory. Pinned and managed memory are real host memory,
// since programs write to them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

namespace gwsim {

enum class MemKind : uint8_t { kDevice, kPinnedHost, kManaged };

struct Region {
  uint64_t base = 0;
  uint64_t size = 0;
  MemKind kind = MemKind::kDevice;
};

// Not thread-safe: the owner (Device) serialises access.
class MemoryMap {
 public:
  MemoryMap() = default;
  MemoryMap(const MemoryMap&) = delete;
  MemoryMap& operator=(const MemoryMap&) = delete;
  ~MemoryMap();

  // A device range of `bytes` (> 0); `low32` places it below 4 GiB for the legacy 32-bit
  // driver entry points. nullopt when the reserved space is exhausted.
  std::optional<uint64_t> alloc_device(uint64_t bytes, bool low32);
  // Real, zero-filled host memory registered as pinned or managed; nullptr on failure.
  void* alloc_host(uint64_t bytes, MemKind kind);
  // Releases the allocation starting exactly at `base` if its kind is one of `kinds` (bit set of
  // 1 << MemKind); returns false (and changes nothing) otherwise.
  bool release(uint64_t base, unsigned kinds);
  bool is_allocation(uint64_t base, unsigned kinds) const;

  // The allocation holding [addr, addr + bytes), if any.
  const Region* find(uint64_t addr, uint64_t bytes) const;

 private:
  struct Arena {
    uint64_t base = 0;
    uint64_t size = 0;
  };
  std::optional<uint64_t> first_fit(const Arena& arena, uint64_t bytes) const;
  bool reserve(Arena* arena, uint64_t size, bool low32);

  std::map<uint64_t, Region> regions_;  // by base address
  Arena device_{};
  Arena device_low_{};
};

constexpr unsigned kind_bit(MemKind k) { return 1u << static_cast<unsigned>(k); }

}  // namespace gwsim
