// SPDX-License-Identifier: Apache-2.0
// A libcudart.so.13 whose cudaLaunchKernel does nothing: the floor under which no probe can go.
// Same C signature as NVIDIA's (dim3 by value in two registers each, the stream on the stack), so
// gpuwhy's capture spec reads the same registers and stack slot it reads in the real library.
#include <stddef.h>
#include <stdint.h>

typedef struct {
  unsigned x, y, z;
} dim3;

volatile uint64_t gwb_null_sink;

__attribute__((visibility("default"), noinline)) int cudaLaunchKernel(const void* func, dim3 grid,
                                                                      dim3 block, void** args,
                                                                      size_t shared_mem,
                                                                      void* stream) {
  gwb_null_sink += (uintptr_t)func ^ grid.x ^ block.x ^ (uintptr_t)args ^ shared_mem ^
                   (uintptr_t)stream;
  return 0;
}
