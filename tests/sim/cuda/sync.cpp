// SPDX-License-Identifier: Apache-2.0
// Driver-API streams, events and synchronisation (real, blocking waits).
#include "cuda/cuda_front.hpp"

using gwsim::DefaultStream;
using gwsim::Device;
using namespace gwsim::cuda;

extern "C" {

CUresult cuCtxSynchronize(void) {
  GWSIM_ENTER();
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(Device::get().sync_device(gw_api));
}

CUresult cuStreamSynchronize(CUstream hStream) {
  GWSIM_ENTER();
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(Device::get().sync_stream(gw_api, handle(hStream), DefaultStream::kLegacy));
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  GWSIM_ENTER();
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(Device::get().sync_stream(gw_api, handle(hStream), DefaultStream::kPerThread));
}

CUresult cuEventSynchronize(CUevent hEvent) {
  GWSIM_ENTER();
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(Device::get().sync_event(gw_api, handle(hEvent)));
}

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  GWSIM_ENTER();
  (void)Flags;
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (phStream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *phStream = reinterpret_cast<CUstream>(Device::get().engine().create_stream());
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  GWSIM_ENTER();
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  const bool ok = Device::get().engine().destroy_stream(handle(hStream));
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  GWSIM_ENTER();
  (void)Flags;
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (phEvent == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *phEvent = reinterpret_cast<CUevent>(Device::get().engine().create_event());
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  GWSIM_ENTER();
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(
      Device::get().engine().record_event(handle(hEvent), handle(hStream), DefaultStream::kLegacy));
}

CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  GWSIM_ENTER();
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(Device::get().engine().record_event(handle(hEvent), handle(hStream),
                                                    DefaultStream::kPerThread));
}

CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  GWSIM_ENTER();
  (void)flags;
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(
      Device::get().engine().record_event(handle(hEvent), handle(hStream), DefaultStream::kLegacy));
}

CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
  GWSIM_ENTER();
  (void)flags;
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(Device::get().engine().record_event(handle(hEvent), handle(hStream),
                                                    DefaultStream::kPerThread));
}

// Never waits: CUDA_ERROR_NOT_READY (600) until the work is done.
CUresult cuEventQuery(CUevent hEvent) {
  GWSIM_ENTER();
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(Device::get().engine().query_event(handle(hEvent)));
}

CUresult cuStreamQuery(CUstream hStream) {
  GWSIM_ENTER();
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(Device::get().engine().query_stream(handle(hStream), DefaultStream::kLegacy));
}

CUresult cuStreamQuery_ptsz(CUstream hStream) {
  GWSIM_ENTER();
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(Device::get().engine().query_stream(handle(hStream), DefaultStream::kPerThread));
}

CUresult cuEventDestroy_v2(CUevent hEvent) {
  GWSIM_ENTER();
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  const bool ok = Device::get().engine().destroy_event(handle(hEvent));
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

}  // extern "C"
