// SPDX-License-Identifier: Apache-2.0
// Control and introspection entry points of the simulated GPU (exported by libgwsim_device.so).
// Workloads use them to give kernels distinct durations; nothing here exists in a real runtime.
#pragma once

#include "gwsim/api.h"

#ifdef __cplusplus
extern "C" {
#endif

// How long a kernel (a launch of `func`, or a graph launch of the graph exec `func`) occupies
// the simulated GPU. Unset functions use GWSIM_KERNEL_NS (default 50 us).
GWSIM_API void gwsim_set_kernel_ns(const void* func, unsigned long long ns);
// Host CPU burnt by every launch call (default GWSIM_LAUNCH_NS, 3 us).
GWSIM_API void gwsim_set_launch_ns(unsigned long long ns);
// GPU busy time so far: the sum of the durations of every operation executed.
GWSIM_API unsigned long long gwsim_gpu_busy_ns(void);
// Time so far the GPU was held by collectives waiting for their peers (GWSIM_NCCL_ASYNC=1).
GWSIM_API unsigned long long gwsim_gpu_gate_ns(void);
// Kernels executed so far.
GWSIM_API unsigned long long gwsim_kernels_executed(void);

// What a profiler sees of each executed operation (the mock libcupti, tests/sim/cupti): kind
// 0 kernel, 1 graph, 2 copy, 3 memset, 4 collective; times CLOCK_MONOTONIC ns on the device's
// timeline (the truth's own); stream a stable id of the stream's state; dir 0 H2H, 1 H2D, 2 D2H,
// 3 D2D.
struct gwsim_activity {
  unsigned kind, device;
  unsigned long long start_ns, end_ns, bytes, stream;
  const void* func;
  unsigned grid[3], block[3];
  unsigned dir, pageable;
};
typedef void (*gwsim_activity_fn)(const struct gwsim_activity* a, void* ctx);
// Called on the GPU thread after each operation ends, engine locked: it must only copy. One hook
// per process; null removes it.
GWSIM_API void gwsim_set_activity_hook(gwsim_activity_fn fn, void* ctx);
// Loads CUDA_INJECTION64_PATH and calls its InitializeInjection, once per process, as NVIDIA's
// driver does from cuInit (the simulated libcuda's cuInit and libcudart's first call do).
GWSIM_API void gwsim_load_cuda_injection(void);

#ifdef __cplusplus
}
#endif
