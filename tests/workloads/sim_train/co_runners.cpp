// SPDX-License-Identifier: Apache-2.0
#include "sim_train/co_runners.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

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

Loader::Loader(uint64_t batch_bytes, uint64_t produce_ns) {
  int p[2];
  if (pipe(p) != 0) {
    std::perror("sim_train: pipe");
    std::exit(1);
  }
  pid_ = fork();
  if (pid_ < 0) {
    std::perror("sim_train: fork");
    std::exit(1);
  }
  if (pid_ == 0) {
    close(p[0]);
    prctl(PR_SET_NAME, "loader");
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    const std::vector<char> batch(batch_bytes, 7);
    for (;;) {
      gwsim::sleep_ns(produce_ns);
      for (size_t off = 0; off < batch.size();) {
        const ssize_t n = write(p[1], batch.data() + off, batch.size() - off);
        if (n <= 0) _exit(0);  // the trainer is done: the pipe is closed
        off += static_cast<size_t>(n);
      }
    }
  }
  close(p[1]);
  fd_ = p[0];
}

Loader::~Loader() {
  close(fd_);
  stop_process(pid_);
}

Neighbour::Neighbour(int cpu, uint64_t period_ns, uint64_t run_ns) {
  other_pid_ = fork();
  if (other_pid_ < 0) {
    std::perror("sim_train: fork");
    std::exit(1);
  }
  if (other_pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    pin_this_thread(cpu);
    // Seen by the tracer under the parent's name first: its naps are off-CPU intervals.
    for (int i = 0; i < 30; ++i) gwsim::sleep_ns(10'000'000);
    prctl(PR_SET_NAME, "other_job");
    for (uint64_t burst = 0;; ++burst) {
      gwsim::burn_cpu_ns(1'000'000 + (burst * 7919 % 5) * 1'000'000);  // 1..5 ms
      gwsim::sleep_ns(100'000);
    }
  }
  thread_ = std::thread([this, cpu, period_ns, run_ns] { helper(cpu, period_ns, run_ns); });
  while (helper_tid_.load() == 0) gwsim::sleep_ns(100'000);
  // The other job has its new name before the trainer steps.
  gwsim::sleep_ns(350'000'000);
}

Neighbour::~Neighbour() {
  stop_ = true;
  thread_.join();
  stop_process(other_pid_);
}

void Neighbour::helper(int cpu, uint64_t period_ns, uint64_t run_ns) {
  name_this_thread("cuda-EvtHandlr");
  pin_this_thread(cpu);
  helper_tid_ = gettid();
  while (!stop_.load()) {
    gwsim::sleep_ns(period_ns);
    gwsim::burn_cpu_ns(run_ns);
    wakeups_.fetch_add(1);
  }
}

void read_batch(int fd, void* buf, size_t n) {
  auto* out = static_cast<char*>(buf);
  for (size_t off = 0; off < n;) {
    const ssize_t got = read(fd, out + off, n - off);
    if (got <= 0) {
      std::fprintf(stderr, "sim_train: the loader's pipe ended\n");
      std::exit(1);
    }
    off += static_cast<size_t>(got);
  }
}

}  // namespace gw
