// SPDX-License-Identifier: Apache-2.0
// The gwsim_* control entry points (gwsim/gwsim.h).
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

}  // extern "C"
