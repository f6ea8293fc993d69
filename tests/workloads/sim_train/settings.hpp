// SPDX-License-Identifier: Apache-2.0
// sim_train's scenarios and options. Each scenario plants exactly one root cause on top of the
// same well-behaved training step (see trainer.hpp for the step).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/args.hpp"

namespace gw {

enum class Scenario {
  kClean,       // nothing planted
  kContention,  // a cpu_hog co-runner shares the dispatch thread's CPU for the whole run
  kLock,        // a "ckpt-writer" thread holds a mutex the dispatch thread needs
  kHiddenSync,  // a 4-byte D2H cudaMemcpy ("loss.item()") and a stream sync inside every step
  kTransfer,    // large H2D copies from pageable memory dominate each step
  kAllocChurn,  // cudaMalloc/cudaFree of temporaries inside every step
  kLaunchDrop,  // cpu_hog starts half way through: the launch rate falls by more than half
  kStraggler,   // N rank processes all-reduce every step; one rank arrives late
  kInputStall,  // the dispatch thread reads each batch from a pipe a slow loader process fills
  kInlineSave,  // the dispatch thread writes a checkpoint file itself every few steps (on-CPU)
  kNeighbour,   // pinned to one CPU with the runtime's helper thread and another job's busy process
};

const char* scenario_name(Scenario s);

struct Settings {
  Scenario scenario = Scenario::kClean;
  uint64_t steps = 200;
  double seconds = 0;  // > 0: run this long instead of --steps
  int threads = 1;     // dispatch threads, each with its own stream
  // GPUs: dispatch thread i selects device i % devices (cudaSetDevice) when there are several,
  // each with its own batch collation time and kernel scale (--device-prep-us,
  // --device-kernel-scale: one value per device), so one process can hold a GPU-bound and a
  // host-bound GPU at once.
  int devices = 1;
  std::vector<uint64_t> device_prep_ns;
  std::vector<double> device_kernel_scale;
  int cpu = 0;         // the CPU the dispatch thread and cpu_hog share
  int hog_threads = 1;

  // The step's shape.
  uint64_t prep_ns = 500'000;             // batch collation on the dispatch thread
  uint64_t op_overhead_ns = 10'000;       // framework overhead per kernel launch
  uint64_t optimizer_ns = 150'000;        // optimizer bookkeeping on the host
  double kernel_scale = 1.0;              // multiplies every kernel duration
  uint64_t batch_bytes = 4ull << 20;      // pinned H2D batch upload
  uint64_t loss_every = 10;               // async D2H of the loss every N steps
  uint64_t transfer_bytes = 32ull << 20;  // transfer: pageable H2D per step
  uint64_t pinned_transfer_bytes = 0;     // transfer: also a synchronous pinned H2D per step
  uint64_t alloc_buffers = 4;             // alloc-churn: temporaries per step
  uint64_t alloc_bytes = 8ull << 20;
  uint64_t ckpt_hold_ns = 20'000'000;    // lock: how long ckpt-writer holds the mutex
  uint64_t ckpt_period_ns = 50'000'000;  // lock: how often it takes it
  uint64_t input_bytes = 256 << 10;      // input-stall: one batch through the pipe
  uint64_t loader_ns = 4'000'000;        // input-stall: the loader's time to produce it
  uint64_t save_bytes = 64ull << 20;     // inline-save: one checkpoint
  uint64_t save_every = 10;              // inline-save: steps between checkpoints
  std::string save_dir = "/tmp";         // inline-save: where the checkpoint file goes
  // Memory, in any scenario (the audit's memory sites): a device buffer allocated every step and
  // never freed, and one allocated at set-up that no copy ever touches.
  uint64_t leak_bytes = 0;
  uint64_t unused_bytes = 0;
  bool readback_each_op = false;  // a 4-byte D2H read-back after every launch (sync-bound)
  // A PyTorch-like caching allocator (caching_allocator.hpp) serves each step's activations; the
  // batch doubles for the middle third of the steps, and the cache is emptied after it.
  bool caching_allocator = false;

  // straggler
  int ranks = 2;
  int rank = -1;        // set in the rank processes the launcher starts
  std::string nccl_id;  // hex ncclUniqueId, passed by the launcher
  uint64_t grad_bytes = 8ull << 20;
  uint64_t straggle_ms = 5;
  int straggle_rank = -1;  // default: the last rank
};

// Parses the command line (exits 2 on misuse); `args` also serves the start handshake.
Settings parse_settings(const Args& args);
Args make_args(int argc, char** argv);

}  // namespace gw
