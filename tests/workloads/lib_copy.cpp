// SPDX-License-Identifier: Apache-2.0
// lib_copy: the "runtime appears at a path never seen before" case. Copies the simulated
// libcudart.so.13 into a fresh directory under /tmp (a new inode at a new path), prints
//   {"copy":"/tmp/gwsim-libcopy-XXXXXX/libcudart.so.13","pid":..}
// waits --delay-ms, dlopen()s the copy, waits --call-delay-ms (as a framework does between
// importing a runtime and its first call), makes a few distinctive calls printed as in the *_calls
// workloads (cudaMalloc size 777777, cudaMemcpy H2D of 4242 bytes, cudaFree), lingers
// --linger-ms, and removes the copy unless --keep.
//
// usage: lib_copy [--delay-ms N (1000)] [--call-delay-ms N (0)] [--linger-ms N (0)] [--lib PATH]
//                 [--keep]
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "calls/call_log.hpp"
#include "common/args.hpp"
#include "common/json.hpp"
#include "gwsim/clock.hpp"
#include "gwsim/cudart.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const gw::Args args(argc, argv, {"delay-ms", "call-delay-ms", "linger-ms", "lib"}, {"keep"},
                      "[--delay-ms N (1000)] [--call-delay-ms N (0)] [--linger-ms N (0)] "
                      "[--lib PATH] [--keep]");
  const fs::path source = args.str("lib", GW_SIM_DIR "/libcudart.so.13");
  if (!fs::exists(source)) args.fail("no library at " + source.string());

  char dir_template[] = "/tmp/gwsim-libcopy-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) {
    std::perror("lib_copy: mkdtemp");
    return 1;
  }
  const fs::path dir = dir_template;
  const fs::path copy = dir / "libcudart.so.13";
  std::error_code ec;
  fs::copy_file(source, copy, ec);
  if (ec) {
    std::fprintf(stderr, "lib_copy: cannot copy %s: %s\n", source.c_str(), ec.message().c_str());
    return 1;
  }
  gw::print_line(gw::Json().str("copy", copy.string()).num("pid", getpid()));
  gwsim::sleep_ns(args.u64("delay-ms", 1000) * 1'000'000);

  int status = 0;
  {
    const gw::Library lib(copy.string());
    const auto malloc_fn = lib.get<decltype(&cudaMalloc)>("cudaMalloc");
    const auto memcpy_fn = lib.get<decltype(&cudaMemcpy)>("cudaMemcpy");
    const auto free_fn = lib.get<decltype(&cudaFree)>("cudaFree");
    if (!malloc_fn || !memcpy_fn || !free_fn) return 1;
    gwsim::sleep_ns(args.u64("call-delay-ms", 0) * 1'000'000);

    void* dev = nullptr;
    gw::Call alloc("cudaMalloc");
    alloc.args.ptr("devPtr", &dev).num("size", 777777);
    const auto r = malloc_fn(&dev, 777777);
    alloc.out.ptr("devPtr", dev);
    status |= alloc.done(r) != cudaSuccess;

    std::vector<char> host(4242, 'x');
    gw::Call up("cudaMemcpy");
    up.args.ptr("dst", dev)
        .ptr("src", host.data())
        .num("count", host.size())
        .num("kind", static_cast<int>(cudaMemcpyHostToDevice));
    status |= up.done(memcpy_fn(dev, host.data(), host.size(), cudaMemcpyHostToDevice)) != 0;

    gw::Call release("cudaFree");
    release.args.ptr("devPtr", dev);
    status |= release.done(free_fn(dev)) != cudaSuccess;
  }
  gwsim::sleep_ns(args.u64("linger-ms", 0) * 1'000'000);
  if (!args.has("keep")) fs::remove_all(dir, ec);
  return status;
}
