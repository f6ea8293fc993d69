// SPDX-License-Identifier: Apache-2.0
#include "core/stop.hpp"

#include <csignal>
#include <unistd.h>

namespace gpuwhy {
namespace {
std::atomic<int> g_signals{0};
std::atomic<pid_t> g_forward{0};

void on_signal(int sig, siginfo_t* info, void*) {
  const pid_t to = g_forward.load();
  const int before = g_signals.fetch_add(1);
  // SI_USER/SI_QUEUE (<= 0): sent by a process; a terminal's signal comes from the kernel.
  if (to > 0 && info != nullptr && info->si_code <= 0) ::kill(to, sig);
  if (before >= (to > 0 ? 2 : 1)) _exit(130);  // once more than asked: the user means it
}
}  // namespace

void install_stop_signals() {
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

bool stop_requested() {
  return g_signals.load(std::memory_order_relaxed) > (g_forward.load() > 0 ? 1 : 0);
}
void request_stop() { g_signals.fetch_add(g_forward.load() > 0 ? 2 : 1); }
void forward_stop_signals_to(pid_t pid) { g_forward.store(pid); }
int stop_signal_count() { return g_signals.load(std::memory_order_relaxed); }

}  // namespace gpuwhy
