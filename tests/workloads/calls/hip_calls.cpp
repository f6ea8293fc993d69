// SPDX-License-Identifier: Apache-2.0
// real_hip_calls: calls every HIP function of gpuwhy's catalogue exactly once, with distinctive
// arguments, through dlopen() of Debian's AMD HIP runtime (libamdhip64.so.5), and prints one JSON
// line per call (call_log.hpp). Without an AMD GPU every call returns hipErrorNoDevice (100) or
// hipErrorInvalidDevice (101) within microseconds and no pointer is dereferenced; none of the
// catalogue's functions hangs or crashes, so none is left out. --lib loads another libamdhip64.
//
// usage: real_hip_calls [--lib PATH] [--wait-file PATH]   (GW_START_DELAY_MS, default 300)
#include "calls/call_log.hpp"
#include "common/args.hpp"
#include "common/startup.hpp"
#include "gwsim/hip.h"

namespace {

using gw::Call;
using gw::dim3_json;
using gw::Distinct;
using gw::Library;

void launch(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipLaunchKernel)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  int param = id;
  void* params[] = {&param};
  Call c(name);
  c.args.num("function_address", v.func)
      .obj("numBlocks", dim3_json(v.grid))
      .obj("dimBlocks", dim3_json(v.block))
      .ptr("args", params)
      .num("sharedMemBytes", v.shared_mem)
      .num("stream", v.stream);
  c.done(fn(v.as<const void*>(v.func), v.grid, v.block, params, v.shared_mem,
            v.as<hipStream_t>(v.stream)));
}

void module_launch(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipModuleLaunchKernel)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  int param = id;
  void* params[] = {&param};
  Call c(name);
  c.args.num("f", v.func)
      .num("gridDimX", v.grid.x)
      .num("gridDimY", v.grid.y)
      .num("gridDimZ", v.grid.z)
      .num("blockDimX", v.block.x)
      .num("blockDimY", v.block.y)
      .num("blockDimZ", v.block.z)
      .num("sharedMemBytes", v.shared_mem)
      .num("stream", v.stream)
      .ptr("kernelParams", params)
      .ptr("extra", nullptr);
  c.done(fn(v.as<hipFunction_t>(v.func), v.grid.x, v.grid.y, v.grid.z, v.block.x, v.block.y,
            v.block.z, v.shared_mem, v.as<hipStream_t>(v.stream), params, nullptr));
}

void copy(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipMemcpy)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("dst", v.dst).num("src", v.src).num("sizeBytes", v.bytes).num("kind", v.kind);
  c.done(fn(v.as<void*>(v.dst), v.as<const void*>(v.src), v.bytes,
            static_cast<hipMemcpyKind>(v.kind)));
}

void copy_async(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipMemcpyAsync)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("dst", v.dst)
      .num("src", v.src)
      .num("sizeBytes", v.bytes)
      .num("kind", v.kind)
      .num("stream", v.stream);
  c.done(fn(v.as<void*>(v.dst), v.as<const void*>(v.src), v.bytes,
            static_cast<hipMemcpyKind>(v.kind), v.as<hipStream_t>(v.stream)));
}

void memset(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipMemset)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  const int value = 0x40 + id % 64;
  Call c(name);
  c.args.num("dst", v.dst).num("value", value).num("sizeBytes", v.bytes);
  c.done(fn(v.as<void*>(v.dst), value, v.bytes));
}

void memset_async(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipMemsetAsync)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  const int value = 0x40 + id % 64;
  Call c(name);
  c.args.num("dst", v.dst).num("value", value).num("sizeBytes", v.bytes).num("stream", v.stream);
  c.done(fn(v.as<void*>(v.dst), value, v.bytes, v.as<hipStream_t>(v.stream)));
}

void alloc(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipMalloc)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  void* p = nullptr;
  Call c(name);
  c.args.ptr("ptr", &p).num("size", v.bytes);
  const auto r = fn(&p, v.bytes);
  c.out.ptr("ptr", p);
  c.done(r);
}

void alloc_flags(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipHostMalloc)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  void* p = nullptr;
  Call c(name);
  c.args.ptr("ptr", &p).num("size", v.bytes).num("flags", v.flags);
  const auto r = fn(&p, v.bytes, v.flags);
  c.out.ptr("ptr", p);
  c.done(r);
}

void free_ptr(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipFree)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("ptr", v.dst);
  c.done(fn(v.as<void*>(v.dst)));
}

void alloc_async(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipMallocAsync)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  void* p = nullptr;
  Call c(name);
  c.args.ptr("ptr", &p).num("size", v.bytes).num("stream", v.stream);
  const auto r = fn(&p, v.bytes, v.as<hipStream_t>(v.stream));
  c.out.ptr("ptr", p);
  c.done(r);
}

void free_async(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipFreeAsync)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("ptr", v.dst).num("stream", v.stream);
  c.done(fn(v.as<void*>(v.dst), v.as<hipStream_t>(v.stream)));
}

void device_sync(const Library& lib, const char* name) {
  const auto fn = lib.get<decltype(&hipDeviceSynchronize)>(name);
  if (fn == nullptr) return;
  Call c(name);
  c.done(fn());
}

void stream_sync(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipStreamSynchronize)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("stream", v.stream);
  c.done(fn(v.as<hipStream_t>(v.stream)));
}

void event_sync(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipEventSynchronize)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("event", v.event);
  c.done(fn(v.as<hipEvent_t>(v.event)));
}

void event_record(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipEventRecord)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("event", v.event).num("stream", v.stream);
  c.done(fn(v.as<hipEvent_t>(v.event), v.as<hipStream_t>(v.stream)));
}

void stream_wait(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipStreamWaitEvent)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  const unsigned flags = 0;
  Call c(name);
  c.args.num("stream", v.stream).num("event", v.event).num("flags", flags);
  c.done(fn(v.as<hipStream_t>(v.stream), v.as<hipEvent_t>(v.event), flags));
}

void graph(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipGraphLaunch)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("graphExec", v.graph).num("stream", v.stream);
  c.done(fn(v.as<hipGraphExec_t>(v.graph), v.as<hipStream_t>(v.stream)));
}

void copy_htod(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipMemcpyHtoD)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("dst", v.dst).num("src", v.src).num("sizeBytes", v.bytes);
  c.done(fn(v.as<hipDeviceptr_t>(v.dst), v.as<void*>(v.src), v.bytes));
}

void copy_dtoh(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipMemcpyDtoH)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("dst", v.dst).num("src", v.src).num("sizeBytes", v.bytes);
  c.done(fn(v.as<void*>(v.dst), v.as<hipDeviceptr_t>(v.src), v.bytes));
}

void copy_dtod(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&hipMemcpyDtoD)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("dst", v.dst).num("src", v.src).num("sizeBytes", v.bytes);
  c.done(fn(v.as<hipDeviceptr_t>(v.dst), v.as<hipDeviceptr_t>(v.src), v.bytes));
}

// Device 3: a GPU this host does not have (the call fails), an ordinal no default could fake.
void set_device(const Library& lib, const char* name) {
  const auto fn = lib.get<decltype(&hipSetDevice)>(name);
  if (fn == nullptr) return;
  Call c(name);
  c.args.num("deviceId", 3);
  c.done(fn(3));
}

}  // namespace

int main(int argc, char** argv) {
  const gw::Args args(argc, argv, {"lib", "wait-file"}, {},
                      "[--lib PATH] [--wait-file PATH]   (env GW_START_DELAY_MS, default 300)");
  const Library lib(args.str("lib", GW_REAL_HIP));
  gw::wait_for_start(args, 300);
  // Catalogue order; the number is the row id, which seeds the distinct values.
  launch(lib, 300, "hipLaunchKernel");
  module_launch(lib, 301, "hipModuleLaunchKernel");
  copy(lib, 302, "hipMemcpy");
  copy_async(lib, 303, "hipMemcpyAsync");
  memset(lib, 304, "hipMemset");
  memset_async(lib, 305, "hipMemsetAsync");
  alloc(lib, 306, "hipMalloc");
  alloc_flags(lib, 307, "hipHostMalloc");
  alloc_flags(lib, 308, "hipMallocManaged");
  free_ptr(lib, 309, "hipFree");
  free_ptr(lib, 310, "hipHostFree");
  device_sync(lib, "hipDeviceSynchronize");
  stream_sync(lib, 312, "hipStreamSynchronize");
  event_sync(lib, 313, "hipEventSynchronize");
  stream_wait(lib, 314, "hipStreamWaitEvent");
  graph(lib, 315, "hipGraphLaunch");
  copy_htod(lib, 316, "hipMemcpyHtoD");
  copy_dtoh(lib, 317, "hipMemcpyDtoH");
  copy_dtod(lib, 318, "hipMemcpyDtoD");
  set_device(lib, "hipSetDevice");
  alloc_async(lib, 320, "hipMallocAsync");
  free_async(lib, 321, "hipFreeAsync");
  event_sync(lib, 322, "hipEventQuery");  // the same shape as a sync
  stream_sync(lib, 323, "hipStreamQuery");
  event_record(lib, 324, "hipEventRecord");
  return 0;
}
