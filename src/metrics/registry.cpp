// SPDX-License-Identifier: Apache-2.0
#include "metrics/registry.hpp"

#include <algorithm>

#include "catalog/api_catalog.hpp"
#include "metrics/process_metrics.hpp"

namespace gpuwhy::metrics {
namespace {

constexpr const char* kOffCpuCauses[] = {"runqueue", "futex", "uninterruptible", "syscall",
                                         "other"};
constexpr size_t kCopyDirections = 5;                    // CopyDir values 0..4
constexpr size_t kDeviceSlots = Registry::kDevices + 1;  // the ordinals and "other"
static_assert(kCopyDirections * kDeviceSlots <= 256, "a subkey is a uint8_t");

std::string device_label(uint8_t slot) {
  return slot < Registry::kDevices ? std::to_string(slot) : "other";
}

}  // namespace

const char* offcpu_cause_name(OffCpuCause c) {
  return kOffCpuCauses[std::min<size_t>(static_cast<size_t>(c), std::size(kOffCpuCauses) - 1)];
}

const char* copy_direction_name(uint8_t dir) {
  switch (dir) {
    case 0:
      return "host_to_host";
    case 1:
      return "host_to_device";
    case 2:
      return "device_to_host";
    case 3:
      return "device_to_device";
  }
  return "default";
}

CounterTable::CounterTable(size_t named_limit, size_t processes, size_t keys, size_t subkeys)
    : named_limit_(named_limit),
      processes_(processes),
      keys_(keys),
      subkeys_(subkeys),
      capacity_(named_limit + keys * subkeys),
      entries_(std::make_unique<Entry[]>(capacity_)),
      index_(processes * keys * subkeys, -1) {}

SingleWriterCounter& CounterTable::at(uint16_t process, uint16_t key, uint8_t subkey) {
  if (process >= processes_ || key >= keys_ || subkey >= subkeys_) return overflow_;
  int32_t& index = index_[(size_t{process} * keys_ + key) * subkeys_ + subkey];
  if (index >= 0) return entries_[static_cast<size_t>(index)].value;
  if (process != 0 && named_ >= named_limit_) {
    // The bound: folded into "other", which has room for every (key, subkey).
    SingleWriterCounter& other = at(0, key, subkey);
    index = index_[size_t{key} * subkeys_ + subkey];
    return other;
  }
  const size_t n = n_.load(std::memory_order_relaxed);
  if (n >= capacity_) return overflow_;
  Entry& e = entries_[n];
  e.process = process;
  e.key = key;
  e.subkey = subkey;
  n_.store(n + 1, std::memory_order_release);  // the entry is whole before a scrape sees it
  if (process != 0) ++named_;
  index = static_cast<int32_t>(n);
  return e.value;
}

Registry::Registry(Limits limits)
    : limits_(limits),
      processes_(std::make_unique<ProcessLabels[]>(limits.processes)),
      calls_(limits.series, limits.processes + 1, api_catalog().size(), kDeviceSlots),
      bytes_(limits.series, limits.processes + 1, api_catalog().size(),
             kCopyDirections * kDeviceSlots),
      offcpu_ns_(limits.series, limits.processes + 1, 1, std::size(kOffCpuCauses)),
      bounds_ns_(bucket_bounds_ns()) {
  uint16_t max_id = 0;
  for (const ApiInfo& a : api_catalog()) max_id = std::max(max_id, a.id);
  api_index_.assign(size_t{max_id} + 1, -1);
  is_copy_.assign(size_t{max_id} + 1, false);
  selects_device_.assign(size_t{max_id} + 1, false);
  for (size_t i = 0; i < api_catalog().size(); ++i) {
    api_index_[api_catalog()[i].id] = static_cast<int16_t>(i);
    is_copy_[api_catalog()[i].id] = api_catalog()[i].category == Category::Copy;
    selects_device_[api_catalog()[i].id] = api_catalog()[i].category == Category::Device;
    histograms_.push_back(std::make_unique<Histogram>(bucket_bounds_ns().size() + 1));
  }
}

const std::vector<int64_t>& Registry::bucket_bounds_ns() {
  // 1-2.5-5 steps from 1 us to 10 s: a launch (a few us) and a blocking sync (ms to s) both land
  // in buckets of their own size.
  static const std::vector<int64_t> bounds = [] {
    std::vector<int64_t> b;
    for (int64_t decade = 1000; decade <= 1'000'000'000; decade *= 10) {
      b.push_back(decade);
      b.push_back(decade * 5 / 2);
      b.push_back(decade * 5);
    }
    b.push_back(10'000'000'000);
    return b;
  }();
  return bounds;
}

int Registry::api_index(uint16_t api_id) const {
  return api_id < api_index_.size() ? api_index_[api_id] : -1;
}

uint16_t Registry::process_slot(uint32_t pid, const std::string& name) {
  std::string key = std::to_string(pid) + '/' + name;  // once per process and name: not per event
  if (auto it = slot_of_.find(key); it != slot_of_.end()) return it->second;
  const size_t n = processes_n_.load(std::memory_order_relaxed);
  // A process past the bound is remembered as "other" too, so it is not looked for again.
  if (n >= limits_.processes) return slot_of_[std::move(key)] = 0;
  processes_[n] = {name, std::to_string(pid)};
  processes_n_.store(n + 1, std::memory_order_release);
  return slot_of_[std::move(key)] = static_cast<uint16_t>(n + 1);
}

const Registry::ProcessLabels& Registry::process_labels(uint16_t slot) const {
  static const ProcessLabels other{"other", "other"};
  return slot == 0 ? other : processes_[slot - 1];
}

void Registry::add_call(uint16_t process, uint16_t api_id, uint8_t device, int64_t dur_ns,
                        bool has_duration) {
  const int idx = api_index(api_id);
  if (idx < 0) return;  // not in this build's catalogue: the decoder has counted it
  calls_.at(process, static_cast<uint16_t>(idx), std::min<uint8_t>(device, Registry::kDevices))
      .add(1);
  if (!has_duration) return;  // entry-only: no duration to observe
  Histogram& h = *histograms_[static_cast<size_t>(idx)];
  const size_t b =
      std::lower_bound(bounds_ns_.begin(), bounds_ns_.end(), dur_ns) - bounds_ns_.begin();
  h.buckets[b].add(1);
  h.sum_ns.add(static_cast<uint64_t>(std::max<int64_t>(dur_ns, 0)));
}

void Registry::add_copy_bytes(uint16_t process, uint16_t api_id, uint8_t direction, uint8_t device,
                              uint64_t bytes) {
  const int idx = api_index(api_id);
  if (idx < 0) return;
  const size_t subkey = std::min<size_t>(direction, kCopyDirections - 1) * kDeviceSlots +
                        std::min<uint8_t>(device, Registry::kDevices);
  bytes_.at(process, static_cast<uint16_t>(idx), static_cast<uint8_t>(subkey)).add(bytes);
}

void Registry::add_offcpu(uint16_t process, OffCpuCause cause, int64_t ns) {
  if (ns <= 0) return;
  offcpu_ns_.at(process, 0, static_cast<uint8_t>(cause)).add(static_cast<uint64_t>(ns));
}

void Registry::set_totals(Totals t) {
  std::lock_guard lock(totals_mu_);
  totals_ = std::move(t);
}

std::vector<Family> Registry::collect() const {
  std::vector<Family> out;
  auto api_name = [](uint16_t index) { return std::string(api_catalog()[index].name); };
  // Divided, not multiplied by 1e-9: an integer divided by a power of ten is the double nearest
  // the decimal, which prints in its few digits (x * 1e-9 prints 17 of them).
  auto labelled = [&](const CounterTable& t, Family f, auto labels_of, double divisor) {
    const size_t n = t.size();
    for (size_t i = 0; i < n; ++i) {
      const CounterTable::Entry& e = t.entry(i);
      f.series.push_back({labels_of(e), static_cast<double>(e.value.get()) / divisor, {}, 0});
    }
    out.push_back(std::move(f));
  };
  // process, pid first: what the series is of.
  auto process_labels_of = [&](uint16_t slot) {
    const ProcessLabels& p = process_labels(slot);
    return Labels{{"process", p.name}, {"pid", p.pid}};
  };
  labelled(
      calls_,
      {"gpuwhy_api_calls",
       "GPU API calls recorded, by process, device and API.",
       MetricType::Counter,
       {},
       {}},
      [&](const CounterTable::Entry& e) {
        Labels l = process_labels_of(e.process);
        l.emplace_back("device", device_label(e.subkey));
        l.emplace_back("api", api_name(e.key));
        return l;
      },
      1.0);

  Family hist{"gpuwhy_api_call_seconds",
              "Duration of GPU API calls (entry to return) by API; entry-only calls have none.",
              MetricType::Histogram,
              {},
              {},
              "seconds"};
  for (int64_t b : bucket_bounds_ns()) hist.upper_bounds.push_back(static_cast<double>(b) / 1e9);
  for (size_t i = 0; i < histograms_.size(); ++i) {
    const Histogram& h = *histograms_[i];
    Series s{{{"api", std::string(api_catalog()[i].name)}}, 0, {}, 0};
    uint64_t total = 0;
    for (const SingleWriterCounter& c : h.buckets) total += s.buckets.emplace_back(c.get());
    if (total == 0) continue;
    s.sum = static_cast<double>(h.sum_ns.get()) / 1e9;  // divided: see labelled
    hist.series.push_back(std::move(s));
  }
  out.push_back(std::move(hist));

  labelled(
      bytes_,
      {"gpuwhy_api_bytes",
       "Bytes requested by GPU memory copies, by process, device, API and direction.",
       MetricType::Counter,
       {},
       {},
       "bytes"},
      [&](const CounterTable::Entry& e) {
        Labels l = process_labels_of(e.process);
        l.emplace_back("device", device_label(static_cast<uint8_t>(e.subkey % kDeviceSlots)));
        l.emplace_back("api", api_name(e.key));
        l.emplace_back("direction",
                       copy_direction_name(static_cast<uint8_t>(e.subkey / kDeviceSlots)));
        return l;
      },
      1.0);
  labelled(
      offcpu_ns_,
      {"gpuwhy_offcpu_seconds",
       "Time traced threads spent off the CPU, by process and cause (runqueue: runnable, "
       "waiting for a CPU; futex, syscall: asleep in one; uninterruptible: D state).",
       MetricType::Counter,
       {},
       {},
       "seconds"},
      [&](const CounterTable::Entry& e) {
        Labels l = process_labels_of(e.process);
        l.emplace_back("cause", offcpu_cause_name(static_cast<OffCpuCause>(e.subkey)));
        return l;
      },
      1e9);

  Totals totals;
  {
    std::lock_guard lock(totals_mu_);
    totals = totals_;
  }
  Family recorded{"gpuwhy_events_recorded",
                  "Events received from the kernel, by kind.",
                  MetricType::Counter,
                  {},
                  {}};
  for (const auto& [kind, n] : totals.recorded)
    recorded.series.push_back({{{"kind", kind}}, static_cast<double>(n), {}, 0});
  out.push_back(std::move(recorded));
  Family lost{"gpuwhy_events_lost",
              "Events lost, by where (bpf: the kernel side, reader, store) and why.",
              MetricType::Counter,
              {},
              {}};
  for (const Totals::Loss& l : totals.lost)
    lost.series.push_back(
        {{{"source", l.source}, {"cause", l.cause}}, static_cast<double>(l.count), {}, 0});
  out.push_back(std::move(lost));

  out.push_back({"gpuwhy_traced_processes",
                 "Processes with GPU API calls or off-CPU events seen "
                 "and not exited.",
                 MetricType::Gauge,
                 {},
                 {{{}, static_cast<double>(traced_processes_.get()), {}, 0}}});
  out.push_back({"gpuwhy_build_info",
                 "The gpuwhy version serving these metrics (always 1).",
                 MetricType::Gauge,
                 {},
                 {{{{"version", GPUWHY_VERSION}}, 1.0, {}, 0}}});
  // The agent's own cost, as a client library's process collector reports it.
  for (Family& f : process_families()) out.push_back(std::move(f));
  return out;
}

}  // namespace gpuwhy::metrics
