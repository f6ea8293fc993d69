// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the files of the simulated libcuda.so.1 (none exported; no exported function
// calls another, so each uprobe fires once per call).
#pragma once

#include <cstdint>

#include "device/device.hpp"
#include "gwsim/cuda.h"

namespace gwsim::cuda {

// Maps a model outcome to the CUresult NVIDIA's driver returns.
CUresult result(Status st);
// The driver refuses every call before cuInit, as the real one does.
bool initialized();
void mark_initialized();

inline uint64_t handle(const void* p) { return reinterpret_cast<uint64_t>(p); }

}  // namespace gwsim::cuda
