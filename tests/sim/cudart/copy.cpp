// SPDX-License-Identifier: Apache-2.0
// Copies and memsets. Synchronous entry points block the caller until the copy is done; copies
// from pageable memory also burn host CPU staging it (gwsim::Device::copy).
#include "cudart/cudart_front.hpp"

using gwsim::CopyRequest;
using gwsim::DefaultStream;
using gwsim::Device;
using gwsim::Dir;
using namespace gwsim::cudart;

namespace {

constexpr cudaError_t kInvalidPitchValue = 12;       // cudaErrorInvalidPitchValue
constexpr cudaError_t kInvalidMemcpyDirection = 21;  // cudaErrorInvalidMemcpyDirection

struct Copy {
  void* dst;
  const void* src;
  size_t count;
  int kind;
  cudaStream_t stream;
  DefaultStream scope;
  bool sync;
};

cudaError_t copy_1d(const gwsim::ApiCounter* api, const Copy& c) {
  if (c.kind < cudaMemcpyHostToHost || c.kind > cudaMemcpyDefault) {
    return fail(kInvalidMemcpyDirection);
  }
  CopyRequest r;
  r.dst = handle(c.dst);
  r.src = handle(c.src);
  r.bytes = r.dst_extent = r.src_extent = c.count;
  r.dir = static_cast<Dir>(c.kind);
  r.stream = handle(c.stream);
  r.scope = c.scope;
  r.sync = c.sync;
  return result(Device::get().copy(api, r));
}

cudaError_t copy_2d(const gwsim::ApiCounter* api, const Copy& c, size_t dpitch, size_t spitch,
                    size_t height) {
  const size_t width = c.count;
  if (c.kind < cudaMemcpyHostToHost || c.kind > cudaMemcpyDefault) {
    return fail(kInvalidMemcpyDirection);
  }
  if (width > dpitch || width > spitch) return fail(kInvalidPitchValue);
  CopyRequest r;
  r.dst = handle(c.dst);
  r.src = handle(c.src);
  r.bytes = uint64_t{width} * height;
  r.dst_extent = height == 0 ? 0 : dpitch * (height - 1) + width;
  r.src_extent = height == 0 ? 0 : spitch * (height - 1) + width;
  r.dir = static_cast<Dir>(c.kind);
  r.stream = handle(c.stream);
  r.scope = c.scope;
  r.sync = c.sync;
  return result(Device::get().copy(api, r));
}

}  // namespace

extern "C" {

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  GWSIM_CUDART_ENTER();
  return copy_1d(gw_api, {dst, src, count, kind, nullptr, DefaultStream::kLegacy, true});
}

cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  GWSIM_CUDART_ENTER();
  return copy_1d(gw_api, {dst, src, count, kind, nullptr, DefaultStream::kPerThread, true});
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  return copy_1d(gw_api, {dst, src, count, kind, stream, DefaultStream::kLegacy, false});
}

cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  return copy_1d(gw_api, {dst, src, count, kind, stream, DefaultStream::kPerThread, false});
}

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind) {
  GWSIM_CUDART_ENTER();
  return copy_2d(gw_api, {dst, src, width, kind, nullptr, DefaultStream::kLegacy, true}, dpitch,
                 spitch, height);
}

cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind) {
  GWSIM_CUDART_ENTER();
  return copy_2d(gw_api, {dst, src, width, kind, nullptr, DefaultStream::kPerThread, true}, dpitch,
                 spitch, height);
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  return copy_2d(gw_api, {dst, src, width, kind, stream, DefaultStream::kLegacy, false}, dpitch,
                 spitch, height);
}

cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch,
                                   size_t width, size_t height, enum cudaMemcpyKind kind,
                                   cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  return copy_2d(gw_api, {dst, src, width, kind, stream, DefaultStream::kPerThread, false}, dpitch,
                 spitch, height);
}

// Memsets of device memory are asynchronous to the host even through the non-Async names.
cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  GWSIM_CUDART_ENTER();
  (void)value;
  return result(Device::get().memset(gw_api, handle(devPtr), count, 0, DefaultStream::kLegacy));
}

cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  GWSIM_CUDART_ENTER();
  (void)value;
  return result(Device::get().memset(gw_api, handle(devPtr), count, 0, DefaultStream::kPerThread));
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  (void)value;
  return result(
      Device::get().memset(gw_api, handle(devPtr), count, handle(stream), DefaultStream::kLegacy));
}

cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  (void)value;
  return result(Device::get().memset(gw_api, handle(devPtr), count, handle(stream),
                                     DefaultStream::kPerThread));
}

}  // extern "C"
