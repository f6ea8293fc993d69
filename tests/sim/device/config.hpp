// SPDX-License-Identifier: Apache-2.0
// The simulated GPU's costs and switches, read once from GWSIM_* environment variables when the
// device model starts (first API call of the process). Bandwidths are in GB/s (1e9 bytes/s), so
// a transfer of B bytes takes B / gbps nanoseconds.
#pragma once

#include <cstdint>
#include <string>

namespace gwsim {

struct Config {
  uint64_t kernel_ns = 50'000;   // GWSIM_KERNEL_NS: default kernel duration
  uint64_t launch_ns = 3'000;    // GWSIM_LAUNCH_NS: host CPU per launch call
  uint64_t malloc_ns = 200'000;  // GWSIM_MALLOC_NS: host CPU per allocation (device or host)
  uint64_t free_ns = 100'000;    // GWSIM_FREE_NS: host CPU per free, after the implicit sync
  double pinned_gbps = 20;       // GWSIM_PINNED_GBPS: H2D/D2H with pinned host memory
  double pageable_gbps = 5;      // GWSIM_PAGEABLE_GBPS: H2D/D2H with pageable host memory
  double d2d_gbps = 500;         // GWSIM_D2D_GBPS: D2D copies and memsets
  double staging_gbps = 10;      // GWSIM_STAGING_GBPS: host CPU staging of pageable copies
  double nccl_gbps = 50;         // GWSIM_NCCL_GBPS: collective transfer bandwidth
  uint64_t queue_depth = 1024;   // GWSIM_QUEUE_DEPTH: pending ops before launches block
  int device_count = 1;          // GWSIM_DEVICE_COUNT
  int straggle_rank = -1;        // GWSIM_STRAGGLE_RANK: NCCL rank that arrives late
  uint64_t straggle_ns = 0;      // GWSIM_STRAGGLE_MS (converted): its delay per collective
  uint64_t nccl_timeout_ns = 60'000'000'000;  // GWSIM_NCCL_TIMEOUT_MS: barrier give-up time
  // GWSIM_NCCL_ASYNC=1: a collective returns at once, and the ranks meet on the GPU (like real
  // NCCL, whose kernel waits for its peers): the host sees the wait in its next sync.
  bool nccl_async = false;
  std::string truth_path;  // GWSIM_TRUTH: ground-truth JSON written at exit ("%p" = pid)
};

// Reads the environment; malformed values are reported on stderr and left at their default.
Config config_from_env();

// Nanoseconds to move `bytes` at `gbps` GB/s.
uint64_t transfer_ns(uint64_t bytes, double gbps);

}  // namespace gwsim
