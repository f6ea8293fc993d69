// SPDX-License-Identifier: Apache-2.0
// Driver-API copies. The named directions (HtoD, DtoH, DtoD) fix the direction; cuMemcpy and
// cuMemcpyAsync infer it from the pointers (unified addressing). The unsuffixed and _ptds names
// block the caller; the Async ones queue on the stream.
#include "cuda/cuda_front.hpp"

using gwsim::CopyRequest;
using gwsim::DefaultStream;
using gwsim::Device;
using gwsim::Dir;
using namespace gwsim::cuda;

namespace {

constexpr auto kLegacy = DefaultStream::kLegacy;
constexpr auto kPerThread = DefaultStream::kPerThread;

struct Copy {
  uint64_t dst;
  uint64_t src;
  size_t bytes;
  Dir dir;
  CUstream stream;
  DefaultStream scope;
  bool sync;
};

CUresult copy(const gwsim::ApiCounter* api, const Copy& c) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  CopyRequest r;
  r.dst = c.dst;
  r.src = c.src;
  r.bytes = r.dst_extent = r.src_extent = c.bytes;
  r.dir = c.dir;
  r.stream = handle(c.stream);
  r.scope = c.scope;
  r.sync = c.sync;
  return result(Device::get().copy(api, r));
}

uint64_t host(const void* p) { return handle(p); }

}  // namespace

extern "C" {

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  GWSIM_ENTER();
  return copy(gw_api, {dst, src, ByteCount, Dir::kDefault, nullptr, kLegacy, true});
}

CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  GWSIM_ENTER();
  return copy(gw_api, {dst, src, ByteCount, Dir::kDefault, nullptr, kPerThread, true});
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  GWSIM_ENTER();
  return copy(gw_api, {dst, src, ByteCount, Dir::kDefault, hStream, kLegacy, false});
}

CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  GWSIM_ENTER();
  return copy(gw_api, {dst, src, ByteCount, Dir::kDefault, hStream, kPerThread, false});
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  GWSIM_ENTER();
  return copy(gw_api,
              {dstDevice, host(srcHost), ByteCount, Dir::kHostToDevice, nullptr, kLegacy, true});
}

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  GWSIM_ENTER();
  return copy(gw_api,
              {dstDevice, host(srcHost), ByteCount, Dir::kHostToDevice, nullptr, kPerThread, true});
}

CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  GWSIM_ENTER();
  return copy(gw_api,
              {host(dstHost), srcDevice, ByteCount, Dir::kDeviceToHost, nullptr, kLegacy, true});
}

CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  GWSIM_ENTER();
  return copy(gw_api,
              {host(dstHost), srcDevice, ByteCount, Dir::kDeviceToHost, nullptr, kPerThread, true});
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  GWSIM_ENTER();
  return copy(gw_api,
              {dstDevice, srcDevice, ByteCount, Dir::kDeviceToDevice, nullptr, kLegacy, true});
}

CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  GWSIM_ENTER();
  return copy(gw_api,
              {dstDevice, srcDevice, ByteCount, Dir::kDeviceToDevice, nullptr, kPerThread, true});
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                              CUstream hStream) {
  GWSIM_ENTER();
  return copy(gw_api,
              {dstDevice, host(srcHost), ByteCount, Dir::kHostToDevice, hStream, kLegacy, false});
}

CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                   CUstream hStream) {
  GWSIM_ENTER();
  return copy(gw_api, {dstDevice, host(srcHost), ByteCount, Dir::kHostToDevice, hStream, kPerThread,
                       false});
}

CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  GWSIM_ENTER();
  return copy(gw_api,
              {host(dstHost), srcDevice, ByteCount, Dir::kDeviceToHost, hStream, kLegacy, false});
}

CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream) {
  GWSIM_ENTER();
  return copy(gw_api, {host(dstHost), srcDevice, ByteCount, Dir::kDeviceToHost, hStream, kPerThread,
                       false});
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  GWSIM_ENTER();
  return copy(gw_api,
              {dstDevice, srcDevice, ByteCount, Dir::kDeviceToDevice, hStream, kLegacy, false});
}

CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream) {
  GWSIM_ENTER();
  return copy(gw_api,
              {dstDevice, srcDevice, ByteCount, Dir::kDeviceToDevice, hStream, kPerThread, false});
}

}  // extern "C"
