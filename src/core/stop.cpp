// SPDX-License-Identifier: Apache-2.0
#include "core/stop.hpp"

#include <csignal>
#include <unistd.h>

namespace gpuwhy {
namespace {
std::atomic<int> g_signals{0};

void say(const char* msg) {
  size_t n = 0;
  while (msg[n]) ++n;
  (void)!write(STDERR_FILENO, msg, n);
}

// First signal: stop cleanly. Second: hurry (the loops drop what is still in flight and mark the
// file 'stopped'). Third: the user means it; the file keeps its committed batches.
void on_signal(int) {
  const int before = g_signals.fetch_add(1);
  if (before == 1)
    say("\ngpuwhy: interrupted again: finishing the file now, without the events still in flight "
        "(interrupt once more to exit at once, leaving the file marked 'recording')\n");
  if (before >= 2) {
    say("\ngpuwhy: interrupted a third time: exiting now; the file keeps every batch committed so "
        "far (the last second or so is lost) and stays marked 'recording'\n");
    _exit(130);
  }
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
bool hurry_requested() { return g_signals.load(std::memory_order_relaxed) > 1; }
void request_stop() { g_signals.fetch_add(1); }

}  // namespace gpuwhy
