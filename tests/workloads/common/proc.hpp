// SPDX-License-Identifier: Apache-2.0
// Process and thread plumbing for the workloads: starting co-runner processes, pinning threads.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gw {

// The directory holding this executable (co-runners such as cpu_hog are built next to it).
std::string self_dir();
std::string self_exe();

// posix_spawn()s `argv` (argv[0] is the path) with `env` ("NAME=value" strings); exits 1 with a
// message if that fails. Spawning (not fork()) keeps the simulator's GPU thread out of children.
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env);

// The current environment with `overrides` ("NAME=value") replacing or adding entries.
std::vector<std::string> environment_with(const std::vector<std::string>& overrides);

// Waits for `pid`; returns its exit status, or 128 + signal number.
int wait_exit(pid_t pid);
// SIGTERM, then reap.
void stop_process(pid_t pid);

// Pins the calling thread (only it: the simulator's GPU thread stays free) to `cpu`.
void pin_this_thread(int cpu);
// Names the calling thread (what a tracer sees as its comm); at most 15 characters.
void name_this_thread(const std::string& name);

}  // namespace gw
