// SPDX-License-Identifier: Apache-2.0
// real_cuda_driver_calls: calls every CUDA driver function of gpuwhy's catalogue exactly once,
// with distinctive arguments, through dlopen() of NVIDIA's stub libcuda.so (whose functions all
// return CUDA_ERROR_STUB_LIBRARY = 34, which is fine: uprobes fire on them all the same), and
// prints one JSON line per call (call_log.hpp). cuInit(0) comes first, as in any driver program;
// it is printed too but is not in the catalogue. --lib loads another libcuda (the simulated one).
//
// usage: real_cuda_driver_calls [--lib PATH] [--wait-file PATH]   (GW_START_DELAY_MS, def. 300)
#include "calls/call_log.hpp"
#include "common/args.hpp"
#include "common/startup.hpp"
#include "gwsim/cuda.h"

namespace {

using gw::Call;
using gw::Distinct;
using gw::Library;

void launch(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuLaunchKernel)>(name);
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
      .num("hStream", v.stream)
      .ptr("kernelParams", params)
      .ptr("extra", nullptr);
  c.done(fn(v.as<CUfunction>(v.func), v.grid.x, v.grid.y, v.grid.z, v.block.x, v.block.y, v.block.z,
            v.shared_mem, v.as<CUstream>(v.stream), params, nullptr));
}

void launch_ex(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuLaunchKernelEx)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  int param = id;
  void* params[] = {&param};
  const CUlaunchConfig config{v.grid.x,  v.grid.y,  v.grid.z,     v.block.x,
                              v.block.y, v.block.z, v.shared_mem, v.as<CUstream>(v.stream),
                              nullptr,   0};
  Call c(name);
  c.args
      .obj("config", gw::Json()
                         .num("gridDimX", config.gridDimX)
                         .num("gridDimY", config.gridDimY)
                         .num("gridDimZ", config.gridDimZ)
                         .num("blockDimX", config.blockDimX)
                         .num("blockDimY", config.blockDimY)
                         .num("blockDimZ", config.blockDimZ)
                         .num("sharedMemBytes", config.sharedMemBytes)
                         .ptr("hStream", config.hStream)
                         .ptr("attrs", config.attrs)
                         .num("numAttrs", config.numAttrs))
      .num("f", v.func)
      .ptr("kernelParams", params)
      .ptr("extra", nullptr);
  c.done(fn(&config, v.as<CUfunction>(v.func), params, nullptr));
}

// Device-to-device shaped copies (cuMemcpy, cuMemcpyDtoD_v2 and their _ptds forms).
void copy_dd(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuMemcpy)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("dst", v.dst).num("src", v.src).num("ByteCount", v.bytes);
  c.done(fn(v.dst, v.src, v.bytes));
}

void copy_dd_async(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuMemcpyAsync)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("dst", v.dst).num("src", v.src).num("ByteCount", v.bytes).num("hStream", v.stream);
  c.done(fn(v.dst, v.src, v.bytes, v.as<CUstream>(v.stream)));
}

void copy_htod(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuMemcpyHtoD_v2)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("dstDevice", v.dst).num("srcHost", v.src).num("ByteCount", v.bytes);
  c.done(fn(v.dst, v.as<const void*>(v.src), v.bytes));
}

void copy_htod_async(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuMemcpyHtoDAsync_v2)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("dstDevice", v.dst)
      .num("srcHost", v.src)
      .num("ByteCount", v.bytes)
      .num("hStream", v.stream);
  c.done(fn(v.dst, v.as<const void*>(v.src), v.bytes, v.as<CUstream>(v.stream)));
}

void copy_dtoh(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuMemcpyDtoH_v2)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("dstHost", v.dst).num("srcDevice", v.src).num("ByteCount", v.bytes);
  c.done(fn(v.as<void*>(v.dst), v.src, v.bytes));
}

void copy_dtoh_async(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuMemcpyDtoHAsync_v2)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("dstHost", v.dst)
      .num("srcDevice", v.src)
      .num("ByteCount", v.bytes)
      .num("hStream", v.stream);
  c.done(fn(v.as<void*>(v.dst), v.src, v.bytes, v.as<CUstream>(v.stream)));
}

void mem_alloc(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuMemAlloc_v2)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  CUdeviceptr p = 0;
  Call c(name);
  c.args.ptr("dptr", &p).num("bytesize", v.bytes);
  const auto r = fn(&p, v.bytes);
  c.out.num("dptr", p);
  c.done(r);
}

void mem_alloc_v1(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuMemAlloc)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  CUdeviceptr_v1 p = 0;
  const auto size = static_cast<unsigned>(v.bytes);
  Call c(name);
  c.args.ptr("dptr", &p).num("bytesize", size);
  const auto r = fn(&p, size);
  c.out.num("dptr", p);
  c.done(r);
}

void mem_free(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuMemFree_v2)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("dptr", v.dst);
  c.done(fn(v.dst));
}

void mem_free_v1(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuMemFree)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  const auto p = static_cast<CUdeviceptr_v1>(v.dst);
  Call c(name);
  c.args.num("dptr", p);
  c.done(fn(p));
}

void host_alloc(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuMemAllocHost_v2)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  void* p = nullptr;
  Call c(name);
  c.args.ptr("pp", &p).num("bytesize", v.bytes);
  const auto r = fn(&p, v.bytes);
  c.out.ptr("pp", p);
  c.done(r);
}

void host_alloc_v1(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuMemAllocHost)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  void* p = nullptr;
  const auto size = static_cast<unsigned>(v.bytes);
  Call c(name);
  c.args.ptr("pp", &p).num("bytesize", size);
  const auto r = fn(&p, size);
  c.out.ptr("pp", p);
  c.done(r);
}

void ctx_sync(const Library& lib, const char* name) {
  const auto fn = lib.get<decltype(&cuCtxSynchronize)>(name);
  if (fn == nullptr) return;
  Call c(name);
  c.done(fn());
}

void stream_sync(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuStreamSynchronize)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("hStream", v.stream);
  c.done(fn(v.as<CUstream>(v.stream)));
}

void event_sync(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuEventSynchronize)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("hEvent", v.event);
  c.done(fn(v.as<CUevent>(v.event)));
}

void event_record(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuEventRecord)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("hEvent", v.event).num("hStream", v.stream);
  c.done(fn(v.as<CUevent>(v.event), v.as<CUstream>(v.stream)));
}

void event_record_flags(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuEventRecordWithFlags)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("hEvent", v.event).num("hStream", v.stream).num("flags", v.flags);
  c.done(fn(v.as<CUevent>(v.event), v.as<CUstream>(v.stream), v.flags));
}

void graph(const Library& lib, int id, const char* name) {
  const auto fn = lib.get<decltype(&cuGraphLaunch)>(name);
  if (fn == nullptr) return;
  const Distinct v(id);
  Call c(name);
  c.args.num("hGraphExec", v.graph).num("hStream", v.stream);
  c.done(fn(v.as<CUgraphExec>(v.graph), v.as<CUstream>(v.stream)));
}

void init(const Library& lib) {
  const auto fn = lib.get<decltype(&cuInit)>("cuInit");
  if (fn == nullptr) return;
  Call c("cuInit");
  c.args.num("Flags", 0);
  c.done(fn(0));
}

}  // namespace

int main(int argc, char** argv) {
  const gw::Args args(argc, argv, {"lib", "wait-file"}, {},
                      "[--lib PATH] [--wait-file PATH]   (env GW_START_DELAY_MS, default 300)");
  const Library lib(args.str("lib", GW_REAL_CUDA_DRIVER));
  gw::wait_for_start(args, 300);
  init(lib);
  // Catalogue order; the number is the row id, which seeds the distinct values.
  launch(lib, 100, "cuLaunchKernel");
  launch(lib, 101, "cuLaunchKernel_ptsz");
  launch_ex(lib, 102, "cuLaunchKernelEx");
  launch_ex(lib, 103, "cuLaunchKernelEx_ptsz");
  copy_dd(lib, 110, "cuMemcpy");
  copy_dd_async(lib, 111, "cuMemcpyAsync");
  copy_htod(lib, 112, "cuMemcpyHtoD_v2");
  copy_dtoh(lib, 113, "cuMemcpyDtoH_v2");
  copy_dd(lib, 114, "cuMemcpyDtoD_v2");
  copy_htod_async(lib, 115, "cuMemcpyHtoDAsync_v2");
  copy_dtoh_async(lib, 116, "cuMemcpyDtoHAsync_v2");
  copy_dd_async(lib, 117, "cuMemcpyDtoDAsync_v2");
  copy_dd(lib, 118, "cuMemcpy_ptds");
  copy_dd_async(lib, 119, "cuMemcpyAsync_ptsz");
  copy_htod(lib, 120, "cuMemcpyHtoD_v2_ptds");
  copy_dtoh(lib, 121, "cuMemcpyDtoH_v2_ptds");
  copy_dd(lib, 122, "cuMemcpyDtoD_v2_ptds");
  copy_htod_async(lib, 123, "cuMemcpyHtoDAsync_v2_ptsz");
  copy_dtoh_async(lib, 124, "cuMemcpyDtoHAsync_v2_ptsz");
  copy_dd_async(lib, 125, "cuMemcpyDtoDAsync_v2_ptsz");
  mem_alloc(lib, 130, "cuMemAlloc_v2");
  mem_alloc_v1(lib, 131, "cuMemAlloc");
  mem_free(lib, 132, "cuMemFree_v2");
  mem_free_v1(lib, 133, "cuMemFree");
  host_alloc(lib, 134, "cuMemAllocHost_v2");
  host_alloc_v1(lib, 135, "cuMemAllocHost");
  ctx_sync(lib, "cuCtxSynchronize");
  stream_sync(lib, 141, "cuStreamSynchronize");
  stream_sync(lib, 142, "cuStreamSynchronize_ptsz");
  event_sync(lib, 143, "cuEventSynchronize");
  graph(lib, 144, "cuGraphLaunch");
  graph(lib, 145, "cuGraphLaunch_ptsz");
  event_sync(lib, 148, "cuEventQuery");  // the same shape as a sync
  stream_sync(lib, 149, "cuStreamQuery");
  stream_sync(lib, 150, "cuStreamQuery_ptsz");
  event_record(lib, 151, "cuEventRecord");
  event_record(lib, 152, "cuEventRecord_ptsz");
  event_record_flags(lib, 153, "cuEventRecordWithFlags");
  event_record_flags(lib, 154, "cuEventRecordWithFlags_ptsz");
  return 0;
}
