// SPDX-License-Identifier: Apache-2.0
#include "catalog/api_catalog.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace gpuwhy {
namespace {

using F = Field;
using C = Category;
using Fam = Family;

// Argument sources, SysV x86-64: integer arguments in rdi rsi rdx rcx r8 r9 (0..5), then the
// stack; a struct of <= 16 bytes such as dim3 takes one or two registers; a larger struct passed
// by value (ncclUniqueId, 128 bytes) goes to memory and takes no register.
constexpr ArgSource R(uint8_t i) { return {GW_ARG_REG, i, 0}; }
constexpr ArgSource S(uint8_t n) { return {GW_ARG_STACK, n, 0}; }
constexpr ArgSource D(uint8_t reg, uint16_t off) { return {GW_ARG_DEREF, reg, off}; }

// Argument layouts shared by several functions.
#define RT_LAUNCH                                                                                  \
  {                                                                                                \
    {F::Func, R(0)}, {F::GridXY, R(1)}, {F::GridZ, R(2)}, {F::BlockXY, R(3)}, {F::BlockZ, R(4)}, { \
      F::Stream, S(2)                                                                              \
    }                                                                                              \
  }
// cudaLaunchConfig_t, CUlaunchConfig and their layout: grid x,y,z, block x,y,z (u32 each),
// shared memory bytes, then the stream at offset 32.
#define CFG_LAUNCH(cfg, fn)                                                \
  {                                                                        \
    {F::Func, R(fn)}, {F::GridXY, D(cfg, 0)}, {F::GridZBlockX, D(cfg, 8)}, \
        {F::BlockYZ, D(cfg, 16)}, {                                        \
      F::Stream, D(cfg, 32)                                                \
    }                                                                      \
  }
#define DRV_LAUNCH                                                                            \
  {                                                                                           \
    {F::Func, R(0)}, {F::GridX, R(1)}, {F::GridY, R(2)}, {F::GridZ, R(3)}, {F::BlockX, R(4)}, \
        {F::BlockY, R(5)}, {F::BlockZ, S(1)}, {                                               \
      F::Stream, S(3)                                                                         \
    }                                                                                         \
  }
#define RT_COPY                                                             \
  {                                                                         \
    {F::Dst, R(0)}, {F::Src, R(1)}, {F::Bytes, R(2)}, { F::CopyKind, R(3) } \
  }
#define RT_COPY_ASYNC                                                                          \
  {                                                                                            \
    {F::Dst, R(0)}, {F::Src, R(1)}, {F::Bytes, R(2)}, {F::CopyKind, R(3)}, { F::Stream, R(4) } \
  }
#define RT_COPY_2D                                                                             \
  {                                                                                            \
    {F::Dst, R(0)}, {F::Src, R(2)}, {F::Width, R(4)}, {F::Height, R(5)}, { F::CopyKind, S(1) } \
  }
#define RT_COPY_2D_ASYNC                                                                        \
  {                                                                                             \
    {F::Dst, R(0)}, {F::Src, R(2)}, {F::Width, R(4)}, {F::Height, R(5)}, {F::CopyKind, S(1)}, { \
      F::Stream, S(2)                                                                           \
    }                                                                                           \
  }
#define DRV_COPY                                       \
  {                                                    \
    {F::Dst, R(0)}, {F::Src, R(1)}, { F::Bytes, R(2) } \
  }
#define DRV_COPY_ASYNC                                                    \
  {                                                                       \
    {F::Dst, R(0)}, {F::Src, R(1)}, {F::Bytes, R(2)}, { F::Stream, R(3) } \
  }
#define MEMSET                                           \
  {                                                      \
    {F::Dst, R(0)}, {F::Value, R(1)}, { F::Bytes, R(2) } \
  }
#define MEMSET_ASYNC                                                        \
  {                                                                         \
    {F::Dst, R(0)}, {F::Value, R(1)}, {F::Bytes, R(2)}, { F::Stream, R(3) } \
  }
#define ALLOC          \
  {                    \
    { F::Bytes, R(1) } \
  }
#define ALLOC_FLAGS                      \
  {                                      \
    {F::Bytes, R(1)}, { F::Flags, R(2) } \
  }
#define FREE         \
  {                  \
    { F::Ptr, R(0) } \
  }
// Stream-ordered (async pools): the memory is the stream's from the call's place in it; a free
// does not wait for the device as cudaFree does.
#define ALLOC_ASYNC                       \
  {                                       \
    {F::Bytes, R(1)}, { F::Stream, R(2) } \
  }
#define FREE_ASYNC                      \
  {                                     \
    {F::Ptr, R(0)}, { F::Stream, R(1) } \
  }
#define ON_STREAM       \
  {                     \
    { F::Stream, R(0) } \
  }
#define NONE \
  {}
#define ON_EVENT       \
  {                    \
    { F::Event, R(0) } \
  }
#define WAIT_EVENT                        \
  {                                       \
    {F::Stream, R(0)}, { F::Event, R(1) } \
  }
#define RECORD_EVENT                      \
  {                                       \
    {F::Event, R(0)}, { F::Stream, R(1) } \
  }
#define COMM          \
  {                   \
    { F::Comm, R(0) } \
  }
#define GRAPH                                 \
  {                                           \
    {F::GraphExec, R(0)}, { F::Stream, R(1) } \
  }
#define NCCL_REDUCE_ALL                                                                   \
  {                                                                                       \
    {F::Src, R(0)}, {F::Dst, R(1)}, {F::Count, R(2)}, {F::Dtype, R(3)}, {F::RedOp, R(4)}, \
        {F::Comm, R(5)}, {                                                                \
      F::Stream, S(1)                                                                     \
    }                                                                                     \
  }
#define NCCL_BCAST                                                                       \
  {                                                                                      \
    {F::Src, R(0)}, {F::Dst, R(1)}, {F::Count, R(2)}, {F::Dtype, R(3)}, {F::Root, R(4)}, \
        {F::Comm, R(5)}, {                                                               \
      F::Stream, S(1)                                                                    \
    }                                                                                    \
  }
#define NCCL_GATHER                                                                        \
  {                                                                                        \
    {F::Src, R(0)}, {F::Dst, R(1)}, {F::Count, R(2)}, {F::Dtype, R(3)}, {F::Comm, R(4)}, { \
      F::Stream, R(5)                                                                      \
    }                                                                                      \
  }
#define NCCL_REDUCE                                                                       \
  {                                                                                       \
    {F::Src, R(0)}, {F::Dst, R(1)}, {F::Count, R(2)}, {F::Dtype, R(3)}, {F::RedOp, R(4)}, \
        {F::Root, R(5)}, {F::Comm, S(1)}, {                                               \
      F::Stream, S(2)                                                                     \
    }                                                                                     \
  }
#define NCCL_P2P                                                                            \
  {                                                                                         \
    {F::Dst, R(0)}, {F::Count, R(1)}, {F::Dtype, R(2)}, {F::Peer, R(3)}, {F::Comm, R(4)}, { \
      F::Stream, R(5)                                                                       \
    }                                                                                       \
  }
#define NCCL_INIT                        \
  {                                      \
    {F::NRanks, R(1)}, { F::Rank, R(2) } \
  }
#define SET_DEVICE             \
  {                            \
    { F::DeviceOrdinal, R(0) } \
  }

constexpr CopyDir kH2D = CopyDir::HostToDevice;
constexpr CopyDir kD2H = CopyDir::DeviceToHost;
constexpr CopyDir kD2D = CopyDir::DeviceToDevice;

// Ids are stored in trace files: append new rows with new ids, never renumber.
const ApiInfo kCatalog[] = {
    // CUDA runtime (libcudart)
    {1, "cudaLaunchKernel", Fam::Cudart, C::Launch, RT_LAUNCH},
    {2, "cudaLaunchKernel_ptsz", Fam::Cudart, C::Launch, RT_LAUNCH},
    {3, "cudaLaunchKernelExC", Fam::Cudart, C::Launch, CFG_LAUNCH(0, 1)},
    {4, "cudaLaunchKernelExC_ptsz", Fam::Cudart, C::Launch, CFG_LAUNCH(0, 1)},
    {5, "cudaMemcpy", Fam::Cudart, C::Copy, RT_COPY},
    {6, "cudaMemcpy_ptds", Fam::Cudart, C::Copy, RT_COPY},
    {7, "cudaMemcpyAsync", Fam::Cudart, C::Copy, RT_COPY_ASYNC},
    {8, "cudaMemcpyAsync_ptsz", Fam::Cudart, C::Copy, RT_COPY_ASYNC},
    {9, "cudaMemcpy2D", Fam::Cudart, C::Copy, RT_COPY_2D},
    {10, "cudaMemcpy2D_ptds", Fam::Cudart, C::Copy, RT_COPY_2D},
    {11, "cudaMemcpy2DAsync", Fam::Cudart, C::Copy, RT_COPY_2D_ASYNC},
    {12, "cudaMemcpy2DAsync_ptsz", Fam::Cudart, C::Copy, RT_COPY_2D_ASYNC},
    {13, "cudaMemset", Fam::Cudart, C::Memset, MEMSET},
    {14, "cudaMemset_ptds", Fam::Cudart, C::Memset, MEMSET},
    {15, "cudaMemsetAsync", Fam::Cudart, C::Memset, MEMSET_ASYNC},
    {16, "cudaMemsetAsync_ptsz", Fam::Cudart, C::Memset, MEMSET_ASYNC},
    {17, "cudaMalloc", Fam::Cudart, C::Alloc, ALLOC, 0},
    {18, "cudaMallocHost", Fam::Cudart, C::Alloc, ALLOC, 0},
    {19, "cudaMallocManaged", Fam::Cudart, C::Alloc, ALLOC_FLAGS, 0},
    {20, "cudaFree", Fam::Cudart, C::Free, FREE},
    {21, "cudaFreeHost", Fam::Cudart, C::Free, FREE},
    {22, "cudaStreamSynchronize", Fam::Cudart, C::Sync, ON_STREAM},
    {23, "cudaStreamSynchronize_ptsz", Fam::Cudart, C::Sync, ON_STREAM},
    {24, "cudaDeviceSynchronize", Fam::Cudart, C::Sync, NONE},
    {25, "cudaEventSynchronize", Fam::Cudart, C::Sync, ON_EVENT},
    {26, "cudaStreamWaitEvent", Fam::Cudart, C::StreamWait, WAIT_EVENT},
    {27, "cudaStreamWaitEvent_ptsz", Fam::Cudart, C::StreamWait, WAIT_EVENT},
    {28, "cudaGraphLaunch", Fam::Cudart, C::Graph, GRAPH},
    {29, "cudaGraphLaunch_ptsz", Fam::Cudart, C::Graph, GRAPH},
    {30, "cudaHostAlloc", Fam::Cudart, C::Alloc, ALLOC_FLAGS, 0},
    // The thread's current device from here on (per thread; device 0 until a thread sets one).
    {31, "cudaSetDevice", Fam::Cudart, C::Device, SET_DEVICE},
    // Memory pools (CUDA 11.2+): PyTorch's and JAX's async allocators reserve through these.
    {32, "cudaMallocAsync", Fam::Cudart, C::Alloc, ALLOC_ASYNC, 0},
    {33, "cudaFreeAsync", Fam::Cudart, C::Free, FREE_ASYNC},
    {34,
     "cudaMallocFromPoolAsync",
     Fam::Cudart,
     C::Alloc,
     {{F::Bytes, R(1)}, {F::Stream, R(3)}},
     0},
    // Polling: cudaErrorNotReady (600) until the event / the stream's work completes. PyTorch's
    // caching allocator and NCCL watchdog, inference engines' schedulers call these in loops.
    {35, "cudaEventQuery", Fam::Cudart, C::Poll, ON_EVENT},
    {36, "cudaStreamQuery", Fam::Cudart, C::Poll, ON_STREAM},
    {37, "cudaStreamQuery_ptsz", Fam::Cudart, C::Poll, ON_STREAM},
    {38, "cudaEventRecord", Fam::Cudart, C::EventRecord, RECORD_EVENT},
    {39, "cudaEventRecord_ptsz", Fam::Cudart, C::EventRecord, RECORD_EVENT},
    {40, "cudaEventRecordWithFlags", Fam::Cudart, C::EventRecord, RECORD_EVENT},
    {41, "cudaEventRecordWithFlags_ptsz", Fam::Cudart, C::EventRecord, RECORD_EVENT},

    // CUDA driver (libcuda)
    {100, "cuLaunchKernel", Fam::CudaDriver, C::Launch, DRV_LAUNCH},
    {101, "cuLaunchKernel_ptsz", Fam::CudaDriver, C::Launch, DRV_LAUNCH},
    {102, "cuLaunchKernelEx", Fam::CudaDriver, C::Launch, CFG_LAUNCH(0, 1)},
    {103, "cuLaunchKernelEx_ptsz", Fam::CudaDriver, C::Launch, CFG_LAUNCH(0, 1)},
    {110, "cuMemcpy", Fam::CudaDriver, C::Copy, DRV_COPY, -1, CopyDir::Default},
    {111, "cuMemcpyAsync", Fam::CudaDriver, C::Copy, DRV_COPY_ASYNC, -1, CopyDir::Default},
    {112, "cuMemcpyHtoD_v2", Fam::CudaDriver, C::Copy, DRV_COPY, -1, kH2D},
    {113, "cuMemcpyDtoH_v2", Fam::CudaDriver, C::Copy, DRV_COPY, -1, kD2H},
    {114, "cuMemcpyDtoD_v2", Fam::CudaDriver, C::Copy, DRV_COPY, -1, kD2D},
    {115, "cuMemcpyHtoDAsync_v2", Fam::CudaDriver, C::Copy, DRV_COPY_ASYNC, -1, kH2D},
    {116, "cuMemcpyDtoHAsync_v2", Fam::CudaDriver, C::Copy, DRV_COPY_ASYNC, -1, kD2H},
    {117, "cuMemcpyDtoDAsync_v2", Fam::CudaDriver, C::Copy, DRV_COPY_ASYNC, -1, kD2D},
    {118, "cuMemcpy_ptds", Fam::CudaDriver, C::Copy, DRV_COPY, -1, CopyDir::Default},
    {119, "cuMemcpyAsync_ptsz", Fam::CudaDriver, C::Copy, DRV_COPY_ASYNC, -1, CopyDir::Default},
    {120, "cuMemcpyHtoD_v2_ptds", Fam::CudaDriver, C::Copy, DRV_COPY, -1, kH2D},
    {121, "cuMemcpyDtoH_v2_ptds", Fam::CudaDriver, C::Copy, DRV_COPY, -1, kD2H},
    {122, "cuMemcpyDtoD_v2_ptds", Fam::CudaDriver, C::Copy, DRV_COPY, -1, kD2D},
    {123, "cuMemcpyHtoDAsync_v2_ptsz", Fam::CudaDriver, C::Copy, DRV_COPY_ASYNC, -1, kH2D},
    {124, "cuMemcpyDtoHAsync_v2_ptsz", Fam::CudaDriver, C::Copy, DRV_COPY_ASYNC, -1, kD2H},
    {125, "cuMemcpyDtoDAsync_v2_ptsz", Fam::CudaDriver, C::Copy, DRV_COPY_ASYNC, -1, kD2D},
    {130, "cuMemAlloc_v2", Fam::CudaDriver, C::Alloc, ALLOC, 0},
    {131, "cuMemAlloc", Fam::CudaDriver, C::Alloc, ALLOC, 0, {}, 3},
    {132, "cuMemFree_v2", Fam::CudaDriver, C::Free, FREE},
    {133, "cuMemFree", Fam::CudaDriver, C::Free, FREE},
    {134, "cuMemAllocHost_v2", Fam::CudaDriver, C::Alloc, ALLOC, 0},
    {135, "cuMemAllocHost", Fam::CudaDriver, C::Alloc, ALLOC, 0, {}, 1},
    {140, "cuCtxSynchronize", Fam::CudaDriver, C::Sync, NONE},
    {141, "cuStreamSynchronize", Fam::CudaDriver, C::Sync, ON_STREAM},
    {142, "cuStreamSynchronize_ptsz", Fam::CudaDriver, C::Sync, ON_STREAM},
    {143, "cuEventSynchronize", Fam::CudaDriver, C::Sync, ON_EVENT},
    {144, "cuGraphLaunch", Fam::CudaDriver, C::Graph, GRAPH},
    {145, "cuGraphLaunch_ptsz", Fam::CudaDriver, C::Graph, GRAPH},
    {146, "cuMemAllocAsync", Fam::CudaDriver, C::Alloc, ALLOC_ASYNC, 0},
    {147, "cuMemFreeAsync", Fam::CudaDriver, C::Free, FREE_ASYNC},
    // Polling: CUDA_ERROR_NOT_READY (600) until done.
    {148, "cuEventQuery", Fam::CudaDriver, C::Poll, ON_EVENT},
    {149, "cuStreamQuery", Fam::CudaDriver, C::Poll, ON_STREAM},
    {150, "cuStreamQuery_ptsz", Fam::CudaDriver, C::Poll, ON_STREAM},
    {151, "cuEventRecord", Fam::CudaDriver, C::EventRecord, RECORD_EVENT},
    {152, "cuEventRecord_ptsz", Fam::CudaDriver, C::EventRecord, RECORD_EVENT},
    {153, "cuEventRecordWithFlags", Fam::CudaDriver, C::EventRecord, RECORD_EVENT},
    {154, "cuEventRecordWithFlags_ptsz", Fam::CudaDriver, C::EventRecord, RECORD_EVENT},

    // NCCL (libnccl)
    {200, "ncclAllReduce", Fam::Nccl, C::Collective, NCCL_REDUCE_ALL},
    {201, "ncclBroadcast", Fam::Nccl, C::Collective, NCCL_BCAST},
    {202, "ncclAllGather", Fam::Nccl, C::Collective, NCCL_GATHER},
    {203, "ncclReduceScatter", Fam::Nccl, C::Collective, NCCL_REDUCE_ALL},
    {204, "ncclReduce", Fam::Nccl, C::Collective, NCCL_REDUCE},
    {205, "ncclSend", Fam::Nccl, C::Collective, NCCL_P2P},
    {206, "ncclRecv", Fam::Nccl, C::Collective, NCCL_P2P},
    {207, "ncclGroupStart", Fam::Nccl, C::Group, NONE},
    {208, "ncclGroupEnd", Fam::Nccl, C::Group, NONE},
    {209, "ncclCommInitRank", Fam::Nccl, C::Init, NCCL_INIT, 0},
    {210, "ncclCommInitRankConfig", Fam::Nccl, C::Init, NCCL_INIT, 0},
    // The watchdog's poll of a communicator. It returns ncclSuccess; the error (ncclInProgress
    // while a non-blocking operation runs) is behind its second argument, not read.
    {211, "ncclCommGetAsyncError", Fam::Nccl, C::Poll, COMM},

    // HIP (libamdhip64)
    {300, "hipLaunchKernel", Fam::Hip, C::Launch, RT_LAUNCH},
    {301, "hipModuleLaunchKernel", Fam::Hip, C::Launch, DRV_LAUNCH},
    {302, "hipMemcpy", Fam::Hip, C::Copy, RT_COPY},
    {303, "hipMemcpyAsync", Fam::Hip, C::Copy, RT_COPY_ASYNC},
    {304, "hipMemset", Fam::Hip, C::Memset, MEMSET},
    {305, "hipMemsetAsync", Fam::Hip, C::Memset, MEMSET_ASYNC},
    {306, "hipMalloc", Fam::Hip, C::Alloc, ALLOC, 0},
    {307, "hipHostMalloc", Fam::Hip, C::Alloc, ALLOC_FLAGS, 0},
    {308, "hipMallocManaged", Fam::Hip, C::Alloc, ALLOC_FLAGS, 0},
    {309, "hipFree", Fam::Hip, C::Free, FREE},
    {310, "hipHostFree", Fam::Hip, C::Free, FREE},
    {311, "hipDeviceSynchronize", Fam::Hip, C::Sync, NONE},
    {312, "hipStreamSynchronize", Fam::Hip, C::Sync, ON_STREAM},
    {313, "hipEventSynchronize", Fam::Hip, C::Sync, ON_EVENT},
    {314, "hipStreamWaitEvent", Fam::Hip, C::StreamWait, WAIT_EVENT},
    {315, "hipGraphLaunch", Fam::Hip, C::Graph, GRAPH},
    {316, "hipMemcpyHtoD", Fam::Hip, C::Copy, DRV_COPY, -1, kH2D},
    {317, "hipMemcpyDtoH", Fam::Hip, C::Copy, DRV_COPY, -1, kD2H},
    {318, "hipMemcpyDtoD", Fam::Hip, C::Copy, DRV_COPY, -1, kD2D},
    {319, "hipSetDevice", Fam::Hip, C::Device, SET_DEVICE},
    {320, "hipMallocAsync", Fam::Hip, C::Alloc, ALLOC_ASYNC, 0},
    {321, "hipFreeAsync", Fam::Hip, C::Free, FREE_ASYNC},
    // Polling: hipErrorNotReady (600) until done.
    {322, "hipEventQuery", Fam::Hip, C::Poll, ON_EVENT},
    {323, "hipStreamQuery", Fam::Hip, C::Poll, ON_STREAM},
    {324, "hipEventRecord", Fam::Hip, C::EventRecord, RECORD_EVENT},
};

#undef RT_LAUNCH
#undef CFG_LAUNCH
#undef DRV_LAUNCH
#undef RT_COPY
#undef RT_COPY_ASYNC
#undef RT_COPY_2D
#undef RT_COPY_2D_ASYNC
#undef DRV_COPY
#undef DRV_COPY_ASYNC
#undef MEMSET
#undef MEMSET_ASYNC
#undef ALLOC
#undef ALLOC_FLAGS
#undef FREE
#undef ON_STREAM
#undef NONE
#undef ON_EVENT
#undef WAIT_EVENT
#undef RECORD_EVENT
#undef COMM
#undef GRAPH
#undef NCCL_REDUCE_ALL
#undef NCCL_BCAST
#undef NCCL_GATHER
#undef NCCL_REDUCE
#undef NCCL_P2P
#undef NCCL_INIT
#undef SET_DEVICE

uint32_t lo32(uint64_t v) { return static_cast<uint32_t>(v); }
uint32_t hi32(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

}  // namespace

std::span<const ApiInfo> api_catalog() { return kCatalog; }

const ApiInfo* find_api(uint16_t id) {
  for (const auto& a : kCatalog)
    if (a.id == id) return &a;
  return nullptr;
}

const ApiInfo* find_api(std::string_view name) {
  for (const auto& a : kCatalog)
    if (a.name == name) return &a;
  return nullptr;
}

std::string_view family_name(Family f) {
  switch (f) {
    case Family::Cudart:
      return "cudart";
    case Family::CudaDriver:
      return "cuda";
    case Family::Nccl:
      return "nccl";
    case Family::Hip:
      return "hip";
  }
  return "?";
}

std::span<const Category> all_categories() {
  static constexpr Category kAll[] = {
      Category::Launch,     Category::Copy,       Category::Memset,     Category::Alloc,
      Category::Free,       Category::Sync,       Category::StreamWait, Category::Graph,
      Category::Collective, Category::Group,      Category::Init,       Category::Device,
      Category::Poll,       Category::EventRecord};
  return kAll;
}

std::optional<Category> category_of_name(std::string_view name) {
  for (Category c : all_categories())
    if (category_name(c) == name) return c;
  return std::nullopt;
}

std::string_view category_name(Category c) {
  switch (c) {
    case Category::Launch:
      return "launch";
    case Category::Copy:
      return "copy";
    case Category::Memset:
      return "memset";
    case Category::Alloc:
      return "alloc";
    case Category::Free:
      return "free";
    case Category::Sync:
      return "sync";
    case Category::StreamWait:
      return "stream_wait";
    case Category::Graph:
      return "graph";
    case Category::Collective:
      return "collective";
    case Category::Group:
      return "group";
    case Category::Init:
      return "init";
    case Category::Device:
      return "device";
    case Category::Poll:
      return "poll";
    case Category::EventRecord:
      return "event_record";
  }
  return "?";
}

std::string_view family_library_prefix(Family f) {
  switch (f) {
    case Family::Cudart:
      return "libcudart";
    case Family::CudaDriver:
      return "libcuda.";
    case Family::Nccl:
      return "libnccl";
    case Family::Hip:
      return "libamdhip64";
  }
  return {};
}

std::optional<Family> family_of_library(std::string_view file_name) {
  for (Family f : {Family::Cudart, Family::CudaDriver, Family::Nccl, Family::Hip}) {
    if (file_name.starts_with(family_library_prefix(f)) &&
        file_name.find(".so") != std::string_view::npos)
      return f;
  }
  return std::nullopt;
}

gw_api_spec make_spec(const ApiInfo& api) {
  gw_api_spec spec{};
  for (int i = 0; i < 8; ++i) {
    spec.args[i].src = api.args[i].from.src;
    spec.args[i].index = api.args[i].from.index;
    spec.args[i].offset = api.args[i].from.offset;
  }
  spec.out_reg = api.out_reg;
  spec.enabled = 1;
  spec.launch = api.category == Category::Launch ? 1 : 0;
  // One span over the memory words when they share a base and 8-byte alignment (every API in the
  // catalogue does): one user-memory read instead of one per word.
  uint8_t src = GW_ARG_NONE, reg = 0;
  uint32_t lo = UINT32_MAX, hi = 0;
  bool one_span = true;
  for (const ArgUse& u : api.args) {
    if (u.from.src != GW_ARG_STACK && u.from.src != GW_ARG_DEREF) continue;
    const uint32_t off = u.from.src == GW_ARG_STACK ? 8u * u.from.index : u.from.offset;
    const uint8_t base = u.from.src == GW_ARG_DEREF ? u.from.index : 0;
    if (src != GW_ARG_NONE && (u.from.src != src || base != reg)) one_span = false;
    src = u.from.src;
    reg = base;
    if (lo != UINT32_MAX && (off - lo) % 8 != 0) one_span = false;
    lo = std::min(lo, off);
    hi = std::max(hi, off + 8);
  }
  if (src != GW_ARG_NONE && one_span && hi - lo <= 64 && lo <= 255 && (hi - lo) % 8 == 0) {
    spec.span_src = src;
    spec.span_reg = reg;
    spec.span_lo = static_cast<uint8_t>(lo);
    spec.span_len = static_cast<uint8_t>(hi - lo);
  }
  return spec;
}

uint64_t make_cookie(const ApiInfo& api, uint16_t lib_id, bool entry_only, bool batch_launches) {
  uint64_t cookie = GW_COOKIE(api.id, lib_id);
  if (entry_only) cookie |= GW_COOKIE_ENTRY_ONLY;
  // A runtime library's launch: a driver launch made inside it is nested (bpf/api.bpf.h).
  if (api.category == Category::Launch && api.family != Family::CudaDriver)
    cookie |= GW_COOKIE_RUNTIME_LAUNCH;
  if (api.category == Category::Launch && batch_launches) {
    cookie |= GW_COOKIE_BATCHED;
    if (api.args[0].from.index == 1) cookie |= GW_COOKIE_KERNEL_ARG2;
  }
  return cookie;
}

uint32_t nccl_dtype_size(uint64_t dtype) {
  // ncclDataType_t: int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 fp8e4m3 fp8e5m2
  static constexpr std::array<uint32_t, 12> kSizes{1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return dtype < kSizes.size() ? kSizes[dtype] : 0;
}

ApiCallFields decode_api_args(const ApiInfo& api, const uint64_t (&args)[8], uint64_t out) {
  ApiCallFields f;
  uint64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  uint64_t width = 0, height = 0, count = 0, dtype = 0;
  bool has_grid = false, has_2d = false, has_count = false;
  for (int i = 0; i < 8; ++i) {
    const uint64_t v = args[i];
    switch (api.args[i].field) {
      case F::None:
        break;
      case F::Func:
        f.addr = v;
        break;
      case F::GridXY:
        grid[0] = lo32(v);
        grid[1] = hi32(v);
        has_grid = true;
        break;
      case F::GridZ:
        grid[2] = lo32(v);
        has_grid = true;
        break;
      case F::GridZBlockX:
        grid[2] = lo32(v);
        block[0] = hi32(v);
        has_grid = true;
        break;
      case F::BlockXY:
        block[0] = lo32(v);
        block[1] = hi32(v);
        break;
      case F::BlockZ:
        block[2] = lo32(v);
        break;
      case F::BlockYZ:
        block[1] = lo32(v);
        block[2] = hi32(v);
        break;
      case F::GridX:
        grid[0] = lo32(v);
        has_grid = true;
        break;
      case F::GridY:
        grid[1] = lo32(v);
        break;
      case F::BlockX:
        block[0] = lo32(v);
        break;
      case F::BlockY:
        block[1] = lo32(v);
        break;
      case F::Stream:
        f.stream = v;
        break;
      case F::Dst:
        f.addr = v;
        break;
      case F::Src:
        f.addr2 = v;
        break;
      case F::Bytes:
        f.bytes = v;
        break;
      case F::Width:
        width = v;
        has_2d = true;
        break;
      case F::Height:
        height = v;
        has_2d = true;
        break;
      case F::CopyKind:
        f.op = static_cast<int32_t>(lo32(v));
        break;
      case F::Value:
        break;
      case F::Ptr:
        f.addr = v;
        break;
      case F::Event:
        f.addr = v;
        break;
      case F::GraphExec:
        f.addr = v;
        break;
      case F::Count:
        count = v;
        has_count = true;
        break;
      case F::Dtype:
        dtype = v;
        break;
      case F::RedOp:
        f.op = static_cast<int32_t>(lo32(v));
        break;
      case F::Root:
      case F::Peer:
      case F::Rank:
        f.peer = static_cast<int32_t>(lo32(v));
        break;
      case F::Comm:
        f.addr = v;
        break;
      case F::NRanks:
        f.nranks = static_cast<int32_t>(lo32(v));
        break;
      case F::Flags:
        break;
      case F::DeviceOrdinal:
        f.addr = lo32(v);
        break;  // an int: the upper half is not its
    }
  }
  if (has_grid) {
    f.blocks = grid[0] * grid[1] * grid[2];
    f.threads_per_block = static_cast<uint32_t>(block[0] * block[1] * block[2]);
  }
  if (has_2d) f.bytes = width * height;
  if (has_count) f.bytes = count * nccl_dtype_size(dtype);
  if (api.fixed_dir) f.op = static_cast<int32_t>(*api.fixed_dir);
  if (api.out_reg >= 0) f.addr = out;  // the allocated pointer, or the communicator created
  if (api.narrow32 & 1) f.bytes &= 0xffffffffu;
  if (api.narrow32 & 2) f.addr &= 0xffffffffu;
  return f;
}

}  // namespace gpuwhy
