// SPDX-License-Identifier: Apache-2.0
// Streams, events and the synchronising calls. The waits are real: the calling thread sleeps on
// a condition variable until the GPU thread has finished the work, which is the off-CPU time the
// tracer attributes to these calls.
#include "cudart/cudart_front.hpp"

using gwsim::DefaultStream;
using gwsim::Device;
using gwsim::Status;
using namespace gwsim::cudart;

extern "C" {

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  return result(Device::get().sync_stream(gw_api, handle(stream), DefaultStream::kLegacy));
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  return result(Device::get().sync_stream(gw_api, handle(stream), DefaultStream::kPerThread));
}

cudaError_t cudaDeviceSynchronize(void) {
  GWSIM_CUDART_ENTER();
  return result(Device::get().sync_device(gw_api));
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  GWSIM_CUDART_ENTER();
  return result(Device::get().sync_event(gw_api, handle(event)));
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  GWSIM_CUDART_ENTER();
  (void)flags;
  return result(
      Device::get().stream_wait_event(handle(stream), DefaultStream::kLegacy, handle(event)));
}

cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  GWSIM_CUDART_ENTER();
  (void)flags;
  return result(
      Device::get().stream_wait_event(handle(stream), DefaultStream::kPerThread, handle(event)));
}

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  GWSIM_CUDART_ENTER();
  if (pStream == nullptr) return fail(cudaErrorInvalidValue);
  *pStream = reinterpret_cast<cudaStream_t>(Device::get().engine().create_stream());
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  GWSIM_CUDART_ENTER();
  (void)flags;
  if (pStream == nullptr) return fail(cudaErrorInvalidValue);
  *pStream = reinterpret_cast<cudaStream_t>(Device::get().engine().create_stream());
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  const bool ok = Device::get().engine().destroy_stream(handle(stream));
  return ok ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

// The queries never wait: cudaErrorNotReady (600) while work queued on the stream (or before the
// event's point in its stream) has not run, cudaSuccess once it has.
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  return result(Device::get().engine().query_stream(handle(stream), DefaultStream::kLegacy));
}

cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  return result(Device::get().engine().query_stream(handle(stream), DefaultStream::kPerThread));
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  GWSIM_CUDART_ENTER();
  if (event == nullptr) return fail(cudaErrorInvalidValue);
  *event = reinterpret_cast<cudaEvent_t>(Device::get().engine().create_event());
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  GWSIM_CUDART_ENTER();
  (void)flags;
  if (event == nullptr) return fail(cudaErrorInvalidValue);
  *event = reinterpret_cast<cudaEvent_t>(Device::get().engine().create_event());
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  return result(
      Device::get().engine().record_event(handle(event), handle(stream), DefaultStream::kLegacy));
}

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  return result(Device::get().engine().record_event(handle(event), handle(stream),
                                                    DefaultStream::kPerThread));
}

// The flags (cudaEventRecordExternal) change nothing the model sees.
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  GWSIM_CUDART_ENTER();
  (void)flags;
  return result(
      Device::get().engine().record_event(handle(event), handle(stream), DefaultStream::kLegacy));
}

cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
                                          unsigned int flags) {
  GWSIM_CUDART_ENTER();
  (void)flags;
  return result(Device::get().engine().record_event(handle(event), handle(stream),
                                                    DefaultStream::kPerThread));
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  GWSIM_CUDART_ENTER();
  return result(Device::get().engine().query_event(handle(event)));
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  GWSIM_CUDART_ENTER();
  const bool ok = Device::get().engine().destroy_event(handle(event));
  return ok ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

}  // extern "C"
