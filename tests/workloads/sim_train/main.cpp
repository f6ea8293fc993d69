// SPDX-License-Identifier: Apache-2.0
// sim_train: the bundled sample workload and the scenario suite, linked against the simulated
// runtime. A training loop (trainer.hpp) on one or more dispatch threads, with exactly one root
// cause planted per scenario (settings.hpp). Ends with one JSON summary line on stdout:
//   {"workload":"sim_train","scenario":..,"pid":..,"rank":..,"trainer_tids":[..],"steps":..,
//    "launches":..,"elapsed_ns":..,"steps_per_s":..,"launches_per_s_first_half":..,
//    "launches_per_s_second_half":..,"gpu_busy_ns":..,"kernels":..,"hog_pid":..,
//    "ckpt_writer_tid":..,"ckpt_holds":..,"loader_pid":..,"save_ns":..,"hidden_sync_ns":..,
//    "runq_ns":..,"helper_tid":..,
//    "helper_wakeups":..,"other_job_pid":..,"cache_bytes":..,"cache_segments":..,
//    "cache_peak_bytes":..,"cache_peak_segments":..,"cache_reserves":..,"cache_sweeps":..}
// Run with --help for the options.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/json.hpp"
#include "common/startup.hpp"
#include "gwsim/gwsim.h"
#include "sim_train/budget_scenarios.hpp"
#include "sim_train/co_runners.hpp"
#include "sim_train/kernels.hpp"
#include "sim_train/ranks.hpp"
#include "sim_train/trainer.hpp"

namespace {

double per_second(uint64_t count, uint64_t ns) { return ns ? count * 1e9 / ns : 0; }

void print_summary(const gw::Settings& s, const std::vector<std::unique_ptr<gw::Trainer>>& ts,
                   pid_t hog_pid, const gw::CkptWriter* ckpt, pid_t loader_pid,
                   const gw::Neighbour* neighbour) {
  std::vector<uint64_t> tids;
  uint64_t steps = 0, launches = 0, start = ~0ull, end = 0, save_ns = 0, hidden_sync_ns = 0,
           runq_ns = 0;
  gw::TrainerStats cache;  // the caching allocators' figures, summed over the threads

  for (const auto& t : ts) {
    const gw::TrainerStats& st = t->stats();
    tids.push_back(static_cast<uint64_t>(st.tid));
    steps += st.steps;
    launches += st.launches;
    save_ns += st.save_ns;
    hidden_sync_ns += st.hidden_sync_ns;
    runq_ns += st.runq_ns;
    cache.cache_bytes += st.cache_bytes;
    cache.cache_segments += st.cache_segments;
    cache.cache_peak_bytes += st.cache_peak_bytes;
    cache.cache_peak_segments += st.cache_peak_segments;
    cache.cache_reserves += st.cache_reserves;
    cache.cache_sweeps += st.cache_sweeps;
    start = std::min(start, st.start_ns);
    end = std::max(end, st.end_ns);
  }
  // The halves of the first dispatch thread's run: launch-drop's planted change of rate.
  const gw::TrainerStats& t0 = ts.front()->stats();
  const uint64_t half = t0.halfway_ns ? t0.halfway_ns : t0.end_ns;
  gw::print_line(
      gw::Json()
          .str("workload", "sim_train")
          .str("scenario", gw::scenario_name(s.scenario))
          .num("pid", getpid())
          .num("rank", s.rank)
          .num("threads", s.threads)
          .nums("trainer_tids", tids)
          .num("steps", steps)
          .num("launches", launches)
          .num("elapsed_ns", end - start)
          .real("steps_per_s", per_second(steps, end - start))
          .real("launches_per_s_first_half", per_second(t0.halfway_launches, half - t0.start_ns))
          .real("launches_per_s_second_half",
                per_second(t0.launches - t0.halfway_launches, t0.end_ns - half))
          .num("gpu_busy_ns", gwsim_gpu_busy_ns())
          .num("kernels", gwsim_kernels_executed())
          .num("hog_pid", hog_pid)
          .num("ckpt_writer_tid", ckpt ? ckpt->tid() : 0)
          .num("ckpt_holds", ckpt ? ckpt->holds() : 0)
          .num("loader_pid", loader_pid)
          .num("save_ns", save_ns)
          .num("hidden_sync_ns", hidden_sync_ns)
          .num("runq_ns", runq_ns)
          .num("helper_tid", neighbour ? neighbour->helper_tid() : 0)
          .num("helper_wakeups", neighbour ? neighbour->helper_wakeups() : 0)
          .num("other_job_pid", neighbour ? neighbour->other_pid() : 0)
          .num("cache_bytes", cache.cache_bytes)
          .num("cache_segments", cache.cache_segments)
          .num("cache_peak_bytes", cache.cache_peak_bytes)
          .num("cache_peak_segments", cache.cache_peak_segments)
          .num("cache_reserves", cache.cache_reserves)
          .num("cache_sweeps", cache.cache_sweeps));
}

}  // namespace

int main(int argc, char** argv) {
  // A communicator id for ranks started separately (one "host" each in the multi-host tests):
  // the simulated id names a shared-memory segment that outlives this process.
  if (argc == 2 && std::string(argv[1]) == "--print-nccl-id") {
    ncclUniqueId id;
    gw::check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::printf("%s\n", gw::nccl_id_hex(id).c_str());
    return 0;
  }
  if (gw::is_budget_scenario(argc, argv)) return gw::run_budget_scenario(argc, argv);
  const gw::Args args = gw::make_args(argc, argv);
  const gw::Settings s = gw::parse_settings(args);
  gw::wait_for_start(args, 0);
  if (s.scenario == gw::Scenario::kStraggler && s.rank < 0) {
    return gw::run_launcher(s, argc, argv);
  }

  // Enough simulated GPUs for --devices (before the first call creates device 0).
  if (s.devices > 1) setenv("GWSIM_DEVICE_COUNT", std::to_string(s.devices).c_str(), 0);
  gw::register_kernels(s.kernel_scale);
  gw::Shared shared(s);
  gw::Hog hog;
  pid_t hog_pid = 0;
  if (s.scenario == gw::Scenario::kContention) {
    hog.start(s.cpu, s.hog_threads);
    hog_pid = hog.pid();
  } else if (s.scenario == gw::Scenario::kLaunchDrop) {
    shared.on_halfway = [&] {
      hog.start(s.cpu, s.hog_threads);
      hog_pid = hog.pid();
    };
  }
  std::unique_ptr<gw::CkptWriter> ckpt;
  if (s.scenario == gw::Scenario::kLock) {
    ckpt =
        std::make_unique<gw::CkptWriter>(shared.dispatch_mutex, s.ckpt_hold_ns, s.ckpt_period_ns);
  }
  if (s.scenario == gw::Scenario::kStraggler) shared.comm = gw::join_ranks(s);
  std::unique_ptr<gw::Loader> loader;
  if (s.scenario == gw::Scenario::kInputStall) {
    loader = std::make_unique<gw::Loader>(s.input_bytes, s.loader_ns);
    shared.input_fd = loader->fd();
  }

  std::unique_ptr<gw::Neighbour> neighbour;
  if (s.scenario == gw::Scenario::kNeighbour) {
    // The runtime's helper wakes every 300 us and runs 4 us.
    shared.on_setup = [&] { neighbour = std::make_unique<gw::Neighbour>(s.cpu, 300'000, 4'000); };
  }

  std::vector<std::unique_ptr<gw::Trainer>> trainers;
  for (int i = 0; i < s.threads; ++i) trainers.push_back(std::make_unique<gw::Trainer>(shared, i));
  std::vector<std::thread> threads;
  for (auto& t : trainers) threads.emplace_back([&t] { t->run(); });
  for (auto& t : threads) t.join();

  hog.stop();
  if (shared.comm != nullptr) gw::check_nccl(ncclCommDestroy(shared.comm), "ncclCommDestroy");
  print_summary(s, trainers, hog_pid, ckpt.get(), loader ? loader->pid() : 0, neighbour.get());
  neighbour.reset();
  ckpt.reset();
  return 0;
}
