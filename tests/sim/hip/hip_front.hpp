// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the files of the simulated libamdhip64.so.5 (none exported; no exported
// function calls another, so each uprobe fires once per call).
#pragma once

#include <cstdint>

#include "device/device.hpp"
#include "gwsim/hip.h"

namespace gwsim::hip {

// Maps a model outcome to the hipError_t AMD's runtime returns, remembering failures for
// hipGetLastError.
hipError_t result(Status st);
hipError_t fail(hipError_t err);
hipError_t take_last_error();

inline uint64_t handle(const void* p) { return reinterpret_cast<uint64_t>(p); }
inline Dims dims(dim3 d) { return Dims{d.x, d.y, d.z}; }

}  // namespace gwsim::hip
