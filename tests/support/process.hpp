// SPDX-License-Identifier: Apache-2.0
// Test support: run programs, run the real agent, make temp dirs. Used by the root tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace gpuwhy::testing {

// Empty when this process may load BPF (root + BTF); otherwise why the root tests skip.
std::string root_skip_reason();

struct TempDir {
  TempDir();
  ~TempDir();
  std::string path;
  std::string file(const std::string& name) const { return path + "/" + name; }
};

struct RunResult {
  int exit_code = -1;  // 128+signal when killed
  std::string out;     // stdout
  std::string err;     // stderr
};

// Runs a program to completion (stdin /dev/null), capturing stdout and stderr.
RunResult run(const std::vector<std::string>& argv,
              const std::map<std::string, std::string>& env = {}, int timeout_s = 120);

class Child {
 public:
  // Starts a program in the background; stdout/stderr go to files in `dir`.
  Child(const std::vector<std::string>& argv, const std::string& dir,
        const std::map<std::string, std::string>& env = {});
  ~Child();
  pid_t pid() const { return pid_; }
  // Sends `sig` and waits (bounded); returns the exit code (128+signal when killed).
  int stop(int sig, int timeout_s = 60);
  int wait(int timeout_s = 60);
  std::string stdout_text() const;
  std::string stderr_text() const;

 private:
  pid_t pid_ = -1;
  std::string out_path_, err_path_;
  int status_ = -1;
};

// `gpuwhy trace` running in the background, started with --ready-file and waited for.
class Agent {
 public:
  Agent(const std::string& db, const std::vector<std::string>& extra_args, const TempDir& dir);
  bool ready() const { return ready_; }
  int stop() { return child_.stop(SIGINT_VALUE); }
  int stop_with(int sig) { return child_.stop(sig); }
  int kill9() { return child_.stop(9); }
  int wait(int timeout_s = 60) { return child_.wait(timeout_s); }  // for an agent that ends itself
  std::string stderr_text() const { return child_.stderr_text(); }
  pid_t pid() const { return child_.pid(); }

 private:
  static constexpr int SIGINT_VALUE = 2;
  Child child_;
  bool ready_ = false;
};

std::string gpuwhy_binary();
std::string workload(const std::string& name);
std::string sim_dir();

}  // namespace gpuwhy::testing
