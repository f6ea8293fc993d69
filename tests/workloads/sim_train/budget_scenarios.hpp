// SPDX-License-Identifier: Apache-2.0
// sim_train's time-budget scenarios: programs shaped like real ones (a data-loader thread behind
// a pipe, a loop that sleeps between steps, ranks whose collectives return at once, two causes
// at the same time), each measuring its own ground truth and printing it in its JSON summary
// line, for the tests that hold explain's per-thread time budget to it (tests/sim/README.md).
//
//   loader-pipe       thread "trainer" reads each batch from a pipe that thread "loader" fills
//                     after --loader-ms of CPU work; GPU --gpu-us per step, one sync per step.
//                     Truth: time blocked in read() (read_blocked_ns, read_share of the span).
//   step-sleep        --gpu-us of GPU work and a sync, then a --sleep-us pause (clock_nanosleep,
//                     or with --sleep-kind timedwait a condition wait that times out).
//                     Truth: time asleep (sleep_ns, sleep_share).
//   straggler-host    --ranks processes; each runs load_shard() on the CPU (--host-ms, the
//                     straggler --straggler-ms), then its kernels and an ncclAllReduce that
//                     returns at once (GWSIM_NCCL_ASYNC=1), then syncs: the wait shows there.
//                     Truth: each rank's GPU time held waiting for peers (gate_ns, gate_share).
//   contention-sync   cpu_hog pinned with "trainer" to --cpu, and a loss.item() read-back in the
//                     middle of every step followed by --host-us of host work.
//                     Truth: run-queue wait from schedstat (runq_ns, runq_share), the GPU's
//                     refill gaps after the read-back (refill_ns, refill_share).
//   renamed-corunner  a fork()ed child that renames itself (--corunner-name) competes for
//                     --cpu with "trainer". Truth: corunner_pid, runq_ns, runq_share.
//   cpu-quota         "trainer" collates each batch on the CPU (--host-us) while the GPU runs
//                     (--gpu-us), then syncs. Started inside a cgroup with a CPU quota (v1 cpu
//                     or v2, made by the test as a container runtime would), named by --cgroup
//                     DIR, the quota throttles the trainer. Truth: the group's throttled time
//                     from DIR/cpu.stat (throttled_ns, throttled_share).
//   fault-churn       each step builds its batch in freshly allocated memory (--fault-mib, one
//                     malloc and free per step: above glibc's largest mmap threshold, an mmap the
//                     kernel faults in page by page), then its kernels and a sync; --reuse 1
//                     allocates once. Truth: the CPU time touching the new memory (touch_ns,
//                     touch_share) and the minor faults.
//   event-poll        each step records an event after its kernels and spins on cudaEventQuery
//                     until it is done (--wait poll, --poll-gap-us of CPU work between two
//                     polls), or blocks in cudaEventSynchronize (--wait
//                     sync), then --host-us of host work. Truth: the time spent polling on a CPU
//                     (poll_ns, poll_share: the spin's wall time less its run-queue wait).
//
// Every share is of the trainer's span: its first GPU call to the end of its last.
#pragma once

#include <cstdint>
#include <string>

namespace gw {

struct BudgetSettings {
  std::string scenario;
  uint64_t steps = 0;
  uint64_t gpu_ns = 0;          // GPU time per step
  uint64_t host_ns = 0;         // host work per step (what it is depends on the scenario)
  uint64_t prep_ns = 0;         // contention-sync: host work overlapping the backward pass
  uint64_t batch_bytes = 0;     // one batch (pipe, upload)
  uint64_t loader_ns = 0;       // loader-pipe: the loader's CPU time per batch
  uint64_t sleep_ns = 0;        // step-sleep: the pause after each step
  bool timed_wait = false;      // step-sleep: a timed condition wait instead of clock_nanosleep
  bool busy_neighbour = false;  // step-sleep: a busy process of another job on the trainer's CPU
  int ranks = 2;                // straggler-host
  int rank = -1;                // set in the rank processes the launcher starts
  std::string nccl_id;          // hex ncclUniqueId, passed by the launcher
  uint64_t straggler_ns = 0;    // the straggler's host work per step
  int straggle_rank = -1;
  uint64_t grad_bytes = 0;
  int cpu = 0;  // contention-sync, renamed-corunner: the CPU trainer and co-runner share
  int hog_threads = 1;
  std::string corunner_name;
  std::string cgroup;        // cpu-quota: the cgroup directory it runs in ("": none)
  uint64_t fault_bytes = 0;  // fault-churn: the memory a step touches
  bool reuse = false;        // fault-churn: one allocation for every step
  // quota-loader: the cgroup the loader worker joins ("": none), and in the worker itself the
  // pipe it writes batches to (-1: this is the trainer)
  std::string loader_cgroup;
  int loader_fd = -1;
  bool poll_wait = true;     // event-poll: spin on cudaEventQuery (else cudaEventSynchronize)
  uint64_t poll_gap_ns = 0;  // event-poll: CPU work between two polls
};

// Whether argv asks for one of these scenarios.
bool is_budget_scenario(int argc, char** argv);
// Runs it; returns the process's exit status.
int run_budget_scenario(int argc, char** argv);

}  // namespace gw
