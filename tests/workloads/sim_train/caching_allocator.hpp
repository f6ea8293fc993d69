// SPDX-License-Identifier: Apache-2.0
// A caching allocator in miniature, shaped like PyTorch's CUDACachingAllocator: device memory is
// reserved in segments with cudaMalloc (the request rounded up to 2 MiB, at least 20 MiB, like
// PyTorch's large pool) and tensors are carved out of them with no runtime call. Blocks go back to
// the cache at the end of a step; segments are freed only by empty_cache(). The audit must show
// its segments as a caching allocator's reserve (docs/audit.md), not as a leak or unused memory.
#pragma once

#include <cstdint>
#include <vector>

namespace gw {

class CachingAllocator {
 public:
  CachingAllocator() = default;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A tensor of `bytes` from the first segment with room, reserving a segment when none has.
  void* allocate(uint64_t bytes);
  // The end of a step: every tensor's block back to the cache (the segments stay reserved).
  void release_blocks();
  // torch.cuda.empty_cache(): frees every segment (call it with no tensor in use).
  void empty_cache();

  // The ground truth the summary line reports.
  uint64_t reserved_bytes() const { return reserved_; }
  uint64_t segments() const { return segments_.size(); }
  uint64_t peak_bytes() const { return peak_; }
  uint64_t peak_segments() const { return peak_segments_; }
  uint64_t reserves() const { return reserves_; }  // segments reserved over the run
  uint64_t sweeps() const { return sweeps_; }

 private:
  void* reserve_segment(uint64_t bytes);

  struct Segment {
    char* base = nullptr;
    uint64_t size = 0, used = 0;
  };
  std::vector<Segment> segments_;
  uint64_t reserved_ = 0, peak_ = 0, peak_segments_ = 0, reserves_ = 0, sweeps_ = 0;
};

}  // namespace gw
