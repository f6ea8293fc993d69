// SPDX-License-Identifier: Apache-2.0
// Error mapping, the per-thread last error, initialisation and device queries.
#include "hip/hip_front.hpp"

namespace gwsim::hip {
namespace {

constexpr hipError_t kDeinitialized = 4;  // hipErrorDeinitialized
thread_local hipError_t t_last_error = hipSuccess;

}  // namespace

hipError_t fail(hipError_t err) {
  if (err != hipSuccess && err != hipErrorNotReady) t_last_error = err;
  return err;
}

hipError_t result(Status st) {
  switch (st) {
    case Status::kOk:
      return hipSuccess;
    case Status::kInvalidValue:
      return fail(hipErrorInvalidValue);
    case Status::kInvalidHandle:
      return fail(hipErrorInvalidHandle);
    case Status::kInvalidFunction:
      return fail(hipErrorInvalidDeviceFunction);
    case Status::kInvalidConfig:
      return fail(hipErrorInvalidConfiguration);
    case Status::kInvalidDevice:
      return fail(hipErrorInvalidDevice);
    case Status::kOutOfMemory:
      return fail(hipErrorOutOfMemory);
    case Status::kNotReady:
      return hipErrorNotReady;
    case Status::kStopped:
      return fail(kDeinitialized);
  }
  return fail(hipErrorInvalidValue);
}

hipError_t take_last_error() {
  const hipError_t e = t_last_error;
  t_last_error = hipSuccess;
  return e;
}

}  // namespace gwsim::hip

using gwsim::Device;
using namespace gwsim::hip;

extern "C" {

hipError_t hipInit(unsigned int flags) {
  GWSIM_ENTER();
  if (flags != 0) return fail(hipErrorInvalidValue);
  return Device::get().config().device_count > 0 ? hipSuccess : fail(hipErrorNoDevice);
}

hipError_t hipGetDeviceCount(int* count) {
  GWSIM_ENTER();
  if (count == nullptr) return fail(hipErrorInvalidValue);
  *count = Device::get().config().device_count;
  return *count > 0 ? hipSuccess : fail(hipErrorNoDevice);
}

hipError_t hipSetDevice(int deviceId) {
  GWSIM_ENTER();
  const bool ok = deviceId >= 0 && deviceId < Device::get().config().device_count;
  if (!ok) return fail(hipErrorInvalidDevice);
  Device::select(deviceId);
  return hipSuccess;
}

hipError_t hipGetLastError(void) {
  GWSIM_ENTER();
  return take_last_error();
}

}  // extern "C"
