// SPDX-License-Identifier: Apache-2.0
#include "common/proc.hpp"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace gw {

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) {
    std::perror("readlink /proc/self/exe");
    std::exit(1);
  }
  return std::string(buf, static_cast<size_t>(n));
}

std::string self_dir() {
  const std::string exe = self_exe();
  return exe.substr(0, exe.rfind('/'));
}

std::vector<std::string> environment_with(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& o : overrides) replaced |= o.substr(0, o.find('=')) == name;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, argv[0].c_str(), nullptr, nullptr, cargv.data(), cenv.data());
  if (err != 0) {
    std::fprintf(stderr, "cannot start %s: %s\n", argv[0].c_str(), std::strerror(err));
    std::exit(1);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

void stop_process(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  wait_exit(pid);
}

void pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {  // 0: the calling thread only
    std::fprintf(stderr, "cannot pin thread to CPU %d: %s\n", cpu, std::strerror(errno));
    std::exit(1);
  }
}

void name_this_thread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace gw
