// SPDX-License-Identifier: Apache-2.0
// A libcudart.so.13 whose cudaLaunchKernel only calls the null libcuda's cuLaunchKernel (beside
// it), as NVIDIA's libcudart launches through libcuda: with both probed, a launch is a runtime
// call with a driver call nested in it, and nothing else (bench/nested_launch.sh). Same C
// signature as NVIDIA's (dim3 by value in two registers each, the stream on the stack).
#include <stddef.h>
#include <stdint.h>

typedef struct {
  unsigned x, y, z;
} dim3;

int cuLaunchKernel(void* f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                   unsigned block_y, unsigned block_z, unsigned shared_mem, void* stream,
                   void** params, void** extra);

__attribute__((visibility("default"), noinline)) int cudaLaunchKernel(const void* func, dim3 grid,
                                                                      dim3 block, void** args,
                                                                      size_t shared_mem,
                                                                      void* stream) {
  return cuLaunchKernel((void*)func, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                        (unsigned)shared_mem, stream, args, NULL);
}
