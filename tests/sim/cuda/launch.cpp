// SPDX-License-Identifier: Apache-2.0
// Driver-API kernel and graph launches.
#include "cuda/cuda_front.hpp"

using gwsim::DefaultStream;
using gwsim::Device;
using gwsim::Dims;
using namespace gwsim::cuda;

namespace {

struct Launch {
  CUfunction f;
  Dims grid;
  Dims block;
  CUstream stream;
};

CUresult launch(const gwsim::ApiCounter* api, const Launch& l, DefaultStream scope) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(Device::get().launch(api, l.f, l.grid, l.block, handle(l.stream), scope));
}

CUresult launch_config(const gwsim::ApiCounter* api, const CUlaunchConfig* c, CUfunction f,
                       DefaultStream scope) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Launch l{f,
                 {c->gridDimX, c->gridDimY, c->gridDimZ},
                 {c->blockDimX, c->blockDimY, c->blockDimZ},
                 c->hStream};
  return result(Device::get().launch(api, l.f, l.grid, l.block, handle(l.stream), scope));
}

CUresult launch_graph(const gwsim::ApiCounter* api, CUgraphExec g, CUstream s,
                      DefaultStream scope) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return result(Device::get().launch_graph(api, g, handle(s), scope));
}

}  // namespace

extern "C" {

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void** kernelParams, void** extra) {
  GWSIM_ENTER();
  (void)sharedMemBytes;
  (void)kernelParams;
  (void)extra;
  return launch(gw_api,
                {f, {gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}, hStream},
                DefaultStream::kLegacy);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                             void** kernelParams, void** extra) {
  GWSIM_ENTER();
  (void)sharedMemBytes;
  (void)kernelParams;
  (void)extra;
  return launch(gw_api,
                {f, {gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}, hStream},
                DefaultStream::kPerThread);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                          void** extra) {
  GWSIM_ENTER();
  (void)kernelParams;
  (void)extra;
  return launch_config(gw_api, config, f, DefaultStream::kLegacy);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                               void** extra) {
  GWSIM_ENTER();
  (void)kernelParams;
  (void)extra;
  return launch_config(gw_api, config, f, DefaultStream::kPerThread);
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  GWSIM_ENTER();
  return launch_graph(gw_api, hGraphExec, hStream, DefaultStream::kLegacy);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  GWSIM_ENTER();
  return launch_graph(gw_api, hGraphExec, hStream, DefaultStream::kPerThread);
}

}  // extern "C"
