// SPDX-License-Identifier: Apache-2.0
// A libcuda.so.1 whose cuLaunchKernel does nothing: the driver under bench/nulldrv's libcudart,
// whose cudaLaunchKernel launches through it as NVIDIA's does (bench/nested_launch.sh). Same C
// signature as NVIDIA's (eleven arguments: the last five on the stack).
#include <stdint.h>

volatile uint64_t gwb_null_driver_sink;

__attribute__((visibility("default"), noinline)) int cuLaunchKernel(
    void* f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x, unsigned block_y,
    unsigned block_z, unsigned shared_mem, void* stream, void** params, void** extra) {
  gwb_null_driver_sink += (uintptr_t)f ^ grid_x ^ grid_y ^ grid_z ^ block_x ^ block_y ^ block_z ^
                          shared_mem ^ (uintptr_t)stream ^ (uintptr_t)params ^ (uintptr_t)extra;
  return 0;
}
