// SPDX-License-Identifier: Apache-2.0
#include "metrics/event_metrics.hpp"

#include <sys/syscall.h>

#include <algorithm>
#include <fstream>

#include "gpuwhy/abi/events.h"

namespace gpuwhy::metrics {
namespace {

constexpr int64_t kTaskUninterruptible = 0x2;    // the kernel's TASK_UNINTERRUPTIBLE state bit
constexpr size_t kRecentNamesMax = 65536;        // only recent execs and forks matter
constexpr std::chrono::seconds kExitedKeep{10};  // a process's late events keep its name
constexpr size_t kThreadDevicesMax = 65536;      // threads that selected a device, alive
constexpr uint64_t kMaxOrdinal = 1024;           // beyond: not an ordinal (the audit's bound)

std::string proc_comm(uint32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

OffCpuCause sleep_cause(const OffCpu& o) {
  if (o.prev_state & kTaskUninterruptible) return OffCpuCause::Uninterruptible;
#ifdef SYS_futex_waitv
  if (o.syscall == SYS_futex_waitv) return OffCpuCause::Futex;
#endif
  if (o.syscall == SYS_futex) return OffCpuCause::Futex;
  if (o.syscall >= 0) return OffCpuCause::Syscall;
  return OffCpuCause::Other;
}

EventMetrics::EventMetrics(Registry& registry, NameFn process_name)
    : reg_(registry), name_(process_name ? std::move(process_name) : NameFn(proc_comm)) {}

void EventMetrics::observe(const std::vector<Event>& batch) {
  for (const Event& ev : batch) std::visit([this](const auto& e) { on(e); }, ev);
  reg_.set_traced_processes(slots_.size());
  if (exited_.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_prune_) return;
  next_prune_ = now + std::chrono::seconds(1);
  std::erase_if(exited_, [&](const auto& e) { return now - e.second.at > kExitedKeep; });
}

void EventMetrics::remember_name(uint32_t pid, std::string name) {
  if (name.empty()) return;
  std::lock_guard lock(scanned_mu_);
  if (scanned_names_.size() >= kRecentNamesMax) scanned_names_.clear();
  scanned_names_[pid] = std::move(name);
}

uint16_t EventMetrics::slot_of(uint32_t pid) {
  if (pid == last_pid_ && pid != 0) return last_slot_;
  auto it = slots_.find(pid);
  if (it == slots_.end()) {
    if (auto x = exited_.find(pid); x != exited_.end()) return x->second.slot;  // a late event
    // Read once per process: its name now, or what its exec or fork said if it is gone.
    std::string name = name_(pid);
    if (name.empty())
      if (auto r = recent_names_.find(pid); r != recent_names_.end()) name = r->second;
    if (name.empty()) {
      std::lock_guard lock(scanned_mu_);
      if (auto r = scanned_names_.find(pid); r != scanned_names_.end()) name = r->second;
    }
    if (name.empty()) name = "unknown";
    it = slots_.emplace(pid, reg_.process_slot(pid, name)).first;
  }
  last_pid_ = pid;
  last_slot_ = it->second;
  return it->second;
}

uint8_t EventMetrics::device_of(uint32_t tid) {
  if (thread_devices_.empty()) return 0;  // no thread selected one: device 0, no lookup
  if (tid == last_device_tid_) return last_device_;
  auto it = thread_devices_.find(tid);
  last_device_tid_ = tid;
  last_device_ = it == thread_devices_.end() ? 0 : it->second.device;
  return last_device_;
}

void EventMetrics::on(const ApiCall& c) {
  const uint16_t slot = slot_of(c.pid);
  // The device the thread had selected before this call began (a selection counts under the
  // device it leaves), as the audit joins calls to devices.
  const uint8_t device = device_of(c.tid);
  reg_.add_call(slot, c.api, device, c.dur, !(c.flags & GW_FLAG_NO_RETURN));
  // A copy with no kind (cuMemcpy: the driver infers it) or a bogus one counts as "default".
  if (c.f.bytes && reg_.is_copy(c.api))
    reg_.add_copy_bytes(slot, c.api, c.f.op >= 0 && c.f.op < 4 ? static_cast<uint8_t>(c.f.op) : 4,
                        device, c.f.bytes);
  // A failed selection (or one not seen to return) changes nothing.
  if (reg_.selects_device(c.api) && c.ret == 0 && !(c.flags & GW_FLAG_NO_RETURN) &&
      c.f.addr < kMaxOrdinal) {
    if (thread_devices_.size() >= kThreadDevicesMax) thread_devices_.clear();
    thread_devices_[c.tid] = {c.pid, Registry::device_slot(c.f.addr)};
    last_device_tid_ = 0;
  }
}

void EventMetrics::on(const OffCpu& o) {
  const uint16_t slot = slot_of(o.pid);
  const int64_t runq = std::clamp<int64_t>(o.runq, 0, o.dur);
  reg_.add_offcpu(slot, OffCpuCause::Runqueue, runq);
  reg_.add_offcpu(slot, sleep_cause(o), o.dur - runq);
}

void EventMetrics::on(const ProcEvent& p) {
  // A thread's selection ends with it (its tid may be reused by another process's thread).
  if (p.kind == ProcEventKind::ThreadExit && thread_devices_.erase(p.tid)) last_device_tid_ = 0;
  if (p.kind == ProcEventKind::Exit && !thread_devices_.empty()) {
    std::erase_if(thread_devices_, [&](const auto& t) { return t.second.pid == p.pid; });
    last_device_tid_ = 0;
  }
  if (p.kind == ProcEventKind::Exit) {
    if (auto it = slots_.find(p.pid); it != slots_.end()) {  // no longer traced
      exited_[p.pid] = {it->second, std::chrono::steady_clock::now()};
      slots_.erase(it);
    }
    if (last_pid_ == p.pid) last_pid_ = 0;
    return;
  }
  if (p.kind != ProcEventKind::Exec && p.kind != ProcEventKind::Fork) return;
  if (recent_names_.size() >= kRecentNamesMax) recent_names_.clear();
  const uint32_t pid = p.kind == ProcEventKind::Fork ? p.other_pid : p.pid;
  if (pid) recent_names_[pid] = std::string(comm_view(p.comm));
  if (exited_.erase(pid) && last_pid_ == pid) last_pid_ = 0;  // a reused pid is named afresh
  // An exec renames a process already counted (a launcher that execs the trainer).
  if (p.kind == ProcEventKind::Exec)
    if (auto it = slots_.find(pid); it != slots_.end()) {
      it->second = reg_.process_slot(pid, recent_names_[pid]);
      if (last_pid_ == pid) last_pid_ = 0;
    }
}

void EventMetrics::on(const TaskRename& r) {
  if (r.tid != r.pid) return;  // a thread's name is not its process's
  if (auto it = slots_.find(r.pid); it != slots_.end()) {
    it->second = reg_.process_slot(r.pid, std::string(comm_view(r.comm)));
    if (last_pid_ == r.pid) last_pid_ = 0;
  }
}

}  // namespace gpuwhy::metrics
