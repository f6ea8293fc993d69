// SPDX-License-Identifier: Apache-2.0
// SIGINT/SIGTERM -> a flag the long-running loops poll; a second signal exits at once.
// With a launched command (`trace -- CMD`), signals are passed on to it instead: the first only
// reaches the command, the second stops the trace, a third exits at once.
#pragma once

#include <sys/types.h>

#include <atomic>

namespace gpuwhy {

void install_stop_signals();
bool stop_requested();
void request_stop();

// SIGINT/SIGTERM that a process sends the agent (kill) go on to `pid`. A terminal's Ctrl-C is not
// passed on: it reached the command's process group, the command with it. 0: none.
void forward_stop_signals_to(pid_t pid);
// Stop signals received so far.
int stop_signal_count();

}  // namespace gpuwhy
