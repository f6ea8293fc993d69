// SPDX-License-Identifier: Apache-2.0
// The gwsim_* control entry points (gwsim/gwsim.h).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "device/device.hpp"
#include "gwsim/gwsim.h"

using gwsim::Device;

extern "C" {

void gwsim_set_kernel_ns(const void* func, unsigned long long ns) {
  Device::get().set_kernel_ns(func, ns);
}

void gwsim_set_launch_ns(unsigned long long ns) { Device::get().set_launch_ns(ns); }

// The calling thread's current device (sim_train's summary sums its trainers' devices itself).
unsigned long long gwsim_gpu_busy_ns(void) { return Device::get().engine().totals().busy_ns; }

unsigned long long gwsim_gpu_gate_ns(void) { return Device::get().engine().totals().gate_ns; }

unsigned long long gwsim_kernels_executed(void) { return Device::get().engine().totals().kernels; }

void gwsim_set_activity_hook(gwsim_activity_fn fn, void* ctx) {
  gwsim::g_activity_ctx.store(ctx, std::memory_order_release);
  gwsim::g_activity_hook.store(fn, std::memory_order_release);
}

void gwsim_load_cuda_injection(void) {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* path = std::getenv("CUDA_INJECTION64_PATH");
    if (path == nullptr || *path == '\0') return;
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      std::fprintf(stderr, "gwsim: CUDA_INJECTION64_PATH: %s\n", dlerror());
      return;
    }
    auto init = reinterpret_cast<int (*)(void)>(dlsym(lib, "InitializeInjection"));
    if (init == nullptr) {
      std::fprintf(stderr, "gwsim: CUDA_INJECTION64_PATH %s has no InitializeInjection\n", path);
      return;
    }
    init();
  });
}

}  // extern "C"
