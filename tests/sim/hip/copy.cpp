// SPDX-License-Identifier: Apache-2.0
// HIP copies and memsets (same semantics as the CUDA runtime's).
#include "hip/hip_front.hpp"

using gwsim::CopyRequest;
using gwsim::DefaultStream;
using gwsim::Device;
using gwsim::Dir;
using namespace gwsim::hip;

namespace {

constexpr hipError_t kInvalidMemcpyDirection = 21;  // hipErrorInvalidMemcpyDirection

hipError_t copy(const gwsim::ApiCounter* api, const void* dst, const void* src, size_t bytes,
                int kind, hipStream_t stream, bool sync) {
  if (kind < hipMemcpyHostToHost || kind > hipMemcpyDefault) return fail(kInvalidMemcpyDirection);
  CopyRequest r;
  r.dst = handle(dst);
  r.src = handle(src);
  r.bytes = r.dst_extent = r.src_extent = bytes;
  r.dir = static_cast<Dir>(kind);
  r.stream = handle(stream);
  r.scope = DefaultStream::kLegacy;
  r.sync = sync;
  return result(Device::get().copy(api, r));
}

}  // namespace

extern "C" {

hipError_t hipMemcpy(void* dst, const void* src, size_t sizeBytes, hipMemcpyKind kind) {
  GWSIM_ENTER();
  return copy(gw_api, dst, src, sizeBytes, kind, nullptr, /*sync=*/true);
}

hipError_t hipMemcpyAsync(void* dst, const void* src, size_t sizeBytes, hipMemcpyKind kind,
                          hipStream_t stream) {
  GWSIM_ENTER();
  return copy(gw_api, dst, src, sizeBytes, kind, stream, /*sync=*/false);
}

hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void* src, size_t sizeBytes) {
  GWSIM_ENTER();
  return copy(gw_api, dst, src, sizeBytes, hipMemcpyHostToDevice, nullptr, /*sync=*/true);
}

hipError_t hipMemcpyDtoH(void* dst, hipDeviceptr_t src, size_t sizeBytes) {
  GWSIM_ENTER();
  return copy(gw_api, dst, src, sizeBytes, hipMemcpyDeviceToHost, nullptr, /*sync=*/true);
}

hipError_t hipMemcpyDtoD(hipDeviceptr_t dst, hipDeviceptr_t src, size_t sizeBytes) {
  GWSIM_ENTER();
  return copy(gw_api, dst, src, sizeBytes, hipMemcpyDeviceToDevice, nullptr, /*sync=*/true);
}

hipError_t hipMemset(void* dst, int value, size_t sizeBytes) {
  GWSIM_ENTER();
  (void)value;
  return result(Device::get().memset(gw_api, handle(dst), sizeBytes, 0, DefaultStream::kLegacy));
}

hipError_t hipMemsetAsync(void* dst, int value, size_t sizeBytes, hipStream_t stream) {
  GWSIM_ENTER();
  (void)value;
  return result(
      Device::get().memset(gw_api, handle(dst), sizeBytes, handle(stream), DefaultStream::kLegacy));
}

}  // extern "C"
