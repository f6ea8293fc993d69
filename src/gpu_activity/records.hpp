// SPDX-License-Identifier: Apache-2.0
// The agent's side of the GPU activity hand-off (include/gpuwhy/abi/gpu_activity.h): a datagram
// from the CUPTI client, parsed into its records. Pure: fuzzed by tests/fuzz/fuzz_gpu_activity.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "gpuwhy/abi/gpu_activity.h"

namespace gpuwhy::gpu_activity {

// Receives the records of a datagram in order. Each struct is a copy (aligned); fields a newer
// client appended are not seen.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void hello(const gw_ga_hello&) {}
  virtual void kernel(const gw_ga_kernel&) {}
  virtual void memcpy(const gw_ga_memcpy&) {}
  virtual void memset(const gw_ga_memset&) {}
  virtual void sync(const gw_ga_sync&) {}
  virtual void overhead(const gw_ga_overhead&) {}
  virtual void name(uint32_t /*pid*/, uint32_t /*name_id*/, std::string_view /*text*/) {}
  virtual void dropped(const gw_ga_dropped&) {}
  virtual void status(uint32_t /*pid*/, uint32_t /*code*/, int32_t /*cupti_result*/,
                      std::string_view /*text*/) {}
};

struct ParseResult {
  uint32_t records = 0;    // delivered to the sink (kinds this build knows)
  uint32_t unknown = 0;    // well-formed records of kinds it does not know, skipped
  bool malformed = false;  // a record was cut short or claimed an impossible size: the rest of
                           // the datagram was skipped
};

// Walks the records of one datagram. Never reads outside `bytes`.
ParseResult parse_datagram(std::span<const uint8_t> bytes, RecordSink& sink);

// CUPTI's enum values as the texts gpu_activity stores ("HtoD", "pageable", ...).
std::string_view copy_kind_name(uint8_t kind);
std::string_view memory_kind_name(uint32_t kind);
std::string_view sync_type_name(uint32_t type);
std::string_view overhead_kind_name(uint32_t kind);

}  // namespace gpuwhy::gpu_activity
