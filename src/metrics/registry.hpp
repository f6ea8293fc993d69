// SPDX-License-Identifier: Apache-2.0
// The live metrics of `trace --metrics`. One thread (the ring reader) writes the per-event
// counters; any thread may collect them for a scrape. Writes are single-writer relaxed atomics
// (a plain load and store: no lock, no locked instruction on the reader's path); a new label set
// is published with a release store of its table's size, so a scrape sees each series whole.
//
// A per-process series is labelled by the process's name (comm) and its pid, so ranks of one name
// (eight `python3`) stay apart; a per-device one also by the device ordinal its thread had
// selected (`device`, as the trace's audit joins it), so it can be joined with a GPU exporter's.
// Label cardinality is bounded: at most Limits::processes distinct (name, pid) pairs, and each
// metric keeps at most Limits::series label sets naming a process. Anything beyond either bound
// is counted under process="other", pid="other" (its device, api, direction or cause kept), so a
// metric never has more than Limits::series plus the size of its other labels' fixed domain (the
// device slots, the API catalogue, copy directions, off-CPU causes) series.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "metrics/exposition.hpp"

namespace gpuwhy::metrics {

struct Limits {
  size_t processes = 64;  // distinct (process name, pid) label pairs, "other" aside
  size_t series = 256;    // label sets per metric that name a process
};

// A count that only one thread adds to.
class SingleWriterCounter {
 public:
  void add(uint64_t n) {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void set(uint64_t n) { v_.store(n, std::memory_order_relaxed); }
  uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// One labelled counter metric: (process slot, key, subkey) -> count, where a key is a small index
// (an API's catalogue position, 0 for none) and a subkey a direction or cause. Fixed capacity,
// allocated once, so a series never moves while a scrape reads it; found through a dense index
// (no hashing on the reader's path).
class CounterTable {
 public:
  // `processes`: process slots (names + "other"); `keys` x `subkeys`: the domain of the other
  // labels, which is also how many series process="other" can take.
  CounterTable(size_t named_limit, size_t processes, size_t keys, size_t subkeys);
  // The series of (process, key, subkey), created on first use; process 0 is "other", which a
  // new label set naming a process becomes once `named_limit` such sets exist. Writer only.
  SingleWriterCounter& at(uint16_t process, uint16_t key, uint8_t subkey);
  size_t size() const { return n_.load(std::memory_order_acquire); }

  struct Entry {
    uint16_t process = 0, key = 0;
    uint8_t subkey = 0;
    SingleWriterCounter value;
  };
  const Entry& entry(size_t i) const { return entries_[i]; }

 private:
  size_t named_limit_, processes_, keys_, subkeys_, capacity_;
  std::unique_ptr<Entry[]> entries_;
  std::atomic<size_t> n_{0};
  size_t named_ = 0;              // writer only
  std::vector<int32_t> index_;    // writer only: (process, key, subkey) -> entry, -1: none yet
  SingleWriterCounter overflow_;  // out-of-domain labels (a caller's bug); never exposed
};

// Why a traced thread was off the CPU (offcpu rows), as gpuwhy_offcpu_seconds_total{cause} says.
enum class OffCpuCause : uint8_t { Runqueue, Futex, Uninterruptible, Syscall, Other, Count_ };
const char* offcpu_cause_name(OffCpuCause c);
// Copy directions (CopyDir values; an unknown one reads as "default").
const char* copy_direction_name(uint8_t dir);

class Registry {
 public:
  explicit Registry(Limits limits = {});

  // Device ordinals 0..kDevices-1 are labelled as such; a higher one is device="other".
  static constexpr uint8_t kDevices = 16;
  static uint8_t device_slot(uint64_t ordinal) {
    return ordinal < kDevices ? static_cast<uint8_t>(ordinal) : kDevices;
  }

  // ---- writer thread (the ring reader) ----
  // The slot of a process (name and pid), 0 ("other") once the slots are used up.
  uint16_t process_slot(uint32_t pid, const std::string& name);
  // `device`: device_slot() of the ordinal the calling thread had selected.
  void add_call(uint16_t process, uint16_t api_id, uint8_t device, int64_t dur_ns,
                bool has_duration);
  void add_copy_bytes(uint16_t process, uint16_t api_id, uint8_t direction, uint8_t device,
                      uint64_t bytes);
  void add_offcpu(uint16_t process, OffCpuCause cause, int64_t ns);
  void set_traced_processes(uint64_t n) { traced_processes_.set(n); }
  bool is_copy(uint16_t api_id) const { return api_id < is_copy_.size() && is_copy_[api_id]; }
  // cudaSetDevice, hipSetDevice: the call selects its thread's current device.
  bool selects_device(uint16_t api_id) const {
    return api_id < selects_device_.size() && selects_device_[api_id];
  }

  // ---- any thread, rarely (the main loop, about once a second) ----
  struct Totals {
    std::vector<std::pair<std::string, uint64_t>> recorded;  // event kind -> events
    struct Loss {
      std::string source, cause;
      uint64_t count = 0;
    };
    std::vector<Loss> lost;
  };
  void set_totals(Totals t);

  // ---- scrapes ----
  std::vector<Family> collect() const;

  // Bucket upper bounds of gpuwhy_api_call_seconds, in ns.
  static const std::vector<int64_t>& bucket_bounds_ns();

 private:
  struct Histogram {  // one per catalogue API
    std::vector<SingleWriterCounter> buckets;
    SingleWriterCounter sum_ns;
    explicit Histogram(size_t n) : buckets(n) {}
  };
  int api_index(uint16_t api_id) const;
  struct ProcessLabels {
    std::string name, pid;
  };
  const ProcessLabels& process_labels(uint16_t slot) const;

  Limits limits_;
  // Processes: slot i+1 is processes_[i]; published by processes_n_ (release) before any series
  // names the slot.
  std::unique_ptr<ProcessLabels[]> processes_;
  std::atomic<size_t> processes_n_{0};
  std::unordered_map<std::string, uint16_t> slot_of_;  // writer only: "pid/name" -> slot
  std::vector<int16_t> api_index_;                     // api id -> catalogue position, -1: none
  std::vector<bool> is_copy_;                          // api id -> a memory copy
  std::vector<bool> selects_device_;                   // api id -> category Device
  // calls: subkey the device slot; bytes: direction * kDeviceSlots + device slot.
  CounterTable calls_, bytes_, offcpu_ns_;
  std::vector<std::unique_ptr<Histogram>> histograms_;  // by catalogue position
  SingleWriterCounter traced_processes_;
  mutable std::mutex totals_mu_;  // never taken by the reader
  Totals totals_;
  std::vector<int64_t> bounds_ns_;  // bucket_bounds_ns(), kept at hand for the reader's path
};

}  // namespace gpuwhy::metrics
