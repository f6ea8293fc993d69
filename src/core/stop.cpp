// SPDX-License-Identifier: Apache-2.0
#include "core/stop.hpp"

#include <csignal>
#include <unistd.h>

namespace gpuwhy {
namespace {
std::atomic<int> g_signals{0};

void on_signal(int) {
  if (g_signals.fetch_add(1) >= 1) _exit(130);  // second Ctrl-C: the user means it
}
}  // namespace

void install_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

bool stop_requested() { return g_signals.load(std::memory_order_relaxed) > 0; }
void request_stop() { g_signals.fetch_add(1); }

}  // namespace gpuwhy
