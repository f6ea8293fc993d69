// SPDX-License-Identifier: Apache-2.0
#include "calls/call_log.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace gw {

Distinct::Distinct(int id) {
  const auto k = static_cast<uint64_t>(id);
  dst = 0x10000000 + k * 0x10000 + 0xa000;
  src = 0x20000000 + k * 0x10000 + 0xb000;
  stream = 0x50000000 + k * 0x100;
  event = 0x60000000 + k * 0x100;
  graph = 0x70000000 + k * 0x100;
  func = 0x40000000 + k * 0x100;
  comm = 0x30000000 + k * 0x100;
  bytes = 100000 + k * 1111;
  width = 1000 + k;
  height = 20 + k % 50;
  dpitch = 2048 + k * 16;
  spitch = 4096 + k * 16;
  kind = 1 + static_cast<int>(k % 4);
  shared_mem = 1024 + static_cast<unsigned>(k);
  flags = 1;
  grid = dim3{static_cast<unsigned>(100 + k), static_cast<unsigned>(20 + k % 7),
              static_cast<unsigned>(3 + k % 5)};
  block = dim3{static_cast<unsigned>(32 + k % 64), 2, 1};
}

Json dim3_json(const dim3& d) { return Json().num("x", d.x).num("y", d.y).num("z", d.z); }

long Call::done(long ret) {
  const uint64_t ns = gwsim::now_ns() - start_ns_;
  Json line;
  line.str("api", api_).num("tid", gettid()).obj("args", args);
  if (out.dump() != "{}") line.obj("out", out);
  line.num("ret", ret).num("ns", ns);
  print_line(line);
  return ret;
}

Library::Library(const std::string& path) {
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    std::fprintf(stderr, "cannot load %s: %s\n", path.c_str(), dlerror());
    std::exit(1);
  }
}

void* Library::find(const char* name) const {
  void* p = dlsym(handle_, name);
  if (p == nullptr) std::fprintf(stderr, "skipping %s: not exported by this library\n", name);
  return p;
}

}  // namespace gw
