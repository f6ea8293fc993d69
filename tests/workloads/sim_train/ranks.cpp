// SPDX-License-Identifier: Apache-2.0
#include "sim_train/ranks.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/json.hpp"
#include "common/proc.hpp"
#include "sim_train/trainer.hpp"

namespace gw {
namespace {

bool from_hex(const std::string& hex, ncclUniqueId* id) {
  if (hex.size() != 2 * sizeof id->internal) return false;
  for (size_t i = 0; i < sizeof id->internal; ++i) {
    char* end = nullptr;
    const std::string byte = hex.substr(2 * i, 2);
    const long v = std::strtol(byte.c_str(), &end, 16);
    if (*end != '\0') return false;
    id->internal[i] = static_cast<char>(v);
  }
  return true;
}

}  // namespace

std::string nccl_id_hex(const ncclUniqueId& id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const char c : id.internal) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

int run_launcher(const Settings& s, int argc, char** argv) {
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  const std::string hex = nccl_id_hex(id);

  // The caller's GWSIM_STRAGGLE_* win; otherwise the options' defaults (the last rank, 5 ms).
  const char* env_rank = std::getenv("GWSIM_STRAGGLE_RANK");
  const char* env_ms = std::getenv("GWSIM_STRAGGLE_MS");
  const std::string straggle_rank = env_rank ? env_rank : std::to_string(s.straggle_rank);
  const std::string straggle_ms = env_ms ? env_ms : std::to_string(s.straggle_ms);
  const char* truth = std::getenv("GWSIM_TRUTH");

  std::vector<pid_t> pids;
  for (int r = 0; r < s.ranks; ++r) {
    std::vector<std::string> argv_r{self_exe()};
    for (int i = 1; i < argc; ++i) argv_r.emplace_back(argv[i]);
    argv_r.insert(argv_r.end(), {"--rank", std::to_string(r), "--nccl-id", hex});
    std::vector<std::string> env{"GW_START_DELAY_MS=0"};
    if (env_rank != nullptr)  // the caller asked for the delay inside the simulated collective
      env.insert(env.end(), {"GWSIM_STRAGGLE_RANK=" + straggle_rank,
                             "GWSIM_STRAGGLE_MS=" + straggle_ms});
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
                 .str("scenario", scenario_name(s.scenario))
                 .str("role", "launcher")
                 .num("pid", getpid())
                 .num("ranks", s.ranks)
                 .nums("rank_pids", pid_list)
                 .nums("exit_codes", codes)
                 .num("straggle_rank", std::atoi(straggle_rank.c_str()))
                 .num("straggle_ms", std::atoi(straggle_ms.c_str())));
  return status;
}

ncclComm_t join_ranks(const Settings& s) {
  ncclUniqueId id;
  if (!from_hex(s.nccl_id, &id)) {
    std::fprintf(stderr, "sim_train: --nccl-id is not a hex ncclUniqueId\n");
    std::exit(2);
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, s.ranks, id, s.rank), "ncclCommInitRank");
  return comm;
}

}  // namespace gw
