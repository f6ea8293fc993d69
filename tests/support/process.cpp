// SPDX-License-Identifier: Apache-2.0
#include "support/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace gpuwhy::testing {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

pid_t spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const std::string& out, const std::string& err) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  setpgid(0, 0);
  int devnull = open("/dev/null", O_RDONLY);
  dup2(devnull, 0);
  int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(o, 1);
  dup2(e, 2);
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

int wait_bounded(pid_t pid, int timeout_s, int* raw) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      *raw = status;
      return decode_status(status);
    }
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      *raw = status;
      return -2;  // timed out: a hang is a failure the caller reports
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

std::string root_skip_reason() {
  if (geteuid() != 0) return "not root: these tests load BPF programs (run as root, as CI does)";
  struct stat st {};
  if (stat("/sys/kernel/btf/vmlinux", &st) != 0) return "kernel has no BTF (/sys/kernel/btf/vmlinux)";
  return {};
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/gpuwhy-test-XXXXXX";
  path = mkdtemp(tmpl);
}

TempDir::~TempDir() {
  if (std::getenv("GPUWHY_KEEP_TEST_DIRS") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
}

RunResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              int timeout_s) {
  TempDir dir;
  RunResult r;
  pid_t pid = spawn(argv, env, dir.file("out"), dir.file("err"));
  int raw = 0;
  r.exit_code = wait_bounded(pid, timeout_s, &raw);
  r.out = slurp(dir.file("out"));
  r.err = slurp(dir.file("err"));
  return r;
}

Child::Child(const std::vector<std::string>& argv, const std::string& dir,
             const std::map<std::string, std::string>& env) {
  static int n = 0;
  out_path_ = dir + "/child" + std::to_string(++n) + ".out";
  err_path_ = dir + "/child" + std::to_string(n) + ".err";
  pid_ = spawn(argv, env, out_path_, err_path_);
}

Child::~Child() {
  if (pid_ > 0 && status_ < 0) stop(SIGKILL, 10);
}

int Child::stop(int sig, int timeout_s) {
  if (status_ >= 0 || pid_ <= 0) return status_;
  kill(pid_, sig);
  return wait(timeout_s);
}

int Child::wait(int timeout_s) {
  if (status_ >= 0 || pid_ <= 0) return status_;
  int raw = 0;
  int code = wait_bounded(pid_, timeout_s, &raw);
  status_ = code < 0 ? 255 : code;
  return code;
}

std::string Child::stdout_text() const { return slurp(out_path_); }
std::string Child::stderr_text() const { return slurp(err_path_); }

Agent::Agent(const std::string& db, const std::vector<std::string>& extra_args, const TempDir& dir)
    : child_([&] {
        std::vector<std::string> argv = {gpuwhy_binary(), "trace", "--quiet", "--out", db,
                                         "--ready-file", dir.file("agent.ready")};
        argv.insert(argv.end(), extra_args.begin(), extra_args.end());
        // GPUWHY_TEST_TRACE_FLAGS (words separated by spaces): added to every agent a test
        // starts, to run a suite in another mode (docs/testing.md: `--full` against the
        // adaptive default, issue 33).
        if (const char* more = std::getenv("GPUWHY_TEST_TRACE_FLAGS")) {
          std::istringstream words(more);
          for (std::string w; words >> w;) argv.push_back(w);
        }
        return argv;
      }(), dir.path) {
  const std::string ready = dir.file("agent.ready");
  for (int i = 0; i < 600 && !ready_; ++i) {
    struct stat st {};
    if (stat(ready.c_str(), &st) == 0) ready_ = true;
    else std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string gpuwhy_binary() { return GW_GPUWHY; }
std::string workload(const std::string& name) { return std::string(GW_WORKLOAD_DIR) + "/" + name; }
std::string sim_dir() { return GW_SIM_DIR; }

}  // namespace gpuwhy::testing
