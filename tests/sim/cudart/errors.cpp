// SPDX-License-Identifier: Apache-2.0
// Error mapping, the per-thread last error, and the error/device query functions.
#include "cudart/cudart_front.hpp"

namespace gwsim::cudart {
namespace {

constexpr cudaError_t kCudartUnloading = 4;  // cudaErrorCudartUnloading
constexpr cudaError_t kNoDevice = 100;       // cudaErrorNoDevice

thread_local cudaError_t t_last_error = cudaSuccess;

}  // namespace

cudaError_t fail(cudaError_t err) {
  // cudaErrorNotReady reports progress, not failure: the real runtime does not record it.
  if (err != cudaSuccess && err != cudaErrorNotReady) t_last_error = err;
  return err;
}

cudaError_t result(Status st) {
  switch (st) {
    case Status::kOk:
      return cudaSuccess;
    case Status::kInvalidValue:
      return fail(cudaErrorInvalidValue);
    case Status::kInvalidHandle:
      return fail(cudaErrorInvalidResourceHandle);
    case Status::kInvalidFunction:
      return fail(cudaErrorInvalidDeviceFunction);
    case Status::kInvalidConfig:
      return fail(cudaErrorInvalidConfiguration);
    case Status::kInvalidDevice:
      return fail(cudaErrorInvalidDevice);
    case Status::kOutOfMemory:
      return fail(cudaErrorMemoryAllocation);
    case Status::kNotReady:
      return cudaErrorNotReady;
    case Status::kStopped:
      return fail(kCudartUnloading);
  }
  return fail(cudaErrorLaunchFailure);
}

cudaError_t last_error(bool reset) {
  const cudaError_t e = t_last_error;
  if (reset) t_last_error = cudaSuccess;
  return e;
}

}  // namespace gwsim::cudart

using gwsim::Device;
using namespace gwsim::cudart;

extern "C" {

cudaError_t cudaGetLastError(void) {
  GWSIM_CUDART_ENTER();
  return last_error(/*reset=*/true);
}

cudaError_t cudaPeekAtLastError(void) {
  GWSIM_CUDART_ENTER();
  return last_error(/*reset=*/false);
}

const char* cudaGetErrorString(cudaError_t error) {
  GWSIM_CUDART_ENTER();
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDeviceFunction:
      return "invalid device function";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    default:
      return "unrecognized error code";
  }
}

cudaError_t cudaGetDeviceCount(int* count) {
  GWSIM_CUDART_ENTER();
  if (count == nullptr) return fail(cudaErrorInvalidValue);
  *count = Device::get().config().device_count;
  return *count > 0 ? cudaSuccess : fail(kNoDevice);
}

cudaError_t cudaSetDevice(int device) {
  GWSIM_CUDART_ENTER();
  if (device < 0 || device >= Device::get().config().device_count) {
    return fail(cudaErrorInvalidDevice);
  }
  Device::select(device);
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  GWSIM_CUDART_ENTER();
  if (device == nullptr) return fail(cudaErrorInvalidValue);
  *device = Device::selected();
  return cudaSuccess;
}

}  // extern "C"
