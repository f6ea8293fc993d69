// SPDX-License-Identifier: Apache-2.0
// The one packet sequence the Perfetto export writes (perfetto_export.hpp), with the sequence's
// incremental state as trace_processor reads it:
//  - names interned: an event's name, its category and its annotations' names are written once,
//    in the InternedData of the first packet that uses them, and referred to by iid after that
//    (a slice's name was most of its ~140 bytes);
//  - a clock snapshot first: gpuwhy's timestamps are CLOCK_REALTIME ns, and the snapshot gives
//    that clock's reading beside CLOCK_MONOTONIC's (the clock the probes read) with REALTIME as
//    the trace's clock, so the file opens alone and also merges with a Perfetto system trace,
//    whose own snapshot joins REALTIME to its BOOTTIME;
//  - every packet after the first says it needs that state (SEQ_NEEDS_INCREMENTAL_STATE).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>

#include "export/proto_writer.hpp"

namespace gpuwhy::exporter {

// TracePacket, ClockSnapshot and InternedData field numbers (Perfetto's perfetto_trace.proto).
enum : uint32_t {
  kPacketTimestamp = 8,
  kPacketSequenceId = 10,
  kPacketInternedData = 12,
  kPacketSequenceFlags = 13,
  kPacketClockSnapshot = 6,
  kPacketDefaults = 59,
  kDefaultsTimestampClockId = 58,
  kClockSnapshotClocks = 1,
  kClockSnapshotPrimary = 2,
  kClockId = 1,
  kClockTimestamp = 2,
  kInternedEventCategories = 1,
  kInternedEventNames = 2,
  kInternedAnnotationNames = 3,
  kInternedSourceLocations = 4,
  kInternedIid = 1,
  kInternedName = 2,
  kSourceLocationFile = 2,
  kSourceLocationFunction = 3,
  kSourceLocationLine = 4,
};
enum : uint64_t {
  kSeqIncrementalStateCleared = 1,
  kSeqNeedsIncrementalState = 2,
  kClockRealtime = 1,
  kClockMonotonic = 3,
};

class PerfettoSequence {
 public:
  // `mono_to_wall_ns`: wall = monotonic + it (the trace's session row); `at_ns`: when the
  // snapshot is taken, in wall ns.
  PerfettoSequence(FILE* f, int64_t at_ns, int64_t mono_to_wall_ns) : f_(f) {
    ProtoWriter snapshot, clock, defaults;
    clock.varint(kClockId, kClockRealtime);
    clock.varint(kClockTimestamp, static_cast<uint64_t>(at_ns));
    snapshot.message(kClockSnapshotClocks, clock);
    clock.clear();
    clock.varint(kClockId, kClockMonotonic);
    int64_t mono_ns = 0;  // a crafted file's offset can be anything: no overflow
    if (__builtin_sub_overflow(at_ns, mono_to_wall_ns, &mono_ns)) mono_ns = 0;
    clock.varint(kClockTimestamp, static_cast<uint64_t>(mono_ns));
    snapshot.message(kClockSnapshotClocks, clock);
    snapshot.varint(kClockSnapshotPrimary, kClockRealtime);
    pkt_.varint(kPacketTimestamp, static_cast<uint64_t>(at_ns));
    pkt_.varint(kPacketSequenceId, kSequence);
    pkt_.varint(kPacketSequenceFlags, kSeqIncrementalStateCleared);
    defaults.varint(kDefaultsTimestampClockId, kClockRealtime);
    pkt_.message(kPacketDefaults, defaults);
    pkt_.message(kPacketClockSnapshot, snapshot);
    write_packet();
  }

  // The iid of `name` in InternedData's table `table` (kInterned*); a name not seen before is
  // added to the next packet's InternedData.
  uint64_t iid(uint32_t table, std::string_view name) {
    return intern(table, std::string(name),
                  [&](ProtoWriter& entry) { entry.string(kInternedName, name); });
  }

  // The iid of a SourceLocation (file, function, line) in InternedData's source_locations; a new
  // one is added to the next packet's InternedData like a name.
  uint64_t source_location_iid(std::string_view file, std::string_view function, int64_t line) {
    std::string key(file);
    key += '\0';
    key += function;
    key += '\0';
    key += std::to_string(line);
    return intern(kInternedSourceLocations, std::move(key), [&](ProtoWriter& entry) {
      entry.string(kSourceLocationFile, file);
      entry.string(kSourceLocationFunction, function);
      if (line >= 0) entry.varint(kSourceLocationLine, static_cast<uint64_t>(line) & 0xffffffffu);
    });
  }

  // One TracePacket with `body` under `field` (a TrackEvent, a TrackDescriptor); `ts` < 0: none.
  void packet(int64_t ts, uint32_t field, const ProtoWriter& body) {
    pkt_.clear();
    if (ts >= 0) pkt_.varint(kPacketTimestamp, static_cast<uint64_t>(ts));
    pkt_.varint(kPacketSequenceId, kSequence);
    pkt_.varint(kPacketSequenceFlags, kSeqNeedsIncrementalState);
    if (interned_.size() > 0) {
      pkt_.message(kPacketInternedData, interned_);
      interned_.clear();
    }
    pkt_.message(field, body);
    write_packet();
  }
  bool failed() const { return failed_; }

 private:
  static constexpr uint32_t kSequence = 1;
  // The iid of `key` in `table`; a new one (iids count from 1: 0 means none) goes into the next
  // packet's InternedData as an entry with its iid and what `fill` writes.
  template <typename Fill>
  uint64_t intern(uint32_t table, std::string key, const Fill& fill) {
    auto& ids = tables_[table];
    const auto it = ids.find(key);
    if (it != ids.end()) return it->second;
    const uint64_t id = ids.size() + 1;
    ids.emplace(std::move(key), id);
    ProtoWriter entry;
    entry.varint(kInternedIid, id);
    fill(entry);
    interned_.message(table, entry);
    return id;
  }
  void write_packet() {
    outer_.clear();
    outer_.message(1, pkt_);  // Trace.packet
    if (std::fwrite(outer_.data().data(), 1, outer_.size(), f_) != outer_.size()) failed_ = true;
  }

  FILE* f_;
  ProtoWriter pkt_, outer_, interned_;
  std::unordered_map<uint32_t, std::unordered_map<std::string, uint64_t>> tables_;
  bool failed_ = false;
};

}  // namespace gpuwhy::exporter
