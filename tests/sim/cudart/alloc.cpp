// SPDX-License-Identifier: Apache-2.0
// Allocation and release: a host CPU cost per call (GWSIM_MALLOC_NS / GWSIM_FREE_NS), and the
// implicit device synchronisation of cudaFree and cudaFreeHost (not of cudaFreeAsync).
#include "cudart/cudart_front.hpp"

using gwsim::Device;
using gwsim::MemKind;
using gwsim::Status;
using namespace gwsim::cudart;

namespace {

cudaError_t alloc_host(const gwsim::ApiCounter* api, void** out, size_t size, MemKind kind) {
  if (out == nullptr) return fail(cudaErrorInvalidValue);
  return result(Device::get().alloc_host(api, size, kind, out));
}

cudaError_t alloc_device(const gwsim::ApiCounter* api, void** out, size_t size) {
  if (out == nullptr) return fail(cudaErrorInvalidValue);
  uint64_t p = 0;
  const Status st = Device::get().alloc_device(api, size, /*low32=*/false, &p);
  if (st == Status::kOk) *out = reinterpret_cast<void*>(p);
  return result(st);
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  GWSIM_CUDART_ENTER();
  return alloc_device(gw_api, devPtr, size);
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  GWSIM_CUDART_ENTER();
  return alloc_host(gw_api, ptr, size, MemKind::kPinnedHost);
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  GWSIM_CUDART_ENTER();
  (void)flags;
  return alloc_host(gw_api, pHost, size, MemKind::kPinnedHost);
}

cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  GWSIM_CUDART_ENTER();
  constexpr unsigned kAttachGlobal = 1, kAttachHost = 2;
  if (flags != kAttachGlobal && flags != kAttachHost) return fail(cudaErrorInvalidValue);
  return alloc_host(gw_api, devPtr, size, MemKind::kManaged);
}

cudaError_t cudaFree(void* devPtr) {
  GWSIM_CUDART_ENTER();
  return result(Device::get().free_device(gw_api, handle(devPtr)));
}

// The pool calls: allocated as cudaMalloc is (the model has one pool per device), freed without
// the device synchronisation of cudaFree.
cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  GWSIM_CUDART_ENTER();
  (void)hStream;
  return alloc_device(gw_api, devPtr, size);
}

cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                    cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  (void)memPool;
  (void)stream;
  return alloc_device(gw_api, ptr, size);
}

cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  GWSIM_CUDART_ENTER();
  (void)hStream;
  return result(Device::get().free_device_async(gw_api, handle(devPtr)));
}

cudaError_t cudaFreeHost(void* ptr) {
  GWSIM_CUDART_ENTER();
  return result(Device::get().free_host(gw_api, handle(ptr)));
}

}  // extern "C"
