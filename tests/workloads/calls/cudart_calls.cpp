// SPDX-License-Identifier: Apache-2.0
// real_cudart_calls / sim_cudart_calls: calls every CUDA runtime function of gpuwhy's catalogue
// exactly once, with distinctive arguments, and prints one JSON line per call (call_log.hpp).
// real_cudart_calls links NVIDIA's libcudart.so.13; without a GPU (or driver) every call fails
// fast with an error code, never touching the bogus pointers, while uprobes still fire.
// sim_cudart_calls is the same program linked against the simulated libcudart.so.13.
//
// usage: {real,sim}_cudart_calls [--wait-file PATH]   (GW_START_DELAY_MS, default 300)
#include "calls/call_log.hpp"
#include "common/args.hpp"
#include "common/startup.hpp"
#include "gwsim/cudart.h"

namespace {

using gw::Call;
using gw::dim3_json;
using gw::Distinct;

void launch(int id, const char* name, decltype(&cudaLaunchKernel) fn) {
  const Distinct v(id);
  int param = id;
  void* params[] = {&param};
  Call c(name);
  c.args.num("func", v.func)
      .obj("gridDim", dim3_json(v.grid))
      .obj("blockDim", dim3_json(v.block))
      .ptr("args", params)
      .num("sharedMem", v.shared_mem)
      .num("stream", v.stream);
  c.done(fn(v.as<const void*>(v.func), v.grid, v.block, params, v.shared_mem,
            v.as<cudaStream_t>(v.stream)));
}

void launch_ex(int id, const char* name, decltype(&cudaLaunchKernelExC) fn) {
  const Distinct v(id);
  int param = id;
  void* params[] = {&param};
  cudaLaunchConfig_t config{v.grid,  v.block, v.shared_mem, v.as<cudaStream_t>(v.stream),
                            nullptr, 0};
  Call c(name);
  c.args
      .obj("config", gw::Json()
                         .obj("gridDim", dim3_json(config.gridDim))
                         .obj("blockDim", dim3_json(config.blockDim))
                         .num("dynamicSmemBytes", config.dynamicSmemBytes)
                         .ptr("stream", config.stream)
                         .ptr("attrs", config.attrs)
                         .num("numAttrs", config.numAttrs))
      .num("func", v.func)
      .ptr("args", params);
  c.done(fn(&config, v.as<const void*>(v.func), params));
}

void copy(int id, const char* name, decltype(&cudaMemcpy) fn) {
  const Distinct v(id);
  Call c(name);
  c.args.num("dst", v.dst).num("src", v.src).num("count", v.bytes).num("kind", v.kind);
  c.done(fn(v.as<void*>(v.dst), v.as<const void*>(v.src), v.bytes,
            static_cast<cudaMemcpyKind>(v.kind)));
}

void copy_async(int id, const char* name, decltype(&cudaMemcpyAsync) fn) {
  const Distinct v(id);
  Call c(name);
  c.args.num("dst", v.dst)
      .num("src", v.src)
      .num("count", v.bytes)
      .num("kind", v.kind)
      .num("stream", v.stream);
  c.done(fn(v.as<void*>(v.dst), v.as<const void*>(v.src), v.bytes,
            static_cast<cudaMemcpyKind>(v.kind), v.as<cudaStream_t>(v.stream)));
}

void copy_2d(int id, const char* name, decltype(&cudaMemcpy2D) fn) {
  const Distinct v(id);
  Call c(name);
  c.args.num("dst", v.dst)
      .num("dpitch", v.dpitch)
      .num("src", v.src)
      .num("spitch", v.spitch)
      .num("width", v.width)
      .num("height", v.height)
      .num("kind", v.kind);
  c.done(fn(v.as<void*>(v.dst), v.dpitch, v.as<const void*>(v.src), v.spitch, v.width, v.height,
            static_cast<cudaMemcpyKind>(v.kind)));
}

void copy_2d_async(int id, const char* name, decltype(&cudaMemcpy2DAsync) fn) {
  const Distinct v(id);
  Call c(name);
  c.args.num("dst", v.dst)
      .num("dpitch", v.dpitch)
      .num("src", v.src)
      .num("spitch", v.spitch)
      .num("width", v.width)
      .num("height", v.height)
      .num("kind", v.kind)
      .num("stream", v.stream);
  c.done(fn(v.as<void*>(v.dst), v.dpitch, v.as<const void*>(v.src), v.spitch, v.width, v.height,
            static_cast<cudaMemcpyKind>(v.kind), v.as<cudaStream_t>(v.stream)));
}

void memset(int id, const char* name, decltype(&cudaMemset) fn) {
  const Distinct v(id);
  const int value = 0x40 + id;
  Call c(name);
  c.args.num("devPtr", v.dst).num("value", value).num("count", v.bytes);
  c.done(fn(v.as<void*>(v.dst), value, v.bytes));
}

void memset_async(int id, const char* name, decltype(&cudaMemsetAsync) fn) {
  const Distinct v(id);
  const int value = 0x40 + id;
  Call c(name);
  c.args.num("devPtr", v.dst).num("value", value).num("count", v.bytes).num("stream", v.stream);
  c.done(fn(v.as<void*>(v.dst), value, v.bytes, v.as<cudaStream_t>(v.stream)));
}

// `out_name` is the out-pointer parameter's name in NVIDIA's prototype.
void alloc(int id, const char* name, const char* out_name, decltype(&cudaMalloc) fn) {
  const Distinct v(id);
  void* p = nullptr;
  Call c(name);
  c.args.ptr(out_name, &p).num("size", v.bytes);
  const auto r = fn(&p, v.bytes);
  c.out.ptr(out_name, p);
  c.done(r);
}

void alloc_flags(int id, const char* name, const char* out_name, decltype(&cudaMallocManaged) fn) {
  const Distinct v(id);
  void* p = nullptr;
  Call c(name);
  c.args.ptr(out_name, &p).num("size", v.bytes).num("flags", v.flags);
  const auto r = fn(&p, v.bytes, v.flags);
  c.out.ptr(out_name, p);
  c.done(r);
}

void free_ptr(int id, const char* name, const char* ptr_name, decltype(&cudaFree) fn) {
  const Distinct v(id);
  Call c(name);
  c.args.num(ptr_name, v.dst);
  c.done(fn(v.as<void*>(v.dst)));
}

void alloc_async(int id, const char* name, decltype(&cudaMallocAsync) fn) {
  const Distinct v(id);
  void* p = nullptr;
  Call c(name);
  c.args.ptr("devPtr", &p).num("size", v.bytes).num("hStream", v.stream);
  const auto r = fn(&p, v.bytes, v.as<cudaStream_t>(v.stream));
  c.out.ptr("devPtr", p);
  c.done(r);
}

void alloc_from_pool(int id, const char* name, decltype(&cudaMallocFromPoolAsync) fn) {
  const Distinct v(id);
  void* p = nullptr;
  Call c(name);
  c.args.ptr("ptr", &p).num("size", v.bytes).num("memPool", v.event).num("stream", v.stream);
  const auto r = fn(&p, v.bytes, v.as<cudaMemPool_t>(v.event), v.as<cudaStream_t>(v.stream));
  c.out.ptr("ptr", p);
  c.done(r);
}

void free_async(int id, const char* name, decltype(&cudaFreeAsync) fn) {
  const Distinct v(id);
  Call c(name);
  c.args.num("devPtr", v.dst).num("hStream", v.stream);
  c.done(fn(v.as<void*>(v.dst), v.as<cudaStream_t>(v.stream)));
}

void stream_sync(int id, const char* name, decltype(&cudaStreamSynchronize) fn) {
  const Distinct v(id);
  Call c(name);
  c.args.num("stream", v.stream);
  c.done(fn(v.as<cudaStream_t>(v.stream)));
}

void event_sync(int id, const char* name, decltype(&cudaEventSynchronize) fn) {
  const Distinct v(id);
  Call c(name);
  c.args.num("event", v.event);
  c.done(fn(v.as<cudaEvent_t>(v.event)));
}

void device_sync(const char* name, decltype(&cudaDeviceSynchronize) fn) {
  Call c(name);
  c.done(fn());
}

void stream_wait(int id, const char* name, decltype(&cudaStreamWaitEvent) fn) {
  const Distinct v(id);
  const unsigned flags = 0;
  Call c(name);
  c.args.num("stream", v.stream).num("event", v.event).num("flags", flags);
  c.done(fn(v.as<cudaStream_t>(v.stream), v.as<cudaEvent_t>(v.event), flags));
}

void graph(int id, const char* name, decltype(&cudaGraphLaunch) fn) {
  const Distinct v(id);
  Call c(name);
  c.args.num("graphExec", v.graph).num("stream", v.stream);
  c.done(fn(v.as<cudaGraphExec_t>(v.graph), v.as<cudaStream_t>(v.stream)));
}

void event_record(int id, const char* name, decltype(&cudaEventRecord) fn) {
  const Distinct v(id);
  Call c(name);
  c.args.num("event", v.event).num("stream", v.stream);
  c.done(fn(v.as<cudaEvent_t>(v.event), v.as<cudaStream_t>(v.stream)));
}

void event_record_flags(int id, const char* name, decltype(&cudaEventRecordWithFlags) fn) {
  const Distinct v(id);
  Call c(name);
  c.args.num("event", v.event).num("stream", v.stream).num("flags", v.flags);
  c.done(fn(v.as<cudaEvent_t>(v.event), v.as<cudaStream_t>(v.stream), v.flags));
}

// Device 3: a GPU this host does not have (the call fails), an ordinal no default could fake.
void set_device(const char* name, decltype(&cudaSetDevice) fn) {
  Call c(name);
  c.args.num("device", 3);
  c.done(fn(3));
}

}  // namespace

int main(int argc, char** argv) {
  const gw::Args args(argc, argv, {"wait-file"}, {},
                      "[--wait-file PATH]   (env GW_START_DELAY_MS, default 300)");
  gw::wait_for_start(args, 300);
  // Catalogue order; the first argument is the row id, which seeds the distinct values.
  launch(1, "cudaLaunchKernel", &cudaLaunchKernel);
  launch(2, "cudaLaunchKernel_ptsz", &cudaLaunchKernel_ptsz);
  launch_ex(3, "cudaLaunchKernelExC", &cudaLaunchKernelExC);
  launch_ex(4, "cudaLaunchKernelExC_ptsz", &cudaLaunchKernelExC_ptsz);
  copy(5, "cudaMemcpy", &cudaMemcpy);
  copy(6, "cudaMemcpy_ptds", &cudaMemcpy_ptds);
  copy_async(7, "cudaMemcpyAsync", &cudaMemcpyAsync);
  copy_async(8, "cudaMemcpyAsync_ptsz", &cudaMemcpyAsync_ptsz);
  copy_2d(9, "cudaMemcpy2D", &cudaMemcpy2D);
  copy_2d(10, "cudaMemcpy2D_ptds", &cudaMemcpy2D_ptds);
  copy_2d_async(11, "cudaMemcpy2DAsync", &cudaMemcpy2DAsync);
  copy_2d_async(12, "cudaMemcpy2DAsync_ptsz", &cudaMemcpy2DAsync_ptsz);
  memset(13, "cudaMemset", &cudaMemset);
  memset(14, "cudaMemset_ptds", &cudaMemset_ptds);
  memset_async(15, "cudaMemsetAsync", &cudaMemsetAsync);
  memset_async(16, "cudaMemsetAsync_ptsz", &cudaMemsetAsync_ptsz);
  alloc(17, "cudaMalloc", "devPtr", &cudaMalloc);
  alloc(18, "cudaMallocHost", "ptr", &cudaMallocHost);
  alloc_flags(19, "cudaMallocManaged", "devPtr", &cudaMallocManaged);
  free_ptr(20, "cudaFree", "devPtr", &cudaFree);
  free_ptr(21, "cudaFreeHost", "ptr", &cudaFreeHost);
  stream_sync(22, "cudaStreamSynchronize", &cudaStreamSynchronize);
  stream_sync(23, "cudaStreamSynchronize_ptsz", &cudaStreamSynchronize_ptsz);
  device_sync("cudaDeviceSynchronize", &cudaDeviceSynchronize);
  event_sync(25, "cudaEventSynchronize", &cudaEventSynchronize);
  stream_wait(26, "cudaStreamWaitEvent", &cudaStreamWaitEvent);
  stream_wait(27, "cudaStreamWaitEvent_ptsz", &cudaStreamWaitEvent_ptsz);
  graph(28, "cudaGraphLaunch", &cudaGraphLaunch);
  graph(29, "cudaGraphLaunch_ptsz", &cudaGraphLaunch_ptsz);
  alloc_flags(30, "cudaHostAlloc", "pHost", &cudaHostAlloc);
  set_device("cudaSetDevice", &cudaSetDevice);
  alloc_async(32, "cudaMallocAsync", &cudaMallocAsync);
  free_async(33, "cudaFreeAsync", &cudaFreeAsync);
  alloc_from_pool(34, "cudaMallocFromPoolAsync", &cudaMallocFromPoolAsync);
  event_sync(35, "cudaEventQuery", &cudaEventQuery);  // the same shape as a sync
  stream_sync(36, "cudaStreamQuery", &cudaStreamQuery);
  stream_sync(37, "cudaStreamQuery_ptsz", &cudaStreamQuery_ptsz);
  event_record(38, "cudaEventRecord", &cudaEventRecord);
  event_record(39, "cudaEventRecord_ptsz", &cudaEventRecord_ptsz);
  event_record_flags(40, "cudaEventRecordWithFlags", &cudaEventRecordWithFlags);
  event_record_flags(41, "cudaEventRecordWithFlags_ptsz", &cudaEventRecordWithFlags_ptsz);
  return 0;
}
