// SPDX-License-Identifier: Apache-2.0
// Kernel and graph launches: host CPU for the launch, then the kernel queued on its stream.
//
// GWSIM_CUDART_VIA_DRIVER=1: the kernel launches go through the simulated libcuda instead, as
// NVIDIA's libcudart's do (cudaLaunchKernel calls cuLaunchKernel): a tracer probing both
// libraries sees each launch twice, the driver's nested in the runtime's. libcuda.so.1 is
// dlopen()ed (found beside this library) and cuInit()ed at the first launch, as the real runtime
// does at its lazy initialisation. Read once; a value other than 0 or 1 is reported on stderr and
// taken as 0.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cudart/cudart_front.hpp"
#include "gwsim/cuda.h"

using gwsim::DefaultStream;
using gwsim::Device;
using gwsim::Status;
using namespace gwsim::cudart;

namespace {

// The simulated libcuda's launch entry points, reached through the dynamic linker as the real
// runtime reaches libcuda's (so each is a call into another library, probed on its own).
struct Driver {
  decltype(&cuLaunchKernel) launch = nullptr;
  decltype(&cuLaunchKernel_ptsz) launch_ptsz = nullptr;
  decltype(&cuLaunchKernelEx) launch_ex = nullptr;
  decltype(&cuLaunchKernelEx_ptsz) launch_ex_ptsz = nullptr;
};

Driver open_driver() {
  const char* v = std::getenv("GWSIM_CUDART_VIA_DRIVER");
  if (v == nullptr || std::strcmp(v, "0") == 0 || *v == '\0') return {};
  if (std::strcmp(v, "1") != 0) {
    std::fprintf(stderr, "gwsim: GWSIM_CUDART_VIA_DRIVER must be 0 or 1, not '%s'; ignored\n", v);
    return {};
  }
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "gwsim: GWSIM_CUDART_VIA_DRIVER=1 but %s; launches stay in libcudart\n",
                 dlerror());
    return {};
  }
  Driver d;
  d.launch = reinterpret_cast<decltype(d.launch)>(dlsym(lib, "cuLaunchKernel"));
  d.launch_ptsz = reinterpret_cast<decltype(d.launch_ptsz)>(dlsym(lib, "cuLaunchKernel_ptsz"));
  d.launch_ex = reinterpret_cast<decltype(d.launch_ex)>(dlsym(lib, "cuLaunchKernelEx"));
  d.launch_ex_ptsz =
      reinterpret_cast<decltype(d.launch_ex_ptsz)>(dlsym(lib, "cuLaunchKernelEx_ptsz"));
  auto init = reinterpret_cast<decltype(&cuInit)>(dlsym(lib, "cuInit"));
  if (!d.launch || !d.launch_ptsz || !d.launch_ex || !d.launch_ex_ptsz || !init || init(0) != 0) {
    std::fprintf(stderr,
                 "gwsim: GWSIM_CUDART_VIA_DRIVER=1 but libcuda.so.1 is not the simulated "
                 "one (or cuInit failed); launches stay in libcudart\n");
    return {};
  }
  return d;
}

// The driver when launches go through it, else nullptr.
const Driver* driver() {
  static const Driver d = open_driver();
  return d.launch != nullptr ? &d : nullptr;
}

// A driver result as the runtime reports it (the simulator's driver codes keep their runtime
// meaning: invalid value 1, invalid handle 400).
cudaError_t from_driver(CUresult r) {
  if (r == CUDA_SUCCESS) return cudaSuccess;
  if (r == CUDA_ERROR_INVALID_VALUE) return fail(cudaErrorInvalidValue);
  if (r == CUDA_ERROR_INVALID_HANDLE) return fail(cudaErrorInvalidResourceHandle);
  return fail(cudaErrorLaunchFailure);
}

cudaError_t driver_launch(decltype(&cuLaunchKernel) launch, const void* func, dim3 grid, dim3 block,
                          void** args, size_t shared, cudaStream_t stream) {
  if (func == nullptr) return result(Status::kInvalidFunction);
  return from_driver(launch(reinterpret_cast<CUfunction>(const_cast<void*>(func)), grid.x, grid.y,
                            grid.z, block.x, block.y, block.z, static_cast<unsigned>(shared),
                            reinterpret_cast<CUstream>(stream), args, nullptr));
}

cudaError_t driver_launch_config(decltype(&cuLaunchKernelEx) launch,
                                 const cudaLaunchConfig_t* config, const void* func, void** args) {
  if (config == nullptr) return result(Status::kInvalidValue);
  if (func == nullptr) return result(Status::kInvalidFunction);
  const CUlaunchConfig c{config->gridDim.x,
                         config->gridDim.y,
                         config->gridDim.z,
                         config->blockDim.x,
                         config->blockDim.y,
                         config->blockDim.z,
                         0,
                         reinterpret_cast<CUstream>(config->stream),
                         nullptr,
                         0};
  return from_driver(
      launch(&c, reinterpret_cast<CUfunction>(const_cast<void*>(func)), args, nullptr));
}

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
  GWSIM_CUDART_ENTER();
  if (const Driver* d = driver())
    return driver_launch(d->launch, func, gridDim, blockDim, args, sharedMem, stream);
  (void)args;
  (void)sharedMem;
  return result(Device::get().launch(gw_api, func, dims(gridDim), dims(blockDim), handle(stream),
                                     DefaultStream::kLegacy));
}

cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                  size_t sharedMem, cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  if (const Driver* d = driver())
    return driver_launch(d->launch_ptsz, func, gridDim, blockDim, args, sharedMem, stream);
  (void)args;
  (void)sharedMem;
  return result(Device::get().launch(gw_api, func, dims(gridDim), dims(blockDim), handle(stream),
                                     DefaultStream::kPerThread));
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  GWSIM_CUDART_ENTER();
  if (const Driver* d = driver()) return driver_launch_config(d->launch_ex, config, func, args);
  (void)args;
  return launch_config(gw_api, config, func, DefaultStream::kLegacy);
}

cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func,
                                     void** args) {
  GWSIM_CUDART_ENTER();
  if (const Driver* d = driver())
    return driver_launch_config(d->launch_ex_ptsz, config, func, args);
  (void)args;
  return launch_config(gw_api, config, func, DefaultStream::kPerThread);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  return result(
      Device::get().launch_graph(gw_api, graphExec, handle(stream), DefaultStream::kLegacy));
}

cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  GWSIM_CUDART_ENTER();
  return result(
      Device::get().launch_graph(gw_api, graphExec, handle(stream), DefaultStream::kPerThread));
}

}  // extern "C"
