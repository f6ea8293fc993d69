// SPDX-License-Identifier: Apache-2.0
// HIP kernel and graph launches.
#include "hip/hip_front.hpp"

using gwsim::DefaultStream;
using gwsim::Device;
using gwsim::Dims;
using namespace gwsim::hip;

extern "C" {

hipError_t hipLaunchKernel(const void* function_address, dim3 numBlocks, dim3 dimBlocks,
                           void** args, size_t sharedMemBytes, hipStream_t stream) {
  GWSIM_ENTER();
  (void)args;
  (void)sharedMemBytes;
  return result(Device::get().launch(gw_api, function_address, dims(numBlocks), dims(dimBlocks),
                                     handle(stream), DefaultStream::kLegacy));
}

hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                 unsigned int gridDimZ, unsigned int blockDimX,
                                 unsigned int blockDimY, unsigned int blockDimZ,
                                 unsigned int sharedMemBytes, hipStream_t stream,
                                 void** kernelParams, void** extra) {
  GWSIM_ENTER();
  (void)sharedMemBytes;
  (void)kernelParams;
  (void)extra;
  return result(Device::get().launch(gw_api, f, Dims{gridDimX, gridDimY, gridDimZ},
                                     Dims{blockDimX, blockDimY, blockDimZ}, handle(stream),
                                     DefaultStream::kLegacy));
}

hipError_t hipGraphLaunch(hipGraphExec_t graphExec, hipStream_t stream) {
  GWSIM_ENTER();
  return result(
      Device::get().launch_graph(gw_api, graphExec, handle(stream), DefaultStream::kLegacy));
}

}  // extern "C"
