// SPDX-License-Identifier: Apache-2.0
// churn: process churn as a busy host has it. Starts --procs N short processes, --parallel P at a
// time, as fast as it can: every --gpu-every K-th runs --gpu PROGRAM (first_call, with
// --calls C and LD_LIBRARY_PATH=--lib-dir, so its runtime may be a copy at a new path), the
// others /bin/true. Prints
//   {"workload":"churn","procs":N,"gpu_procs":G,"gpu_calls":G*C,"failed":F,"elapsed_ns":..,
//    "procs_per_s":..}
// failed: children that did not exit 0 (their calls are not in gpu_calls' promise).
//
// usage: churn --gpu PROGRAM --lib-dir DIR [--procs N (3000)] [--gpu-every K (10)]
//              [--calls C (10)] [--parallel P (8)]
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/args.hpp"
#include "common/json.hpp"

extern char** environ;

namespace {

// The environment with LD_LIBRARY_PATH set to `dir` (for GPU children).
std::vector<std::string> env_with_lib_dir(const std::string& dir) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string_view(*e).substr(0, 16) != "LD_LIBRARY_PATH=") env.emplace_back(*e);
  env.push_back("LD_LIBRARY_PATH=" + dir);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& v) {
  std::vector<char*> p;
  for (std::string& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const gw::Args args(argc, argv, {"gpu", "lib-dir", "procs", "gpu-every", "calls", "parallel"},
                      {},
                      "--gpu PROGRAM --lib-dir DIR [--procs N (3000)] [--gpu-every K (10)] "
                      "[--calls C (10)] [--parallel P (8)]");
  if (!args.has("gpu") || !args.has("lib-dir")) args.fail("--gpu and --lib-dir are required");
  const uint64_t procs = args.u64("procs", 3000), every = args.u64("gpu-every", 10);
  const uint64_t calls = args.u64("calls", 10), parallel = args.u64("parallel", 8);
  if (every == 0 || parallel == 0) args.fail("--gpu-every and --parallel must be at least 1");

  std::vector<std::string> gpu_argv = {args.str("gpu", ""), "--calls", std::to_string(calls)};
  std::vector<std::string> true_argv = {"/bin/true"};
  std::vector<std::string> gpu_env = env_with_lib_dir(args.str("lib-dir", ""));
  auto gpu_args = pointers(gpu_argv), plain_args = pointers(true_argv);
  auto gpu_envp = pointers(gpu_env);

  // The children's output is not ours: one JSON line, the summary, is what churn prints.
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t started = 0, running = 0, gpu_procs = 0, failed = 0;
  while (started < procs || running > 0) {
    if (started < procs && running < parallel) {
      const bool gpu = started % every == 0;
      pid_t pid = 0;
      const int rc = gpu ? posix_spawn(&pid, gpu_args[0], &quiet, nullptr, gpu_args.data(),
                                       gpu_envp.data())
                         : posix_spawn(&pid, plain_args[0], &quiet, nullptr, plain_args.data(),
                                       environ);
      ++started;
      if (rc != 0) {
        ++failed;
        continue;
      }
      gpu_procs += gpu;
      ++running;
      continue;
    }
    int st = 0;
    if (::wait(&st) > 0) {
      --running;
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) ++failed;
    }
  }
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - t0)
                         .count();
  gw::print_line(gw::Json()
                     .str("workload", "churn")
                     .num("procs", procs)
                     .num("gpu_procs", gpu_procs)
                     .num("gpu_calls", gpu_procs * calls)
                     .num("failed", failed)
                     .num("elapsed_ns", ns)
                     .num("procs_per_s", static_cast<uint64_t>(procs * 1e9 / (ns ? ns : 1))));
  return failed == 0 ? 0 : 1;
}
