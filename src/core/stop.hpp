// SPDX-License-Identifier: Apache-2.0
// SIGINT/SIGTERM -> a flag the long-running loops poll; a second signal asks them to hurry (drop
// what is in flight, finish the file at once); a third exits at once. With a launched command
// (`trace -- CMD`) the first signal only reaches the command and each step comes one later.
#pragma once

#include <sys/types.h>

#include <atomic>

namespace gpuwhy {

// `hangup_stops`: SIGHUP is a stop signal too (a plain trace whose terminal went away finishes
// its file). Otherwise (the flight recorder, a service) SIGHUP is noted on stderr and ignored.
void install_stop_signals(bool hangup_stops = true);
bool stop_requested();
bool hurry_requested();  // a second signal came
void request_stop();

// SIGINT/SIGTERM that a process sends the agent (kill) go on to `pid`. A terminal's Ctrl-C is not
// passed on: it reached the command's process group, the command with it. 0: none.
void forward_stop_signals_to(pid_t pid);
// Stop signals received so far.
int stop_signal_count();

}  // namespace gpuwhy
