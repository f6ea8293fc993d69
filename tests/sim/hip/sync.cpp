// SPDX-License-Identifier: Apache-2.0
// HIP streams, events and synchronisation (real, blocking waits).
#include "hip/hip_front.hpp"

using gwsim::DefaultStream;
using gwsim::Device;
using namespace gwsim::hip;

extern "C" {

hipError_t hipDeviceSynchronize(void) {
  GWSIM_ENTER();
  return result(Device::get().sync_device(gw_api));
}

hipError_t hipStreamSynchronize(hipStream_t stream) {
  GWSIM_ENTER();
  return result(Device::get().sync_stream(gw_api, handle(stream), DefaultStream::kLegacy));
}

hipError_t hipEventSynchronize(hipEvent_t event) {
  GWSIM_ENTER();
  return result(Device::get().sync_event(gw_api, handle(event)));
}

hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int flags) {
  GWSIM_ENTER();
  (void)flags;
  return result(
      Device::get().stream_wait_event(handle(stream), DefaultStream::kLegacy, handle(event)));
}

hipError_t hipStreamCreate(hipStream_t* stream) {
  GWSIM_ENTER();
  if (stream == nullptr) return fail(hipErrorInvalidValue);
  *stream = reinterpret_cast<hipStream_t>(Device::get().engine().create_stream());
  return hipSuccess;
}

hipError_t hipStreamDestroy(hipStream_t stream) {
  GWSIM_ENTER();
  const bool ok = Device::get().engine().destroy_stream(handle(stream));
  return ok ? hipSuccess : fail(hipErrorInvalidHandle);
}

hipError_t hipEventCreate(hipEvent_t* event) {
  GWSIM_ENTER();
  if (event == nullptr) return fail(hipErrorInvalidValue);
  *event = reinterpret_cast<hipEvent_t>(Device::get().engine().create_event());
  return hipSuccess;
}

hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) {
  GWSIM_ENTER();
  return result(
      Device::get().engine().record_event(handle(event), handle(stream), DefaultStream::kLegacy));
}

// Never waits: hipErrorNotReady (600) until the work is done.
hipError_t hipEventQuery(hipEvent_t event) {
  GWSIM_ENTER();
  return result(Device::get().engine().query_event(handle(event)));
}

hipError_t hipStreamQuery(hipStream_t stream) {
  GWSIM_ENTER();
  return result(Device::get().engine().query_stream(handle(stream), DefaultStream::kLegacy));
}

hipError_t hipEventDestroy(hipEvent_t event) {
  GWSIM_ENTER();
  const bool ok = Device::get().engine().destroy_event(handle(event));
  return ok ? hipSuccess : fail(hipErrorInvalidHandle);
}

}  // extern "C"
