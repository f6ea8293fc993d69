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

#ifdef __cplusplus
}
#endif
