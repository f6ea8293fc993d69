// SPDX-License-Identifier: Apache-2.0
#include "core/stop.hpp"

#include <csignal>
#include <unistd.h>

namespace gpuwhy {
namespace {
std::atomic<int> g_signals{0};
std::atomic<pid_t> g_forward{0};

void say(const char* msg) {
  size_t n = 0;
  while (msg[n]) ++n;
  (void)!write(STDERR_FILENO, msg, n);
}

// First signal: stop cleanly. Second: hurry (the loops drop what is still in flight and mark the
// file 'stopped'). Third: the user means it; the file keeps its committed batches. With a
// launched command, a signal a process sent us goes on to it, and the first one is its alone.
void on_signal(int sig, siginfo_t* info, void*) {
  const pid_t to = g_forward.load();
  const int before = g_signals.fetch_add(1);
  // SI_USER/SI_QUEUE (<= 0): sent by a process; a terminal's signal comes from the kernel.
  if (to > 0 && info != nullptr && info->si_code <= 0) ::kill(to, sig);
  const int offset = to > 0 ? 1 : 0;
  if (before == offset + 1)
    say("\ngpuwhy: interrupted again: finishing the file now, without the events still in flight "
        "(interrupt once more to exit at once, leaving the file marked 'recording')\n");
  if (before >= offset + 2) {
    say("\ngpuwhy: interrupted a third time: exiting now; the file keeps every batch committed so "
        "far (the last second or so is lost) and stays marked 'recording'\n");
    _exit(130);
  }
}
// A service manager's "reload": the flight recorder writes one file in place and logs to stderr,
// so there is nothing to re-open; recording goes on.
void on_hangup(int) {
  say("gpuwhy: SIGHUP: still recording into the same file (nothing to re-open: the trace is "
      "written in place and logs go to stderr); SIGTERM or Ctrl-C stops it\n");
}
}  // namespace

void install_stop_signals(bool hangup_stops) {
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  if (hangup_stops) {
    sigaction(SIGHUP, &sa, nullptr);
  } else {
    struct sigaction hup {};
    hup.sa_handler = on_hangup;
    hup.sa_flags = SA_RESTART;
    sigemptyset(&hup.sa_mask);
    sigaction(SIGHUP, &hup, nullptr);
  }
  signal(SIGPIPE, SIG_IGN);
}

static int offset() { return g_forward.load() > 0 ? 1 : 0; }
bool stop_requested() { return g_signals.load(std::memory_order_relaxed) > offset(); }
bool hurry_requested() { return g_signals.load(std::memory_order_relaxed) > offset() + 1; }
void request_stop() { g_signals.fetch_add(offset() + 1); }
void forward_stop_signals_to(pid_t pid) { g_forward.store(pid); }
int stop_signal_count() { return g_signals.load(std::memory_order_relaxed); }

}  // namespace gpuwhy
