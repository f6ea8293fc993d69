// SPDX-License-Identifier: Apache-2.0
// Kernel and graph launches: host CPU for the launch, then the kernel queued on its stream.
#include "cudart/cudart_front.hpp"

using gwsim::DefaultStream;
using gwsim::Device;
using gwsim::Status;
using namespace gwsim::cudart;

namespace {

cudaError_t launch_config(const gwsim::ApiCounter* api, const cudaLaunchConfig_t* config,
                          const void* func, DefaultStream scope) {
  if (config == nullptr) return result(Status::kInvalidValue);
  return result(Device::get().launch(api, func, dims(config->gridDim), dims(config->blockDim),
                                     handle(config->stream), scope));
}

}  // namespace

extern "C" {

cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                             size_t sharedMem, cudaStream_t stream) {
  GWSIM_ENTER();
  (void)args;
  (void)sharedMem;
  return result(Device::get().launch(gw_api, func, dims(gridDim), dims(blockDim), handle(stream),
                                     DefaultStream::kLegacy));
}

cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                  size_t sharedMem, cudaStream_t stream) {
  GWSIM_ENTER();
  (void)args;
  (void)sharedMem;
  return result(Device::get().launch(gw_api, func, dims(gridDim), dims(blockDim), handle(stream),
                                     DefaultStream::kPerThread));
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  GWSIM_ENTER();
  (void)args;
  return launch_config(gw_api, config, func, DefaultStream::kLegacy);
}

cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func,
                                     void** args) {
  GWSIM_ENTER();
  (void)args;
  return launch_config(gw_api, config, func, DefaultStream::kPerThread);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  GWSIM_ENTER();
  return result(
      Device::get().launch_graph(gw_api, graphExec, handle(stream), DefaultStream::kLegacy));
}

cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  GWSIM_ENTER();
  return result(
      Device::get().launch_graph(gw_api, graphExec, handle(stream), DefaultStream::kPerThread));
}

}  // extern "C"
