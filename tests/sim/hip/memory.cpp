// SPDX-License-Identifier: Apache-2.0
// HIP allocation and release (hipFree and hipHostFree synchronise the device first).
#include "hip/hip_front.hpp"

using gwsim::Device;
using gwsim::MemKind;
using gwsim::Status;
using namespace gwsim::hip;

namespace {

hipError_t alloc_device(const gwsim::ApiCounter* api, void** out, size_t size) {
  if (out == nullptr) return fail(hipErrorInvalidValue);
  uint64_t p = 0;
  const Status st = Device::get().alloc_device(api, size, /*low32=*/false, &p);
  if (st == Status::kOk) *out = reinterpret_cast<void*>(p);
  return result(st);
}

}  // namespace

extern "C" {

hipError_t hipMalloc(void** ptr, size_t size) {
  GWSIM_ENTER();
  return alloc_device(gw_api, ptr, size);
}

hipError_t hipHostMalloc(void** ptr, size_t size, unsigned int flags) {
  GWSIM_ENTER();
  (void)flags;
  if (ptr == nullptr) return fail(hipErrorInvalidValue);
  return result(Device::get().alloc_host(gw_api, size, MemKind::kPinnedHost, ptr));
}

hipError_t hipMallocManaged(void** dev_ptr, size_t size, unsigned int flags) {
  GWSIM_ENTER();
  constexpr unsigned kAttachGlobal = 1, kAttachHost = 2;
  if (dev_ptr == nullptr || (flags != kAttachGlobal && flags != kAttachHost)) {
    return fail(hipErrorInvalidValue);
  }
  return result(Device::get().alloc_host(gw_api, size, MemKind::kManaged, dev_ptr));
}

hipError_t hipFree(void* ptr) {
  GWSIM_ENTER();
  return result(Device::get().free_device(gw_api, handle(ptr)));
}

hipError_t hipMallocAsync(void** ptr, size_t size, hipStream_t stream) {
  GWSIM_ENTER();
  (void)stream;
  return alloc_device(gw_api, ptr, size);
}

hipError_t hipFreeAsync(void* ptr, hipStream_t stream) {
  GWSIM_ENTER();
  (void)stream;
  return result(Device::get().free_device_async(gw_api, handle(ptr)));
}

hipError_t hipHostFree(void* ptr) {
  GWSIM_ENTER();
  return result(Device::get().free_host(gw_api, handle(ptr)));
}

}  // extern "C"
