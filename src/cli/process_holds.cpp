// SPDX-License-Identifier: Apache-2.0
#include "cli/process_holds.hpp"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <utility>

namespace gpuwhy::cli {

namespace {

// Whether /proc/PID/stat says the process is stopped ('T'). Async-signal-safe: no allocation.
bool is_stopped(uint32_t pid) {
  char path[40];
  std::snprintf(path, sizeof(path), "/proc/%u/stat", pid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return false;
  // "pid (comm) S ...": the state follows the last ')'.
  for (ssize_t i = n - 1; i > 0; --i)
    if (buf[i] == ')') return i + 2 < n && buf[i + 2] == 'T';
  return false;
}

// The guardian: reads held pids until the agent's end closes the pipe, then continues those of
// them still stopped (an agent killed with SIGKILL could not). Ignores the terminal's signals,
// which reach it with the agent's process group. No allocation: it runs after a fork.
// `map_fd`: the kernel's list of stopped pids (gw_held_pids), or -1.
[[noreturn]] void guard(int fd, int map_fd) {
  // Nothing of the agent's stays open here but the list (a map alone: no program runs for it):
  // its BPF links must go when the agent closes them, its trace file's lock with the agent, its
  // output pipes at its exit.
  int keep[2] = {fd, map_fd};
  if (keep[0] > keep[1]) std::swap(keep[0], keep[1]);
  unsigned from = 0;
  for (int k : keep) {
    if (k < 0) continue;
    if (static_cast<unsigned>(k) > from) ::close_range(from, static_cast<unsigned>(k) - 1, 0);
    from = static_cast<unsigned>(k) + 1;
  }
  ::close_range(from, ~0u, 0);
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGTERM, SIG_IGN);
  ::signal(SIGHUP, SIG_IGN);
  ::prctl(PR_SET_NAME, "gpuwhy-guard");
  static uint32_t held[4096];
  size_t n = 0;
  uint32_t pid = 0;
  for (;;) {
    const ssize_t r = ::read(fd, &pid, sizeof(pid));
    if (r == sizeof(pid)) {
      held[n++ % 4096] = pid;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    break;
  }
  for (size_t i = 0; i < n && i < 4096; ++i)
    if (is_stopped(held[i])) ::kill(static_cast<pid_t>(held[i]), SIGCONT);
  // Stops the agent never heard of (it died with their records unread in the ring), and any the
  // pipe missed. A pid user space continued is off the list.
  if (map_fd >= 0) {
    uint32_t key = 0, next = 0;
    for (const void* at = nullptr; ::bpf_map_get_next_key(map_fd, at, &next) == 0; at = &key) {
      key = next;
      if (is_stopped(key)) ::kill(static_cast<pid_t>(key), SIGCONT);
    }
  }
  ::_exit(0);
}

}  // namespace

void ProcessHolds::start_guardian() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[1]);
    guard(fds[0], held_map_fd_);
  }
  ::close(fds[0]);
  if (pid < 0) {
    ::close(fds[1]);
    return;
  }
  guardian_ = pid;
  guardian_fd_ = fds[1];
}

ProcessHolds::ProcessHolds(std::chrono::milliseconds bound, int held_map_fd)
    : bound_(bound), held_map_fd_(held_map_fd) {
  start_guardian();  // before the watchdog thread: the fork copies one thread only
  watchdog_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "gpuwhy-holds");
    watch();
  });
}

ProcessHolds::~ProcessHolds() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  watchdog_.join();
  release_all();
  if (guardian_fd_ >= 0) ::close(guardian_fd_);
  if (guardian_ > 0) ::waitpid(guardian_, nullptr, 0);
}

void ProcessHolds::held(uint32_t pid) {
  std::lock_guard lock(mu_);
  if (held_.emplace(pid, Clock::now()).second) ++held_total_;
  if (guardian_fd_ >= 0) (void)!::write(guardian_fd_, &pid, sizeof(pid));
  cv_.notify_all();
}

// SIGCONT to a process already gone (ESRCH) or never stopped is harmless. A SIGSTOP the kernel
// queued is cancelled by a later SIGCONT, so the order of the two cannot leave it stopped.
bool ProcessHolds::release(uint32_t pid) {
  std::lock_guard lock(mu_);
  if (held_.erase(pid) == 0) return false;
  continue_pid(pid);
  return true;
}

void ProcessHolds::continue_pid(uint32_t pid) {
  if (held_map_fd_ >= 0) (void)::bpf_map_delete_elem(held_map_fd_, &pid);
  ::kill(static_cast<pid_t>(pid), SIGCONT);
}

void ProcessHolds::continue_unseen(uint32_t pid) {
  std::lock_guard lock(mu_);
  continue_pid(pid);
}

void ProcessHolds::release_all() {
  std::lock_guard lock(mu_);
  for (const auto& [pid, since] : held_) continue_pid(pid);
  held_.clear();
}

uint64_t ProcessHolds::held_total() const {
  std::lock_guard lock(mu_);
  return held_total_;
}

// The discovery loop may be busy attaching a large library; this thread alone keeps the bound.
void ProcessHolds::watch() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (held_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto oldest = held_.begin();
    for (auto it = held_.begin(); it != held_.end(); ++it)
      if (it->second < oldest->second) oldest = it;
    const auto due = oldest->second + bound_;
    if (Clock::now() < due) {
      cv_.wait_until(lock, due);
      continue;
    }
    continue_pid(oldest->first);
    held_.erase(oldest);
  }
}

}  // namespace gpuwhy::cli
