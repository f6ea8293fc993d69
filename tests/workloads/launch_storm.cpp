// SPDX-License-Identifier: Apache-2.0
// launch_storm: as many zero-duration kernel launches as possible against the simulated
// libcudart, to overflow a deliberately small tracer ring buffer and to benchmark probe
// overhead. Launch host cost defaults to 0 here (--launch-ns), kernels to 0 ns (--kernel-ns).
// Prints one JSON summary line: {"workload":"launch_storm","pid":..,"tid":..,"api":..,
// "calls":N,"ok":N,"elapsed_ns":..,"calls_per_s":..}.
//
// usage: launch_storm [--calls N] [--api cudaLaunchKernel|cudaLaunchKernel_ptsz]
//                     [--launch-ns N] [--kernel-ns N] [--wait-file PATH] [--hold-file PATH]
//                     [--driver-calls N]
// --driver-calls: after the runtime's launches, N more straight through the simulated libcuda's
// cuLaunchKernel (dlopen, cuInit), as Triton or JAX launch: driver launches in no runtime launch.
// (With GWSIM_CUDART_VIA_DRIVER=1 the runtime's launches go through libcuda too, nested.)
// --hold-file: after the launches, create PATH.launched and keep the CPU (no GPU call, no sleep)
// until PATH exists, then synchronize: the last launches are still in the thread's batch unless
// something takes the CPU from it.
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include <string>

#include "common/args.hpp"
#include "common/json.hpp"
#include "common/startup.hpp"
#include "gwsim/clock.hpp"
#include "gwsim/cuda.h"
#include "gwsim/cudart.h"
#include "gwsim/gwsim.h"

namespace {

// The kernel: its address is what cudaLaunchKernel receives, as for a real kernel's host stub.
extern "C" __attribute__((noinline)) void storm_kernel() { asm volatile(""); }

}  // namespace

int main(int argc, char** argv) {
  const gw::Args args(
      argc, argv,
      {"calls", "api", "launch-ns", "kernel-ns", "wait-file", "hold-file", "driver-calls"}, {},
      "[--calls N (100000)] [--api cudaLaunchKernel|cudaLaunchKernel_ptsz] "
      "[--launch-ns N (0)] [--kernel-ns N (0)] [--wait-file PATH] "
      "[--hold-file PATH] [--driver-calls N (0)]");
  const uint64_t driver_calls = args.u64("driver-calls", 0);
  const uint64_t calls = args.u64("calls", 100000);
  const std::string api = args.str("api", "cudaLaunchKernel");
  auto launch = &cudaLaunchKernel;
  if (api == "cudaLaunchKernel_ptsz") {
    launch = &cudaLaunchKernel_ptsz;
  } else if (api != "cudaLaunchKernel") {
    args.fail("--api must be cudaLaunchKernel or cudaLaunchKernel_ptsz");
  }
  gwsim_set_launch_ns(args.u64("launch-ns", 0));
  gwsim_set_kernel_ns(reinterpret_cast<const void*>(&storm_kernel), args.u64("kernel-ns", 0));
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) {
    std::fputs("launch_storm: cudaStreamCreate failed\n", stderr);
    return 1;
  }
  gw::wait_for_start(args, 0);

  const dim3 grid{64, 1, 1}, block{256, 1, 1};
  void* params[] = {nullptr};
  uint64_t ok = 0;
  const uint64_t t0 = gwsim::now_ns();
  for (uint64_t i = 0; i < calls; ++i) {
    ok += launch(reinterpret_cast<const void*>(&storm_kernel), grid, block, params, 0, stream) ==
          cudaSuccess;
  }
  const uint64_t elapsed = gwsim::now_ns() - t0;
  uint64_t driver_ok = 0;
  if (driver_calls) {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW);
    auto init = cuda ? reinterpret_cast<decltype(&cuInit)>(dlsym(cuda, "cuInit")) : nullptr;
    auto drv =
        cuda ? reinterpret_cast<decltype(&cuLaunchKernel)>(dlsym(cuda, "cuLaunchKernel")) : nullptr;
    if (!init || !drv || init(0) != CUDA_SUCCESS) {
      std::fprintf(stderr, "launch_storm: no simulated libcuda.so.1 (%s)\n",
                   cuda ? "cuInit or cuLaunchKernel missing or failing" : dlerror());
      return 1;
    }
    const auto kernel = reinterpret_cast<CUfunction>(&storm_kernel);
    for (uint64_t i = 0; i < driver_calls; ++i)
      driver_ok += drv(kernel, 64, 1, 1, 256, 1, 1, 0, reinterpret_cast<CUstream>(stream), params,
                       nullptr) == CUDA_SUCCESS;
  }
  if (const std::string hold = args.str("hold-file", ""); !hold.empty()) {
    std::ofstream(hold + ".launched") << "\n";
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (access(hold.c_str(), F_OK) != 0 && std::chrono::steady_clock::now() < until) {
    }
  }
  cudaStreamSynchronize(stream);

  gw::print_line(gw::Json()
                     .str("workload", "launch_storm")
                     .num("pid", getpid())
                     .num("tid", gettid())
                     .str("api", api)
                     .num("calls", calls)
                     .num("ok", ok)
                     .num("driver_calls", driver_calls)
                     .num("driver_ok", driver_ok)
                     .num("elapsed_ns", elapsed)
                     .real("calls_per_s", elapsed ? calls * 1e9 / elapsed : 0));
  return ok == calls && driver_ok == driver_calls ? 0 : 1;
}
