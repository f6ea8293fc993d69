// SPDX-License-Identifier: Apache-2.0
#include "device/stats.hpp"

#include <algorithm>

#include "gwsim/clock.hpp"

namespace gwsim {

ApiCounter* Stats::api(const char* name) {
  std::lock_guard lk(mu_);
  for (const auto& a : apis_) {
    if (a->name == name) return a.get();
  }
  apis_.push_back(std::make_unique<ApiCounter>(name));
  return apis_.back().get();
}

ThreadStats& Stats::current_thread() {
  const pid_t tid = current_tid();
  ThreadStats& t = threads_[tid];
  t.tid = tid;
  // Refresh the name every time: workloads name their threads after they start.
  t.name = current_thread_name();
  return t;
}

void Stats::add_blocked(const ApiCounter* api, uint64_t ns) {
  if (ns == 0) return;
  std::lock_guard lk(mu_);
  ThreadStats& t = current_thread();
  t.blocked.ns += ns;
  ++t.blocked.count;
  BlockedTime& b = t.by_api[api != nullptr ? api->name : "?"];
  b.ns += ns;
  ++b.count;
}

void Stats::add_sleep(uint64_t ns) {
  if (ns == 0) return;
  std::lock_guard lk(mu_);
  current_thread().sleep_ns += ns;
}

void Stats::add_burn(uint64_t ns) {
  if (ns == 0) return;
  std::lock_guard lk(mu_);
  current_thread().cpu_burn_ns += ns;
}

void Stats::add_section(std::string key, std::function<std::string()> render) {
  std::lock_guard lk(mu_);
  for (auto& s : sections_) {
    if (s.first == key) {
      s.second = std::move(render);
      return;
    }
  }
  sections_.emplace_back(std::move(key), std::move(render));
}

std::vector<std::pair<std::string, uint64_t>> Stats::calls() {
  std::lock_guard lk(mu_);
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& a : apis_) out.emplace_back(a->name, a->calls.load(std::memory_order_relaxed));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<ThreadStats> Stats::threads() {
  std::lock_guard lk(mu_);
  std::vector<ThreadStats> out;
  for (const auto& [tid, t] : threads_) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, std::string>> Stats::sections() {
  std::vector<std::pair<std::string, std::function<std::string()>>> copy;
  {
    std::lock_guard lk(mu_);
    copy = sections_;
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, render] : copy) out.emplace_back(key, render());
  return out;
}

}  // namespace gwsim
