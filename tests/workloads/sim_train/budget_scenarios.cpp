// SPDX-License-Identifier: Apache-2.0
#include "sim_train/budget_scenarios.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/json.hpp"
#include "common/proc.hpp"
#include "common/startup.hpp"
#include "gwsim/clock.hpp"
#include "gwsim/gwsim.h"
#include "sim_train/budget_gpu.hpp"
#include "sim_train/budget_ranks.hpp"
#include "sim_train/co_runners.hpp"
#include "sim_train/trainer.hpp"

namespace gw {
namespace {

constexpr uint64_t kUs = 1000, kMs = 1'000'000;

constexpr const char* kNames[] = {
    "loader-pipe",      "step-sleep", "straggler-host", "contention-sync", "renamed-corunner",
    "autograd-handoff", "cpu-quota",  "fault-churn",    "quota-loader",    "event-poll"};

constexpr const char* kUsage =
    "--scenario loader-pipe|step-sleep|straggler-host|contention-sync|renamed-corunner\n"
    "  [--steps N] [--gpu-us N (GPU time per step)] [--wait-file PATH]\n"
    "  loader-pipe: [--loader-ms N (12)] [--batch-kib N (128)]   (steps 120, gpu 4000)\n"
    "  step-sleep: [--sleep-us N (2000)] [--sleep-kind nanosleep|timedwait] [--busy-neighbour 1]  "
    "(steps 150, gpu "
    "8000)\n"
    "  straggler-host: [--ranks N (2)] [--host-ms N (3)] [--straggler-ms N (30)]\n"
    "                  [--straggle-rank R (last)] [--grad-mib N (4)]   (steps 50, gpu 4000)\n"
    "  contention-sync: [--cpu N (0)] [--hog-threads N (1)] [--host-us N (1500)]\n"
    "                   [--prep-us N (1000)]   (steps 180, gpu 6000)\n"
    "  renamed-corunner: [--cpu N (0)] [--corunner-name NAME (shard-prefetch)]\n"
    "                    [--host-us N (3000)]   (steps 200, gpu 2000)\n"
    "  autograd-handoff: [--host-us N (1500)] [--prep-us N (200)]   (steps 180, gpu 6000)\n"
    "  cpu-quota: [--cgroup DIR] [--cpu N (0)] [--host-us N (4000)]   (steps 150, gpu 2000)\n"
    "  fault-churn: [--fault-mib N (64)] [--reuse 1]   (steps 60, gpu 3000)\n"
    "  quota-loader: [--loader-cgroup DIR] [--loader-ms N (6)] [--batch-kib N (16)]\n"
    "                (steps 60, gpu 1000)\n"
    "  event-poll: [--wait poll|sync] [--host-us N (1000)] [--poll-gap-us N (20)]\n"
    "              (steps 150, gpu 6000)\n"
    "  env: GW_START_DELAY_MS (0), GWSIM_* (the simulator), GWSIM_TRUTH (ground truth file)";

// Per-scenario defaults: each run takes about 1.5 s on an idle machine.
struct Defaults {
  const char* name;
  uint64_t steps;
  uint64_t gpu_us;
  uint64_t host_us;
};
constexpr Defaults kDefaults[] = {
    {"loader-pipe", 120, 4000, 0},         {"step-sleep", 150, 8000, 0},
    {"straggler-host", 50, 4000, 3000},    {"contention-sync", 180, 6000, 1500},
    {"renamed-corunner", 200, 2000, 3000}, {"autograd-handoff", 180, 6000, 1500},
    {"cpu-quota", 150, 2000, 4000},        {"fault-churn", 60, 3000, 0},
    {"quota-loader", 60, 1000, 0},         {"event-poll", 150, 6000, 1000}};

BudgetSettings parse(int argc, char** argv) {
  const Args args(
      argc, argv,
      {"scenario",      "steps",         "gpu-us",         "wait-file",  "loader-ms",   "batch-kib",
       "sleep-us",      "sleep-kind",    "ranks",          "rank",       "nccl-id",     "host-ms",
       "straggler-ms",  "straggle-rank", "grad-mib",       "cpu",        "hog-threads", "host-us",
       "prep-us",       "corunner-name", "busy-neighbour", "cgroup",     "fault-mib",   "reuse",
       "loader-cgroup", "loader-fd",     "wait",           "poll-gap-us"},
      {}, kUsage);
  BudgetSettings s;
  s.scenario = args.str("scenario", "");
  const Defaults* d = nullptr;
  for (const Defaults& x : kDefaults)
    if (s.scenario == x.name) d = &x;
  if (d == nullptr) args.fail("unknown scenario '" + s.scenario + "'");
  s.steps = args.u64("steps", d->steps);
  if (s.steps == 0) args.fail("nothing to run: --steps 0");
  s.gpu_ns = args.u64("gpu-us", d->gpu_us) * kUs;
  s.host_ns = args.u64("host-us", d->host_us) * kUs;
  if (args.has("host-ms")) s.host_ns = args.u64("host-ms", 0) * kMs;
  s.prep_ns = args.u64("prep-us", s.scenario == "autograd-handoff" ? 200 : 1000) * kUs;
  const bool quota_loader = s.scenario == "quota-loader";
  s.loader_ns = args.u64("loader-ms", quota_loader ? 6 : 12) * kMs;
  s.batch_bytes = args.u64("batch-kib", quota_loader ? 16 : 128) << 10;
  if (s.batch_bytes == 0) args.fail("--batch-kib must be at least 1");
  s.sleep_ns = args.u64("sleep-us", 2000) * kUs;
  const std::string kind = args.str("sleep-kind", "nanosleep");
  if (kind != "nanosleep" && kind != "timedwait") args.fail("--sleep-kind: nanosleep|timedwait");
  s.timed_wait = kind == "timedwait";
  s.busy_neighbour = args.u64("busy-neighbour", 0) != 0;
  s.ranks = static_cast<int>(args.u64("ranks", 2));
  if (s.ranks < 2 || s.ranks > 16) args.fail("--ranks must be 2..16");
  s.rank = static_cast<int>(args.i64("rank", -1));
  if (s.rank >= s.ranks) args.fail("--rank must be below --ranks");
  s.nccl_id = args.str("nccl-id", "");
  if (s.rank >= 0 && s.nccl_id.empty()) args.fail("--rank needs --nccl-id");
  s.straggler_ns = args.u64("straggler-ms", 30) * kMs;
  s.straggle_rank = static_cast<int>(args.i64("straggle-rank", s.ranks - 1));
  if (s.straggle_rank < 0 || s.straggle_rank >= s.ranks) args.fail("--straggle-rank: 0..ranks-1");
  s.grad_bytes = args.u64("grad-mib", 4) << 20;
  s.cpu = static_cast<int>(args.u64("cpu", 0));
  if (s.cpu >= static_cast<int>(std::thread::hardware_concurrency()))
    args.fail("--cpu is not an online CPU");
  s.hog_threads = static_cast<int>(args.u64("hog-threads", 1));
  if (s.hog_threads < 1) args.fail("--hog-threads must be at least 1");
  s.corunner_name = args.str("corunner-name", "shard-prefetch");
  if (s.corunner_name.empty() || s.corunner_name.size() > 15)
    args.fail("--corunner-name must be 1..15 characters (a comm)");
  s.cgroup = args.str("cgroup", "");
  s.fault_bytes = args.u64("fault-mib", 64) << 20;
  s.reuse = args.u64("reuse", 0) != 0;
  s.loader_cgroup = args.str("loader-cgroup", "");
  s.loader_fd = static_cast<int>(args.i64("loader-fd", -1));
  const std::string wait = args.str("wait", "poll");
  if (wait != "poll" && wait != "sync") args.fail("--wait: poll|sync");
  s.poll_wait = wait == "poll";
  s.poll_gap_ns = args.u64("poll-gap-us", 20) * kUs;
  if (s.loader_fd >= 0) return s;  // the loader worker: no start-up wait of its own
  wait_for_start(args, 0);
  return s;
}

// What every scenario's trainer thread measures about itself.
struct TrainerTruth {
  pid_t tid = 0;
  uint64_t span_start = 0, span_end = 0;
  uint64_t runq_ns = 0;          // schedstat run-queue wait over the span
  uint64_t sync_blocked_ns = 0;  // wall time in cudaStreamSynchronize / the read-back
  uint64_t launches = 0;
  uint64_t span() const { return span_end - span_start; }
  double share(uint64_t ns) const { return span() ? static_cast<double>(ns) / span() : 0; }
};

// Runs `body` on a thread named "trainer" (pinned to `cpu` when >= 0), which opens the step's
// GPU state first and closes it last, and fills in the truth around it.
TrainerTruth run_trainer(const BudgetSettings& s, int cpu,
                         const std::function<void(StepGpu&, TrainerTruth&)>& body) {
  TrainerTruth t;
  std::thread th([&] {
    name_this_thread("trainer");
    if (cpu >= 0) pin_this_thread(cpu);
    t.tid = gettid();
    const uint64_t runq0 = thread_runq_ns();
    StepGpu gpu(s.gpu_ns, s.batch_bytes);
    t.span_start = gpu.opened_ns();
    body(gpu, t);
    t.span_end = gpu.close();
    t.runq_ns = thread_runq_ns() - runq0;
    t.launches = gpu.launches();
  });
  th.join();
  return t;
}

Json summary(const BudgetSettings& s, const TrainerTruth& t) {
  return Json()
      .str("workload", "sim_train")
      .str("scenario", s.scenario)
      .num("pid", getpid())
      .nums("trainer_tids", {static_cast<uint64_t>(t.tid)})
      .num("steps", s.steps)
      .num("launches", t.launches)
      .num("span_ns", t.span())
      .num("runq_ns", t.runq_ns)
      .real("runq_share", t.share(t.runq_ns))
      .num("sync_blocked_ns", t.sync_blocked_ns)
      .num("gpu_busy_ns", gwsim_gpu_busy_ns());
}

// The data loader's CPU work for one batch: decoding and augmenting.
__attribute__((noinline)) void decode_batch(std::vector<char>& batch, uint64_t ns) {
  gwsim::burn_cpu_ns(ns);
  batch[0] = static_cast<char>(batch[0] + 1);
}

void write_all(int fd, const char* p, size_t n) {
  for (size_t off = 0; off < n;) {
    const ssize_t w = write(fd, p + off, n - off);
    if (w <= 0) {
      std::perror("sim_train: writing a batch to the pipe");
      std::exit(1);
    }
    off += static_cast<size_t>(w);
  }
}

// next(data_iter) in a DataLoader with a worker thread: the trainer reads each batch from the
// pipe the "loader" thread writes once it has produced it. The loader makes exactly --steps
// batches, so neither side needs to be told to stop.
int loader_pipe(const BudgetSettings& s) {
  int p[2];
  if (pipe(p) != 0) {
    std::perror("sim_train: pipe");
    return 1;
  }
  pid_t loader_tid = 0;
  uint64_t loader_cpu_ns = 0;
  std::thread loader([&] {
    name_this_thread("loader");
    loader_tid = gettid();
    std::vector<char> batch(s.batch_bytes, 7);
    const uint64_t cpu0 = gwsim::thread_cpu_ns();
    for (uint64_t i = 0; i < s.steps; ++i) {
      decode_batch(batch, s.loader_ns);
      write_all(p[1], batch.data(), batch.size());
    }
    loader_cpu_ns = gwsim::thread_cpu_ns() - cpu0;
  });
  uint64_t read_ns = 0, reads = 0;
  std::vector<char> batch(s.batch_bytes);
  const TrainerTruth t = run_trainer(s, -1, [&](StepGpu& gpu, TrainerTruth& tt) {
    for (uint64_t i = 0; i < s.steps; ++i) {
      const uint64_t r0 = gwsim::now_ns();
      read_batch(p[0], batch.data(), batch.size());
      read_ns += gwsim::now_ns() - r0;
      ++reads;
      gpu.upload();
      gpu.forward();
      gpu.backward();
      tt.sync_blocked_ns += gpu.sync();
    }
  });
  loader.join();
  close(p[0]);
  close(p[1]);
  print_line(summary(s, t)
                 .num("loader_tid", loader_tid)
                 .num("loader_cpu_ns", loader_cpu_ns)
                 .num("reads", reads)
                 .num("read_blocked_ns", read_ns)
                 .real("read_share", t.share(read_ns)));
  return 0;
}

// A loop that waits for its next request with a timeout between steps (a serving loop polling
// an empty queue, a trainer throttled by a timer): the GPU idles for the whole pause.
int step_sleep(const BudgetSettings& s) {
  std::mutex m;
  std::condition_variable requests;  // never signalled: every wait times out
  uint64_t sleep_ns = 0;
  // A busy process of another job on the trainer's CPU: when a wait times out, the timer
  // interrupt finds it running there (it must not be named as the one who woke the trainer).
  Hog hog;
  if (s.busy_neighbour) hog.start(s.cpu, 1);
  const TrainerTruth t =
      run_trainer(s, s.busy_neighbour ? s.cpu : -1, [&](StepGpu& gpu, TrainerTruth& tt) {
        for (uint64_t i = 0; i < s.steps; ++i) {
          gpu.upload();
          gpu.forward();
          gpu.backward();
          tt.sync_blocked_ns += gpu.sync();
          const uint64_t z0 = gwsim::now_ns();
          if (s.timed_wait) {
            std::unique_lock lk(m);
            requests.wait_for(lk, std::chrono::nanoseconds(s.sleep_ns));
          } else {
            gwsim::sleep_ns(s.sleep_ns);
          }
          sleep_ns += gwsim::now_ns() - z0;
        }
      });
  print_line(summary(s, t)
                 .num("hog_pid", s.busy_neighbour ? hog.pid() : 0)
                 .str("sleep_kind", s.timed_wait ? "timedwait" : "nanosleep")
                 .num("sleep_ns", sleep_ns)
                 .real("sleep_share", t.share(sleep_ns)));
  return 0;
}

// Host work after the read-back: logging the loss, deciding on early stopping.
__attribute__((noinline)) void log_metrics(uint64_t ns) { gwsim::burn_cpu_ns(ns); }
// Host work overlapping the GPU: collating the next batch.
__attribute__((noinline)) void collate_batch(uint64_t ns) { gwsim::burn_cpu_ns(ns); }

// The batch's upload, the forward pass and loss.item() (a 4-byte read-back: a sync): returns
// when the read-back returned, from when the GPU has nothing of the step queued.
uint64_t forward_and_read_loss(StepGpu& gpu, TrainerTruth& tt, uint64_t& readbacks) {
  gpu.upload();
  gpu.forward();
  tt.sync_blocked_ns += gpu.read_loss();
  ++readbacks;
  return gwsim::now_ns();
}

// Two causes at once: a co-runner on the trainer's CPU, and loss.item() in every step, after
// which the GPU waits for the host to log it and queue the backward pass.
int contention_sync(const BudgetSettings& s) {
  Hog hog;
  hog.start(s.cpu, s.hog_threads);
  uint64_t refill_ns = 0, readbacks = 0;
  const TrainerTruth t = run_trainer(s, s.cpu, [&](StepGpu& gpu, TrainerTruth& tt) {
    for (uint64_t i = 0; i < s.steps; ++i) {
      const uint64_t drained = forward_and_read_loss(gpu, tt, readbacks);
      log_metrics(s.host_ns);                  // the GPU has nothing queued from `drained` ...
      refill_ns += gwsim::now_ns() - drained;  // ... until the backward pass is queued
      gpu.backward();
      collate_batch(s.prep_ns);
      tt.sync_blocked_ns += gpu.sync();
    }
  });
  const pid_t hog_pid = hog.pid();
  hog.stop();
  print_line(summary(s, t)
                 .num("cpu", s.cpu)
                 .num("hog_pid", hog_pid)
                 .num("readbacks", readbacks)
                 .num("refill_ns", refill_ns)
                 .real("refill_share", t.share(refill_ns)));
  return 0;
}

// A child fork()ed before any GPU call (no simulator state), that starts as "sim_train", renames
// itself like a worker setting its title, and spins on `cpu` until killed.
pid_t fork_corunner(int cpu, const std::string& name) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("sim_train: fork");
    std::exit(1);
  }
  if (pid > 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(0);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
  volatile uint64_t sink = 0;
  const uint64_t renamed_at = gwsim::now_ns() + 10 * kMs;
  while (gwsim::now_ns() < renamed_at) sink = sink + 1;
  prctl(PR_SET_NAME, name.c_str());
  for (;;) sink = sink + 1;
}

int renamed_corunner(const BudgetSettings& s) {
  const pid_t child = fork_corunner(s.cpu, s.corunner_name);
  const TrainerTruth t = run_trainer(s, s.cpu, [&](StepGpu& gpu, TrainerTruth& tt) {
    for (uint64_t i = 0; i < s.steps; ++i) {
      gpu.upload();
      gpu.forward();
      collate_batch(s.host_ns);
      gpu.backward();
      tt.sync_blocked_ns += gpu.sync();
    }
  });
  stop_process(child);
  print_line(summary(s, t)
                 .num("cpu", s.cpu)
                 .num("corunner_pid", child)
                 .str("corunner_comm", s.corunner_name));
  return 0;
}

// The autograd engine's own host work before it queues the backward pass (walking the graph).
__attribute__((noinline)) void walk_graph(uint64_t ns) { gwsim::burn_cpu_ns(ns); }

// PyTorch's training step with its two dispatch threads: the main thread queues the forward
// pass, reads the loss back (loss.item(): a sync) and logs it, then loss.backward() hands the
// backward pass to the autograd engine's thread ("pt_autograd_0"), which queues it on the same
// stream while the main thread waits on a condition variable; between backward passes that
// thread waits for the next one. Neither wait is a lock that holds the job up: the GPU idles
// only from the read-back until the engine queues the backward pass.
int autograd_handoff(const BudgetSettings& s) {
  std::mutex m;
  std::condition_variable cv;
  bool work = false, done = false, quit = false;
  StepGpu* gpu = nullptr;
  pid_t engine_tid = 0;
  uint64_t first_launch_ns = 0;  // when the engine began queueing the last backward pass
  std::thread engine([&] {
    name_this_thread("pt_autograd_0");
    std::unique_lock lk(m);
    engine_tid = gettid();
    for (;;) {
      cv.wait(lk, [&] { return work || quit; });
      if (quit) return;
      work = false;
      lk.unlock();
      walk_graph(s.prep_ns);
      first_launch_ns = gwsim::now_ns();
      gpu->backward();
      lk.lock();
      done = true;
      cv.notify_all();
    }
  });
  uint64_t idle_ns = 0, handoff_wait_ns = 0, readbacks = 0;
  const TrainerTruth t = run_trainer(s, -1, [&](StepGpu& g, TrainerTruth& tt) {
    for (uint64_t i = 0; i < s.steps; ++i) {
      const uint64_t drained = forward_and_read_loss(g, tt, readbacks);
      log_metrics(s.host_ns);  // the GPU has nothing queued from `drained` ...
      const uint64_t w0 = gwsim::now_ns();
      std::unique_lock lk(m);
      gpu = &g;
      work = true;
      done = false;
      cv.notify_all();
      cv.wait(lk, [&] { return done; });
      lk.unlock();
      handoff_wait_ns += gwsim::now_ns() - w0;
      idle_ns += first_launch_ns - drained;  // ... until the engine queues the backward pass
      // No sync at the step's end: the next step's loss.item() waits for the backward pass too.
    }
  });
  {
    std::lock_guard lk(m);
    quit = true;
    cv.notify_all();
  }
  engine.join();
  print_line(summary(s, t)
                 .num("engine_tid", engine_tid)
                 .num("readbacks", readbacks)
                 .num("gpu_idle_ns", idle_ns)
                 .real("gpu_idle_share", t.share(idle_ns))
                 .num("handoff_wait_ns", handoff_wait_ns)
                 .real("handoff_wait_share", t.share(handoff_wait_ns)));
  return 0;
}

// The group's throttled time so far, ns, from its cpu.stat: v1 "throttled_time" (ns), v2
// "throttled_usec".
uint64_t cgroup_throttled_ns(const std::string& dir) {
  FILE* f = std::fopen((dir + "/cpu.stat").c_str(), "r");
  if (!f) return 0;
  char key[64];
  unsigned long long v = 0, ns = 0;
  while (std::fscanf(f, "%63s %llu", key, &v) == 2) {
    if (std::strcmp(key, "throttled_time") == 0) ns = v;
    if (std::strcmp(key, "throttled_usec") == 0) ns = v * 1000;
  }
  std::fclose(f);
  return ns;
}

// A container's CPU limit on a host-bound step: the trainer collates the next batch on the CPU
// while the GPU runs the step, then syncs. The process is started in the cgroup --cgroup names
// (as a container is), which only says where to read the truth; it runs on one CPU (--cpu), so
// the group's throttled time is the trainer's: nothing else of it runs meanwhile.
int cpu_quota(const BudgetSettings& s) {
  pin_this_thread(s.cpu);  // before any thread: they inherit it
  uint64_t throttled = 0;
  const TrainerTruth t = run_trainer(s, s.cpu, [&](StepGpu& gpu, TrainerTruth& tt) {
    const uint64_t t0 = s.cgroup.empty() ? 0 : cgroup_throttled_ns(s.cgroup);
    for (uint64_t i = 0; i < s.steps; ++i) {
      gpu.upload();
      gpu.forward();
      collate_batch(s.host_ns);
      gpu.backward();
      tt.sync_blocked_ns += gpu.sync();
    }
    if (!s.cgroup.empty()) throttled = cgroup_throttled_ns(s.cgroup) - t0;
  });
  print_line(summary(s, t)
                 .str("cgroup", s.cgroup)
                 .num("throttled_ns", throttled)
                 .real("throttled_share", t.share(throttled)));
  return 0;
}

// Builds one batch in `buf`: writes every page (the first write to a fresh page is a fault).
__attribute__((noinline)) void fill_batch(char* buf, uint64_t bytes, uint64_t step) {
  for (uint64_t off = 0; off < bytes; off += 4096) buf[off] = static_cast<char>(step + off);
}

// A collate step that builds every batch in new memory: malloc of a large size is an mmap, its
// free a munmap, so each step's first writes fault every page in again (the kernel zeroing
// them): 16,384 faults per 64 MiB step (above 32 MiB glibc never keeps a freed block). With --reuse
// the buffer is allocated once.
int fault_churn(const BudgetSettings& s) {
  uint64_t touch = 0;
  uint64_t faults = 0;
  // Reused, the buffer is faulted in once, before the trainer's first GPU call.
  char* kept = s.reuse ? static_cast<char*>(std::malloc(s.fault_bytes)) : nullptr;
  if (kept) fill_batch(kept, s.fault_bytes, 0);
  const TrainerTruth t = run_trainer(s, -1, [&](StepGpu& gpu, TrainerTruth& tt) {
    rusage r0{};
    getrusage(RUSAGE_THREAD, &r0);
    for (uint64_t i = 0; i < s.steps; ++i) {
      // On the CPU, not wall time: a preemption while touching is not the kernel's work. The
      // stores themselves run in user mode, about 1% of it (the test says how that was measured).
      const uint64_t z0 = gwsim::thread_cpu_ns();
      char* buf = kept ? kept : static_cast<char*>(std::malloc(s.fault_bytes));
      if (!buf) std::abort();
      fill_batch(buf, s.fault_bytes, i);
      touch += gwsim::thread_cpu_ns() - z0;
      gpu.upload();
      gpu.forward();
      gpu.backward();
      tt.sync_blocked_ns += gpu.sync();
      if (!kept) std::free(buf);
    }
    rusage r1{};
    getrusage(RUSAGE_THREAD, &r1);
    faults = static_cast<uint64_t>(r1.ru_minflt - r0.ru_minflt);
  });
  std::free(kept);
  print_line(summary(s, t)
                 .num("reuse", s.reuse ? 1 : 0)
                 .num("touch_ns", touch)
                 .real("touch_share", t.share(touch))
                 .num("minor_faults", faults));
  return 0;
}

// The loader worker of quota-loader (started with --loader-fd): decodes --steps batches on the
// CPU and writes each to the pipe. No GPU call: it is a process the trace sees only as a child.
int loader_worker(const BudgetSettings& s) {
  prctl(PR_SET_NAME, "loader");
  std::vector<char> batch(s.batch_bytes, 7);
  for (uint64_t i = 0; i < s.steps; ++i) {
    decode_batch(batch, s.loader_ns);
    write_all(s.loader_fd, batch.data(), batch.size());
  }
  return 0;
}

// A data-loader worker that is itself throttled. The trainer reads each batch from a pipe a
// "loader" worker process fills (a DataLoader worker with the spawn start method: fork, then exec,
// so traced as the job's child); decoding a batch costs --loader-ms of CPU, the trainer's step
// little, so the trainer waits on the pipe most of the time. With --loader-cgroup the worker joins
// that cgroup between its fork and its exec (as a container runtime or systemd places a process),
// and there, alone, it is throttled whenever the group's quota for the period is spent.
// The truth: the trainer's own wait in read(), the worker's CPU time (its rusage) and the group's
// throttled time over the run (its cpu.stat: only the worker runs in it). The read's wall time
// includes the trainer's own run-queue wait once the worker's write woke it (schedstat, taken
// around each read): a loaded machine's cost, not the producer's, so read_waiting_share leaves
// it out.
int quota_loader(const BudgetSettings& s) {
  int p[2];
  if (pipe(p) != 0) {
    std::perror("sim_train: pipe");
    return 1;
  }
  // Everything the child needs, made before fork(): between fork and exec only async-signal-
  // safe calls (open, write, close, execve).
  std::vector<std::string> args = {self_exe(),
                                   "--scenario",
                                   "quota-loader",
                                   "--steps",
                                   std::to_string(s.steps),
                                   "--loader-ms",
                                   std::to_string(s.loader_ns / kMs),
                                   "--batch-kib",
                                   std::to_string(s.batch_bytes >> 10),
                                   "--loader-fd",
                                   std::to_string(p[1])};
  std::vector<std::string> env;
  for (const std::string& e : environment_with({}))
    if (e.rfind("GWSIM_TRUTH=", 0) != 0) env.push_back(e);  // the trainer writes the truth
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string procs = s.loader_cgroup.empty() ? "" : s.loader_cgroup + "/cgroup.procs";
  uint64_t throttled0 = 0, read_ns = 0, read_runq_ns = 0;
  pid_t worker = -1;
  std::vector<char> batch(s.batch_bytes);
  const TrainerTruth t = run_trainer(s, -1, [&](StepGpu& gpu, TrainerTruth& tt) {
    // Started inside the trainer's span, so that all of its work is inside the truth's span.
    throttled0 = s.loader_cgroup.empty() ? 0 : cgroup_throttled_ns(s.loader_cgroup);
    worker = fork();
    if (worker < 0) {
      std::perror("sim_train: fork");
      std::exit(1);
    }
    if (worker == 0) {
      close(p[0]);
      if (!procs.empty()) {  // "0": the writing process itself, on cgroup v1 and v2
        const int fd = open(procs.c_str(), O_WRONLY);
        if (fd < 0 || write(fd, "0", 1) != 1) _exit(3);
        close(fd);
      }
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    close(p[1]);
    for (uint64_t i = 0; i < s.steps; ++i) {
      const uint64_t q0 = thread_runq_ns(), r0 = gwsim::now_ns();
      read_batch(p[0], batch.data(), batch.size());
      read_ns += gwsim::now_ns() - r0;
      read_runq_ns += thread_runq_ns() - q0;
      gpu.upload();
      gpu.forward();
      gpu.backward();
      tt.sync_blocked_ns += gpu.sync();
    }
  });
  int status = 0;
  rusage ru{};
  if (wait4(worker, &status, 0, &ru) != worker || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "sim_train: the loader worker failed (status %d)\n", status);
    return 1;
  }
  close(p[0]);
  const uint64_t worker_cpu =
      static_cast<uint64_t>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1'000'000'000ull +
      static_cast<uint64_t>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
  const uint64_t throttled =
      s.loader_cgroup.empty() ? 0 : cgroup_throttled_ns(s.loader_cgroup) - throttled0;
  print_line(summary(s, t)
                 .num("loader_pid", static_cast<uint64_t>(worker))
                 .str("loader_cgroup", s.loader_cgroup)
                 .num("read_blocked_ns", read_ns)
                 .real("read_share", t.share(read_ns))
                 .num("read_runq_ns", read_runq_ns)
                 .real("read_waiting_share", t.share(read_ns - std::min(read_ns, read_runq_ns)))
                 .num("loader_cpu_ns", worker_cpu)
                 .num("loader_throttled_ns", throttled));
  return 0;
}

// Host work after each step's wait: logging, the scheduler's bookkeeping.
__attribute__((noinline)) void step_bookkeeping(uint64_t ns) { gwsim::burn_cpu_ns(ns); }

// Spins until the event is done, as an inference engine's scheduler loop or a watchdog polls:
// cudaEventQuery, and after each cudaErrorNotReady `gap_ns` of CPU work (checking its queues)
// before asking again.
__attribute__((noinline)) uint64_t spin_on_event(cudaEvent_t ev, uint64_t gap_ns) {
  uint64_t not_ready = 0;
  for (cudaError_t r; (r = cudaEventQuery(ev)) != cudaSuccess; ++not_ready) {
    if (r != cudaErrorNotReady) check(r, "cudaEventQuery");
    gwsim::burn_cpu_ns(gap_ns);
  }
  return not_ready;
}

// The simulator's queries answer as the real runtime's do, or the scenario's truth means nothing.
// (Only after a wait: before it, a thread preempted for a whole step may find the work done.)
void expect_query(cudaError_t got, cudaError_t want, const char* when) {
  if (got == want) return;
  std::fprintf(stderr, "sim_train: cudaStreamQuery %s returned %d, not %d\n", when,
               static_cast<int>(got), static_cast<int>(want));
  std::exit(1);
}

// Each step records an event after its kernels and waits for it: spinning on cudaEventQuery
// (--wait poll), or blocked in cudaEventSynchronize (--wait sync); then --host-us of host work.
// Truth: the wall time in the spin less the run-queue wait inside it (schedstat): the time it
// spent polling on a CPU (poll_ns, poll_share); for the blocking wait, the same of
// cudaEventSynchronize (blocked_ns, blocked_share: asleep in it or on a CPU, not waiting for one).
int event_poll(const BudgetSettings& s) {
  uint64_t poll_ns = 0, blocked_ns = 0, not_ready = 0, wait_runq_ns = 0;
  const TrainerTruth t = run_trainer(s, -1, [&](StepGpu& gpu, TrainerTruth& tt) {
    cudaEvent_t ev = nullptr;
    check(cudaEventCreate(&ev), "cudaEventCreate");
    for (uint64_t i = 0; i < s.steps; ++i) {
      gpu.upload();
      gpu.forward();
      gpu.backward();
      check(cudaEventRecord(ev, gpu.stream()), "cudaEventRecord");
      const uint64_t runq0 = thread_runq_ns();
      const uint64_t w0 = gwsim::now_ns();
      if (s.poll_wait) {
        not_ready += spin_on_event(ev, s.poll_gap_ns);
      } else {
        check(cudaEventSynchronize(ev), "cudaEventSynchronize");
      }
      const uint64_t waited = gwsim::now_ns() - w0;
      const uint64_t runq = thread_runq_ns() - runq0;
      (s.poll_wait ? poll_ns : blocked_ns) += waited - std::min(waited, runq);
      wait_runq_ns += runq;
      tt.sync_blocked_ns += waited;
      // The event was recorded after the step's last kernel: once it is done, so is the stream.
      expect_query(cudaStreamQuery(gpu.stream()), cudaSuccess, "after the wait");
      step_bookkeeping(s.host_ns);
    }
    check(cudaEventDestroy(ev), "cudaEventDestroy");
  });
  print_line(summary(s, t)
                 .str("wait", s.poll_wait ? "poll" : "sync")
                 .num("not_ready_polls", not_ready)
                 .num("poll_ns", poll_ns)
                 .real("poll_share", t.share(poll_ns))
                 .num("wait_runq_ns", wait_runq_ns)
                 .num("blocked_ns", blocked_ns)
                 .real("blocked_share", t.share(blocked_ns)));
  return 0;
}

}  // namespace

bool is_budget_scenario(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--scenario") != 0) continue;
    for (const char* n : kNames)
      if (std::strcmp(argv[i + 1], n) == 0) return true;
  }
  return false;
}

int run_budget_scenario(int argc, char** argv) {
  const BudgetSettings s = parse(argc, argv);
  if (s.scenario == "loader-pipe") return loader_pipe(s);
  if (s.scenario == "step-sleep") return step_sleep(s);
  if (s.scenario == "straggler-host") {
    return s.rank < 0 ? run_budget_launcher(s, argc, argv) : run_budget_rank(s);
  }
  if (s.scenario == "contention-sync") return contention_sync(s);
  if (s.scenario == "autograd-handoff") return autograd_handoff(s);
  if (s.scenario == "cpu-quota") return cpu_quota(s);
  if (s.scenario == "fault-churn") return fault_churn(s);
  if (s.scenario == "quota-loader") return s.loader_fd >= 0 ? loader_worker(s) : quota_loader(s);
  if (s.scenario == "event-poll") return event_poll(s);
  return renamed_corunner(s);
}

}  // namespace gw
