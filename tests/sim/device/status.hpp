// SPDX-License-Identifier: Apache-2.0
// Outcomes of device-model operations. Each front (cudart, cuda, nccl, hip) maps them to its own
// error numbering, so the model never needs to know which runtime is calling it.
#pragma once

#include <cstdint>

namespace gwsim {

enum class Status : uint8_t {
  kOk,
  kInvalidValue,     // NULL out-pointer, bad size, pointer outside any allocation
  kInvalidHandle,    // unknown stream / event / communicator
  kInvalidFunction,  // NULL kernel function
  kInvalidConfig,    // zero grid or block dimension, block too large
  kInvalidDevice,
  kOutOfMemory,
  kNotReady,  // a query found work still pending
  kStopped,   // the process is exiting and the GPU thread is gone
};

// Copy directions; the values are cudaMemcpyKind's (which hipMemcpyKind shares).
enum class Dir : uint8_t {
  kHostToHost = 0,
  kHostToDevice = 1,
  kDeviceToHost = 2,
  kDeviceToDevice = 3,
  kDefault = 4,  // infer from the pointers (unified addressing)
};

// Which stream a NULL stream handle means: the legacy default stream, or the per-thread default
// stream of the _ptsz/_ptds entry points (and of cudaStreamPerThread).
enum class DefaultStream : uint8_t { kLegacy, kPerThread };

}  // namespace gwsim
