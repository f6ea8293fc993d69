// SPDX-License-Identifier: Apache-2.0
// `gpuwhy trace -- CMD ARGS...`: the command is forked first and waits on a pipe before its
// exec, so its pid is traced and the probes are loaded before its first instruction; start()
// lets it run. The exit status follows the shell's convention (128 + signal when killed).
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpuwhy::cli {

class LaunchedCommand {
 public:
  // Forks the child, which waits. Call before any thread starts (the child only reads a pipe
  // and execs).
  static Result<std::unique_ptr<LaunchedCommand>> fork_waiting(const std::vector<std::string>& argv);
  ~LaunchedCommand();  // a child never started exits (127) without running the command
  LaunchedCommand(const LaunchedCommand&) = delete;
  LaunchedCommand& operator=(const LaunchedCommand&) = delete;

  pid_t pid() const { return pid_; }
  // Lets the child exec the command; an error when the exec failed (not found, not executable).
  Status start();
  // The exit status once the command has ended, without waiting.
  std::optional<int> poll();
  // Waits for the command to end; its exit status.
  int wait();

 private:
  LaunchedCommand() = default;
  std::string name_;
  pid_t pid_ = -1;
  int go_fd_ = -1;   // write end: one byte lets the child exec
  int err_fd_ = -1;  // read end: the child's errno when its exec failed, EOF when it succeeded
  std::optional<int> status_;
};

}  // namespace gpuwhy::cli
