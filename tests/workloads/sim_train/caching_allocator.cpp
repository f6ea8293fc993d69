// SPDX-License-Identifier: Apache-2.0
#include "sim_train/caching_allocator.hpp"

#include <algorithm>

#include "gwsim/cudart.h"
#include "sim_train/trainer.hpp"

namespace gw {
namespace {

constexpr uint64_t kRound = 2ull << 20;        // segments are multiples of 2 MiB
constexpr uint64_t kMinSegment = 20ull << 20;  // the large pool's smallest segment
constexpr uint64_t kAlign = 512;               // tensors start 512-byte aligned

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

}  // namespace

// Not inlined: the cudaMalloc's call site must be this allocator's own frame, as PyTorch's is
// c10::cuda::CUDACachingAllocator's.
__attribute__((noinline)) void* CachingAllocator::reserve_segment(uint64_t bytes) {
  Segment s;
  s.size = std::max(kMinSegment, round_up(bytes, kRound));
  check(cudaMalloc(reinterpret_cast<void**>(&s.base), s.size), "cudaMalloc segment");
  segments_.push_back(s);
  reserved_ += s.size;
  ++reserves_;
  if (reserved_ > peak_) {
    peak_ = reserved_;
    peak_segments_ = segments_.size();
  }
  return s.base;
}

void* CachingAllocator::allocate(uint64_t bytes) {
  bytes = round_up(bytes, kAlign);
  for (Segment& s : segments_) {
    if (s.size - s.used < bytes) continue;
    void* p = s.base + s.used;
    s.used += bytes;
    return p;
  }
  reserve_segment(bytes);
  Segment& s = segments_.back();
  s.used = bytes;
  return s.base;
}

void CachingAllocator::release_blocks() {
  for (Segment& s : segments_) s.used = 0;
}

void CachingAllocator::empty_cache() {
  for (const Segment& s : segments_) check(cudaFree(s.base), "cudaFree segment");
  segments_.clear();
  reserved_ = 0;
  ++sweeps_;
}

}  // namespace gw
