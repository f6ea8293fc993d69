// SPDX-License-Identifier: Apache-2.0
// The "kernels" sim_train launches. cudaLaunchKernel names a kernel by the address of its host
// stub, so each kernel here is a real function with a descriptive symbol name (what a tracer
// resolves the address to) and its own simulated duration.
#pragma once

#include <cstdint>
#include <span>

namespace gw {

struct Kernel {
  const char* name;
  void (*fn)();
  uint64_t ns;  // GPU time at --kernel-scale 1
};

std::span<const Kernel> forward_kernels();
std::span<const Kernel> backward_kernels();
std::span<const Kernel> optimizer_kernels();

// Tells the simulator every kernel's duration (gwsim_set_kernel_ns), scaled by `scale`.
void register_kernels(double scale);

}  // namespace gw
