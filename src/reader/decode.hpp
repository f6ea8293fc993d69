// SPDX-License-Identifier: Apache-2.0
// Ring-buffer bytes -> typed events. Pure: no kernel, no I/O; fuzzed and unit-tested on records
// built from the same ABI structs the BPF programs fill.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "model/events.hpp"

namespace gpuwhy::reader {

enum class DecodeStatus { Ok, TooShort, SizeMismatch, UnknownKind };

DecodeStatus decode_record(const void* data, size_t size, const ClockConverter& clock, Event& out);

// A GW_EV_LAUNCH_BATCH record (several launches of one thread): one ApiCall per launch, with
// GW_FLAG_COMPACT (only its time, duration, return value 0 and kernel are known) and
// GW_FLAG_ARGS_SAMPLED_OUT (its in-memory arguments were not read), appended to
// `out`. decode_record answers UnknownKind for such a record.
DecodeStatus decode_launch_batch(const void* data, size_t size, const ClockConverter& clock,
                                 std::vector<Event>& out);

// Name of an event kind (gw_event_kind), for the per-source counts ("api_call", "offcpu", ...).
std::string_view kind_name(uint16_t kind);

}  // namespace gpuwhy::reader
