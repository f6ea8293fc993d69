// SPDX-License-Identifier: Apache-2.0
// One dispatch thread of sim_train (named "trainer", then "trainer-1", ...) and its step. The
// well-behaved step keeps the GPU busy: everything is queued asynchronously, the CPU work of
// collating the next batch overlaps the GPU work, and the step ends with its one sync.
//
//   upload the batch: cudaMemcpyAsync H2D from pinned memory  [transfer: cudaMemcpy, pageable]
//                                                             [alloc-churn: cudaMalloc temps]
//   6 forward kernels (each with --overhead-us of host work)  [lock: under the shared mutex]
//                                                             [hidden-sync: 4-byte D2H cudaMemcpy]
//   6 backward kernels                                        [lock: under the shared mutex]
//                                                             [hidden-sync: cudaStreamSynchronize]
//                                                             [alloc-churn: cudaFree temps]
//                                                             [straggler: ncclAllReduce grads]
//   optimizer: host work (--optimizer-us), 4 kernels          [lock: under the shared mutex]
//   every --loss-every steps: async D2H of the loss into pinned memory
//   collate the next batch on the CPU (--prep-us), overlapping the GPU
//   cudaStreamSynchronize
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "gwsim/cudart.h"
#include "gwsim/nccl.h"
#include "sim_train/caching_allocator.hpp"
#include "sim_train/kernels.hpp"
#include "sim_train/settings.hpp"

namespace gw {

// What the dispatch threads of one process share.
struct Shared {
  explicit Shared(const Settings& s) : settings(s) {}
  const Settings& settings;
  std::mutex dispatch_mutex;         // lock: taken before every launch batch
  ncclComm_t comm = nullptr;         // straggler
  std::function<void()> on_halfway;  // launch-drop: starts the co-runner (trainer 0 calls it)
  std::function<void()> on_setup;    // neighbour: starts the co-runners (trainer 0 calls it)
  int input_fd = -1;                 // input-stall: the loader's pipe
  uint64_t start_ns = 0;
};

struct TrainerStats {
  pid_t tid = 0;
  uint64_t steps = 0;
  uint64_t launches = 0;
  uint64_t start_ns = 0, halfway_ns = 0, end_ns = 0;
  uint64_t halfway_launches = 0;
  uint64_t save_ns = 0;  // inline-save: time spent writing checkpoints (the ground truth)
  // hidden-sync: time spent inside the planted download and stream sync (the ground truth)
  uint64_t hidden_sync_ns = 0;
  // Its run-queue wait over the steps (schedstat): what a loaded machine really cost it.
  uint64_t runq_ns = 0;
  // --caching-allocator: its reserve at the end, its peak, and how it changed (the ground truth)
  uint64_t cache_bytes = 0, cache_segments = 0, cache_peak_bytes = 0, cache_peak_segments = 0;
  uint64_t cache_reserves = 0, cache_sweeps = 0;
};

class Trainer {
 public:
  Trainer(Shared& shared, int index);
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // The thread body: set up, run every step, tear down.
  void run();
  const TrainerStats& stats() const { return stats_; }

 private:
  void setup();
  void teardown();
  void step(uint64_t i);
  void upload_batch();
  void carve_activations(uint64_t i);
  void save_checkpoint();
  void launch_batch(std::span<const Kernel> kernels);
  bool halfway(uint64_t i) const;

  Shared& shared_;
  const Settings& s_;
  const int index_;
  uint64_t prep_ns_;  // its device's batch collation time (--device-prep-us), else --prep-us
  TrainerStats stats_;
  cudaStream_t stream_ = nullptr;
  std::vector<char> input_;  // input-stall: the batch read from the loader
  int save_fd_ = -1;         // inline-save: the checkpoint file (unlinked at once)
  void* d_batch_ = nullptr;
  void* d_loss_ = nullptr;
  void* d_grads_ = nullptr;
  void* h_batch_ = nullptr;       // pinned
  void* h_loss_ = nullptr;        // pinned
  std::vector<char> h_pageable_;  // transfer: ordinary malloc'd memory
  std::vector<void*> temps_;      // alloc-churn
  std::vector<void*> leaked_;     // --leak-kib: never freed
  void* d_unused_ = nullptr;      // --unused-mib: never touched
  void* h_pinned_ = nullptr;      // --pinned-transfer-mib: pinned, copied synchronously
  CachingAllocator cache_;        // --caching-allocator
};

// Exits the process with a message when a runtime call fails: sim_train's calls are all
// expected to succeed, and a silent failure would plant a different root cause.
void check(cudaError_t err, const char* what);
void check_nccl(ncclResult_t err, const char* what);

}  // namespace gw
