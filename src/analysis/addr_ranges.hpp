// SPDX-License-Identifier: Apache-2.0
// Which addresses are pinned host memory and which are device memory, from the allocation and
// free calls in the trace. Answers "was this copy's host buffer pinned?" (pageable copies are
// staged through a bounce buffer and cannot overlap compute) and gives cudaMemcpyDefault copies a
// direction.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/rows.hpp"

namespace gpuwhy::analysis {

class AddressMap {
 public:
  // From allocation/free calls sorted by ts (TraceRows::memory_calls).
  static AddressMap build(const TraceRows& rows, const CallRows& memory_calls);

  // Was [addr, addr + bytes) inside one pinned host allocation alive at `ts`?
  bool pinned(uint64_t addr, uint64_t bytes, int64_t ts) const;
  bool device(uint64_t addr, int64_t ts) const;
  size_t pinned_allocations() const { return pinned_.size(); }

  // CopyDir for a copy whose kind is Default (unified addressing), from what its endpoints are;
  // -1 when neither endpoint is known device memory.
  int8_t infer_dir(uint64_t dst, uint64_t src, int64_t ts) const;

 private:
  struct Range {
    uint64_t lo = 0, hi = 0;  // [lo, hi)
    int64_t from = 0;         // allocated at
    int64_t to = INT64_MAX;   // freed at
  };
  static const Range* find(const std::vector<Range>& v, uint64_t addr, int64_t ts);
  std::vector<Range> pinned_, device_;  // sorted by lo
};

// Gives the copies at these indexes into rows.calls, of the Default kind, a direction where the
// endpoints tell (prepare_rows, once memory_calls is sorted).
void infer_copy_directions(TraceRows& rows, std::span<const size_t> copies);

}  // namespace gpuwhy::analysis
