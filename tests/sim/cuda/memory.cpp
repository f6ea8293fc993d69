// SPDX-License-Identifier: Apache-2.0
// Driver-API allocation. The unsuffixed cuMemAlloc/cuMemFree/cuMemAllocHost are the legacy
// 32-bit entry points: their pointers and sizes are 32-bit, so the simulator hands out device
// addresses below 4 GiB for them.
#include "cuda/cuda_front.hpp"

using gwsim::Device;
using gwsim::MemKind;
using gwsim::Status;
using namespace gwsim::cuda;

namespace {

CUresult alloc_device(const gwsim::ApiCounter* api, uint64_t bytes, bool low32, uint64_t* out) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (out == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  return result(Device::get().alloc_device(api, bytes, low32, out));
}

CUresult alloc_host(const gwsim::ApiCounter* api, void** pp, uint64_t bytes) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (pp == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  return result(Device::get().alloc_host(api, bytes, MemKind::kPinnedHost, pp));
}

CUresult free_device(const gwsim::ApiCounter* api, uint64_t ptr) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(Device::get().free_device(api, ptr));
}

}  // namespace

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  GWSIM_ENTER();
  uint64_t p = 0;
  const CUresult r = alloc_device(gw_api, bytesize, /*low32=*/false, dptr ? &p : nullptr);
  if (r == CUDA_SUCCESS) *dptr = p;
  return r;
}

CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  GWSIM_ENTER();
  uint64_t p = 0;
  const CUresult r = alloc_device(gw_api, bytesize, /*low32=*/true, dptr ? &p : nullptr);
  if (r == CUDA_SUCCESS) *dptr = static_cast<CUdeviceptr_v1>(p);
  return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  GWSIM_ENTER();
  return free_device(gw_api, dptr);
}

CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  GWSIM_ENTER();
  return free_device(gw_api, dptr);
}

CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  GWSIM_ENTER();
  return alloc_host(gw_api, pp, bytesize);
}

CUresult cuMemAllocHost(void** pp, unsigned int bytesize) {
  GWSIM_ENTER();
  return alloc_host(gw_api, pp, bytesize);
}

CUresult cuMemFreeHost(void* p) {
  GWSIM_ENTER();
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(Device::get().free_host(gw_api, handle(p)));
}

}  // extern "C"
