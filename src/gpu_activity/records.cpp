// SPDX-License-Identifier: Apache-2.0
#include "gpu_activity/records.hpp"

#include <cstring>

namespace gpuwhy::gpu_activity {
namespace {

// The record at `p` as T when it holds at least T's bytes.
template <class T>
bool take(const uint8_t* p, size_t size, T* out) {
  if (size < sizeof(T)) return false;
  std::memcpy(out, p, sizeof(T));
  return true;
}

// The text after a fixed part of `fixed` bytes: `len` bytes, inside the record.
bool text_of(const uint8_t* p, size_t size, size_t fixed, uint32_t len, size_t max,
             std::string_view* out) {
  if (len > max || fixed + len > size) return false;
  *out = std::string_view(reinterpret_cast<const char*>(p + fixed), len);
  return true;
}

}  // namespace

ParseResult parse_datagram(std::span<const uint8_t> bytes, RecordSink& sink) {
  ParseResult r;
  size_t at = 0;
  while (at < bytes.size()) {
    gw_ga_header h{};
    if (bytes.size() - at < sizeof h) {
      r.malformed = true;
      break;
    }
    std::memcpy(&h, bytes.data() + at, sizeof h);
    if (h.size < sizeof h || h.size % 8 != 0 || h.size > bytes.size() - at) {
      r.malformed = true;
      break;
    }
    const uint8_t* p = bytes.data() + at;
    const size_t size = h.size;
    at += size;
    bool ok = true;
    switch (h.kind) {
      case GW_GA_HELLO: {
        gw_ga_hello v;
        if ((ok = take(p, size, &v))) sink.hello(v);
        break;
      }
      case GW_GA_KERNEL: {
        gw_ga_kernel v;
        if ((ok = take(p, size, &v))) sink.kernel(v);
        break;
      }
      case GW_GA_MEMCPY: {
        gw_ga_memcpy v;
        if ((ok = take(p, size, &v))) sink.memcpy(v);
        break;
      }
      case GW_GA_MEMSET: {
        gw_ga_memset v;
        if ((ok = take(p, size, &v))) sink.memset(v);
        break;
      }
      case GW_GA_SYNC: {
        gw_ga_sync v;
        if ((ok = take(p, size, &v))) sink.sync(v);
        break;
      }
      case GW_GA_OVERHEAD: {
        gw_ga_overhead v;
        if ((ok = take(p, size, &v))) sink.overhead(v);
        break;
      }
      case GW_GA_NAME: {
        gw_ga_name v;
        std::string_view text;
        if ((ok = take(p, size, &v) && text_of(p, size, sizeof v, v.len, GW_GA_MAX_NAME, &text)))
          sink.name(h.pid, v.name_id, text);
        break;
      }
      case GW_GA_DROPPED: {
        gw_ga_dropped v;
        if ((ok = take(p, size, &v))) sink.dropped(v);
        break;
      }
      case GW_GA_STATUS: {
        gw_ga_status v;
        std::string_view text;
        if ((ok = take(p, size, &v) && text_of(p, size, sizeof v, v.len, GW_GA_MAX_STATUS, &text)))
          sink.status(h.pid, v.code, v.cupti_result, text);
        break;
      }
      default:
        ++r.unknown;
        continue;
    }
    if (!ok) {
      r.malformed = true;
      break;
    }
    ++r.records;
  }
  return r;
}

std::string_view copy_kind_name(uint8_t kind) {
  switch (kind) {
    case 1:
      return "HtoD";
    case 2:
      return "DtoH";
    case 3:
      return "HtoA";
    case 4:
      return "AtoH";
    case 5:
      return "AtoA";
    case 6:
      return "AtoD";
    case 7:
      return "DtoA";
    case 8:
      return "DtoD";
    case 9:
      return "HtoH";
    case 10:
      return "PtoP";
    default:
      return "other";
  }
}

std::string_view memory_kind_name(uint32_t kind) {
  switch (kind) {
    case 1:
      return "pageable";
    case 2:
      return "pinned";
    case 3:
      return "device";
    case 4:
      return "array";
    case 5:
      return "managed";
    case 6:
      return "device_static";
    case 7:
      return "managed_static";
    default:
      return "other";
  }
}

std::string_view sync_type_name(uint32_t type) {
  switch (type) {
    case 1:
      return "event_synchronize";
    case 2:
      return "stream_wait_event";
    case 3:
      return "stream_synchronize";
    case 4:
      return "context_synchronize";
    default:
      return "other";
  }
}

std::string_view overhead_kind_name(uint32_t kind) {
  switch (kind) {
    case 1:
      return "driver_compiler";
    case 1u << 16:
      return "cupti_buffer_flush";
    case 2u << 16:
      return "cupti_instrumentation";
    case 3u << 16:
      return "cupti_resource";
    case 4u << 16:
      return "runtime_triggered_module_loading";
    case 5u << 16:
      return "lazy_function_loading";
    case 6u << 16:
      return "command_buffer_full";
    case 7u << 16:
      return "activity_buffer_request";
    case 8u << 16:
      return "uvm_activity_init";
    default:
      return "other";
  }
}

}  // namespace gpuwhy::gpu_activity
