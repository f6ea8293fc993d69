// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the files of the simulated libcudart. None of them is exported, and no
// exported function calls another one: a uprobe on cudaMemcpy must fire once per cudaMemcpy,
// never again because cudaMemcpy_ptds happened to be implemented through it. (Its launches may
// call the simulated libcuda's, another library, as NVIDIA's do: GWSIM_CUDART_VIA_DRIVER, launch.cpp.)
#pragma once

#include <atomic>
#include <cstdint>

#include "device/device.hpp"
#include "gwsim/cudart.h"
#include "gwsim/gwsim.h"

namespace gwsim::cudart {

// Maps a model outcome to the cudaError_t NVIDIA returns, remembering failures for
// cudaGetLastError like the real runtime's per-thread error state.
cudaError_t result(Status st);
// Same for an error the front detects itself (a bad cudaMemcpyKind, a bad pitch).
cudaError_t fail(cudaError_t err);
// Reads (and with `reset`, clears) the calling thread's last error.
cudaError_t last_error(bool reset);

// Every cudart entry point starts with it: the calls' counter (GWSIM_ENTER), then, once per
// process, what NVIDIA's runtime does at its first call through cuInit: the CUDA_INJECTION64_PATH
// library is loaded and initialised (gwsim_load_cuda_injection; nothing when it is unset).
inline void lazy_driver_init() {
  static std::atomic<bool> done{false};
  if (done.load(std::memory_order_acquire)) return;
  gwsim_load_cuda_injection();
  done.store(true, std::memory_order_release);
}
#define GWSIM_CUDART_ENTER() \
  GWSIM_ENTER();             \
  ::gwsim::cudart::lazy_driver_init()

inline uint64_t handle(const void* p) { return reinterpret_cast<uint64_t>(p); }
inline Dims dims(dim3 d) { return Dims{d.x, d.y, d.z}; }

}  // namespace gwsim::cudart
