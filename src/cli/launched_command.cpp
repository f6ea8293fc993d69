// SPDX-License-Identifier: Apache-2.0
#include "cli/launched_command.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpuwhy::cli {
namespace {

int shell_status(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 1;
}

}  // namespace

Result<std::unique_ptr<LaunchedCommand>> LaunchedCommand::fork_waiting(
    const std::vector<std::string>& argv) {
  if (argv.empty()) return Error{"no command to run", "give it after --, e.g. trace -- ./train"};
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int go[2], err[2];
  if (::pipe2(go, O_CLOEXEC) != 0) return errno_error("cannot make a pipe", errno);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(go[0]);
    ::close(go[1]);
    return errno_error("cannot make a pipe", e);
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {go[0], go[1], err[0], err[1]}) ::close(fd);
    return errno_error("cannot fork to run " + argv[0], e);
  }
  if (pid == 0) {
    // The child: async-signal-safe calls only. The command gets default signal dispositions
    // (the agent ignores SIGPIPE, and an ignored signal stays ignored across exec).
    ::close(go[1]);
    ::close(err[0]);
    for (int sig : {SIGPIPE, SIGINT, SIGTERM}) ::signal(sig, SIG_DFL);
    char c = 0;
    ssize_t n;
    do n = ::read(go[0], &c, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1) ::_exit(127);  // the agent gave up before starting it
    ::execvp(args[0], args.data());
    const int e = errno;
    (void)!::write(err[1], &e, sizeof(e));
    ::_exit(127);
  }
  ::close(go[0]);
  ::close(err[1]);
  std::unique_ptr<LaunchedCommand> c(new LaunchedCommand());
  c->name_ = argv[0];
  c->pid_ = pid;
  c->go_fd_ = go[1];
  c->err_fd_ = err[0];
  return c;
}

LaunchedCommand::~LaunchedCommand() {
  const bool never_started = go_fd_ >= 0;
  if (go_fd_ >= 0) ::close(go_fd_);  // a child still waiting reads EOF and exits
  if (err_fd_ >= 0) ::close(err_fd_);
  if (never_started) (void)wait();
}

Status LaunchedCommand::start() {
  const char go = 1;
  ssize_t n;
  do n = ::write(go_fd_, &go, 1);
  while (n < 0 && errno == EINTR);
  ::close(go_fd_);
  go_fd_ = -1;
  int e = 0;
  do n = ::read(err_fd_, &e, sizeof(e));
  while (n < 0 && errno == EINTR);
  ::close(err_fd_);
  err_fd_ = -1;
  if (n == static_cast<ssize_t>(sizeof(e))) {
    (void)wait();
    return errno_error("cannot run " + name_, e, "check the command's name and its PATH");
  }
  return {};
}

std::optional<int> LaunchedCommand::poll() {
  if (status_) return status_;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) status_ = shell_status(st);
  return status_;
}

int LaunchedCommand::wait() {
  while (!status_) {
    int st = 0;
    const pid_t r = ::waitpid(pid_, &st, 0);
    if (r == pid_) status_ = shell_status(st);
    else if (r < 0 && errno != EINTR) status_ = 1;
  }
  return *status_;
}

}  // namespace gpuwhy::cli
