// SPDX-License-Identifier: Apache-2.0
// first_call: a GPU call as the very first thing main does, linked against the simulated
// libcudart (a NEEDED entry: the dynamic linker maps the runtime before main; LD_LIBRARY_PATH can
// point it at a copy at a path no tracer has seen). Makes --calls N calls in all, cudaMalloc of
// 31337 bytes and cudaFree by turns (the first is the cudaMalloc), prints
//   {"workload":"first_call","pid":..,"calls":N,"ok":K}
// and exits with --exit CODE (0): what `gpuwhy trace -- CMD` must pass through.
//
// usage: first_call [--calls N (2)] [--exit CODE (0)]
#include <unistd.h>

#include "common/args.hpp"
#include "common/json.hpp"
#include "gwsim/cudart.h"

int main(int argc, char** argv) {
  void* first = nullptr;
  // Before anything else, argument parsing included: a tracer must already be there.
  uint64_t ok = cudaMalloc(&first, 31337) == cudaSuccess;
  const gw::Args args(argc, argv, {"calls", "exit"}, {}, "[--calls N (2)] [--exit CODE (0)]");
  const uint64_t calls = args.u64("calls", 2);
  void* ptr = first;
  for (uint64_t i = 1; i < calls; ++i) {
    if (i % 2 == 1) ok += cudaFree(ptr) == cudaSuccess;
    else ok += cudaMalloc(&ptr, 31337) == cudaSuccess;
  }
  gw::print_line(gw::Json()
                     .str("workload", "first_call")
                     .num("pid", getpid())
                     .num("calls", calls)
                     .num("ok", ok));
  return static_cast<int>(args.u64("exit", 0));
}
