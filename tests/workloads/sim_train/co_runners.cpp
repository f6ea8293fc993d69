// SPDX-License-Identifier: Apache-2.0
#include "sim_train/co_runners.hpp"

#include <unistd.h>

#include <string>

#include "common/proc.hpp"
#include "gwsim/clock.hpp"

namespace gw {

void Hog::start(int cpu, int threads) {
  if (pid_.load() != 0) return;
  pid_ = spawn(
      {self_dir() + "/cpu_hog", "--cpu", std::to_string(cpu), "--threads", std::to_string(threads)},
      environment_with({}));
  // Let it get going, so the contention starts now rather than a scheduler tick later.
  gwsim::sleep_ns(5'000'000);
}

void Hog::stop() { stop_process(pid_.exchange(0)); }

CkptWriter::CkptWriter(std::mutex& mutex, uint64_t hold_ns, uint64_t period_ns)
    : mutex_(mutex), hold_ns_(hold_ns), period_ns_(period_ns), thread_([this] { run(); }) {
  while (tid_.load() == 0) gwsim::sleep_ns(100'000);
}

CkptWriter::~CkptWriter() {
  stop_ = true;
  thread_.join();
}

void CkptWriter::run() {
  name_this_thread("ckpt-writer");
  tid_ = gettid();
  uint64_t next = gwsim::now_ns() + (period_ns_ - hold_ns_);
  while (!stop_.load()) {
    gwsim::sleep_until_ns(next);
    if (stop_.load()) break;
    {
      std::lock_guard lk(mutex_);
      gwsim::burn_cpu_ns(hold_ns_ / 2);  // serialise the state
      gwsim::sleep_ns(hold_ns_ / 2);     // write it out
    }
    holds_.fetch_add(1);
    next += period_ns_;
  }
}

}  // namespace gw
