// SPDX-License-Identifier: Apache-2.0
// dim3 as CUDA and HIP lay it out: three unsigned ints, 12 bytes, passed by value in two
// integer registers (x|y<<32, then z) under the x86-64 SysV ABI. A plain aggregate on purpose:
// no constructors, so it stays trivially copyable and is passed exactly like NVIDIA's.
#pragma once

#ifndef GWSIM_DIM3_DEFINED
#define GWSIM_DIM3_DEFINED
typedef struct dim3 {
  unsigned int x, y, z;
} dim3;
#endif
