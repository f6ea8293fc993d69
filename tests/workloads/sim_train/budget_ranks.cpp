// SPDX-License-Identifier: Apache-2.0
#include "sim_train/budget_ranks.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "common/json.hpp"
#include "common/proc.hpp"
#include "gwsim/clock.hpp"
#include "gwsim/gwsim.h"
#include "sim_train/budget_gpu.hpp"
#include "sim_train/ranks.hpp"
#include "sim_train/trainer.hpp"

namespace gw {
namespace {

// Reading and preparing this rank's shard of the data: real CPU work before the step's GPU
// work, so a rank with more of it reaches its all-reduce late.
__attribute__((noinline)) void load_shard(uint64_t ns) { gwsim::burn_cpu_ns(ns); }

}  // namespace

int run_budget_launcher(const BudgetSettings& s, int argc, char** argv) {
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  const std::string hex = nccl_id_hex(id);
  const char* truth = std::getenv("GWSIM_TRUTH");
  std::vector<pid_t> pids;
  for (int r = 0; r < s.ranks; ++r) {
    std::vector<std::string> argv_r{self_exe()};
    for (int i = 1; i < argc; ++i) argv_r.emplace_back(argv[i]);
    argv_r.insert(argv_r.end(), {"--rank", std::to_string(r), "--nccl-id", hex});
    std::vector<std::string> env{"GW_START_DELAY_MS=0", "GWSIM_NCCL_ASYNC=1"};
    if (truth != nullptr)
      env.push_back("GWSIM_TRUTH=" + std::string(truth) + ".rank" + std::to_string(r));
    pids.push_back(spawn(argv_r, environment_with(env)));
  }
  std::vector<uint64_t> pid_list, codes;
  int status = 0;
  for (const pid_t pid : pids) {
    const int code = wait_exit(pid);
    pid_list.push_back(static_cast<uint64_t>(pid));
    codes.push_back(static_cast<uint64_t>(code));
    if (code != 0) status = 1;
  }
  print_line(Json()
                 .str("workload", "sim_train")
                 .str("scenario", s.scenario)
                 .str("role", "launcher")
                 .num("pid", getpid())
                 .num("ranks", s.ranks)
                 .nums("rank_pids", pid_list)
                 .nums("exit_codes", codes)
                 .num("straggle_rank", s.straggle_rank)
                 .num("straggler_pid", pids[static_cast<size_t>(s.straggle_rank)]));
  return status;
}

namespace {

// The rank's dispatch thread ("trainer"; the main thread keeps the process's comm).
int rank_body(const BudgetSettings& s) {
  Settings join;  // what join_ranks reads
  join.ranks = s.ranks;
  join.rank = s.rank;
  join.nccl_id = s.nccl_id;
  const bool straggler = s.rank == s.straggle_rank;
  const uint64_t host_ns = straggler ? s.straggler_ns : s.host_ns;
  name_this_thread("trainer");
  const uint64_t runq0 = thread_runq_ns();
  const uint64_t start = gwsim::now_ns();  // its first GPU call is in join_ranks
  ncclComm_t comm = join_ranks(join);
  uint64_t sync_ns = 0, load_ns = 0;
  void* grads = nullptr;
  StepGpu gpu(s.gpu_ns, 1 << 20);
  check(cudaMalloc(&grads, s.grad_bytes), "cudaMalloc grads");
  for (uint64_t i = 0; i < s.steps; ++i) {
    const uint64_t l0 = gwsim::now_ns();
    load_shard(host_ns);
    load_ns += gwsim::now_ns() - l0;
    gpu.upload();
    gpu.forward();
    gpu.backward();
    check_nccl(ncclAllReduce(grads, grads, s.grad_bytes / sizeof(float), ncclFloat32, ncclSum, comm,
                             gpu.stream()),
               "ncclAllReduce");
    sync_ns += gpu.sync();
  }
  check_nccl(ncclCommDestroy(comm), "ncclCommDestroy");
  check(cudaFree(grads), "cudaFree grads");
  const uint64_t end = gpu.close();
  const uint64_t span = end - start;
  const uint64_t gate = gwsim_gpu_gate_ns();
  print_line(Json()
                 .str("workload", "sim_train")
                 .str("scenario", s.scenario)
                 .str("role", "rank")
                 .num("pid", getpid())
                 .num("rank", s.rank)
                 .boolean("straggler", straggler)
                 .nums("trainer_tids", {static_cast<uint64_t>(gettid())})
                 .num("steps", s.steps)
                 .num("span_ns", span)
                 .num("load_shard_ns", load_ns)
                 .num("sync_blocked_ns", sync_ns)
                 .num("runq_ns", thread_runq_ns() - runq0)
                 .num("gate_ns", gate)
                 .real("gate_share", span ? static_cast<double>(gate) / span : 0));
  return 0;
}

}  // namespace

int run_budget_rank(const BudgetSettings& s) {
  int status = 1;
  std::thread t([&] { status = rank_body(s); });
  t.join();
  return status;
}

}  // namespace gw
