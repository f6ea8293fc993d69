// SPDX-License-Identifier: Apache-2.0
// The CUDA runtime API (libcudart.so.13) as far as gpuwhy probes it, declared from NVIDIA's
// documented C signatures so that no CUDA header is needed. Used by the simulated libcudart
// (which defines these) and by workloads linked against either the simulated or the real library.
#pragma once

#include <stddef.h>

#include "gwsim/api.h"
#include "gwsim/dim3.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int cudaError_t;
enum {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorLaunchFailure = 719,
};

typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef struct CUgraphExec_st* cudaGraphExec_t;

#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum { cudaHostAllocDefault = 0, cudaMemAttachGlobal = 1 };

typedef struct cudaLaunchAttribute_st cudaLaunchAttribute;
// Layout matters: the tracer reads the grid, block and the stream (offset 32) through the pointer.
typedef struct cudaLaunchConfig_st {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes;
  cudaStream_t stream;
  cudaLaunchAttribute* attrs;
  unsigned int numAttrs;
} cudaLaunchConfig_t;

// Probed (api_catalog.cpp, Family::Cudart).
GWSIM_API cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                       size_t sharedMem, cudaStream_t stream);
GWSIM_API cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim,
                                            void** args, size_t sharedMem, cudaStream_t stream);
GWSIM_API cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func,
                                          void** args);
GWSIM_API cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func,
                                               void** args);
GWSIM_API cudaError_t cudaMemcpy(void* dst, const void* src, size_t count,
                                 enum cudaMemcpyKind kind);
GWSIM_API cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count,
                                      enum cudaMemcpyKind kind);
GWSIM_API cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count,
                                      enum cudaMemcpyKind kind, cudaStream_t stream);
GWSIM_API cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count,
                                           enum cudaMemcpyKind kind, cudaStream_t stream);
GWSIM_API cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch,
                                   size_t width, size_t height, enum cudaMemcpyKind kind);
GWSIM_API cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch,
                                        size_t width, size_t height, enum cudaMemcpyKind kind);
GWSIM_API cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                                        size_t width, size_t height, enum cudaMemcpyKind kind,
                                        cudaStream_t stream);
GWSIM_API cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src,
                                             size_t spitch, size_t width, size_t height,
                                             enum cudaMemcpyKind kind, cudaStream_t stream);
GWSIM_API cudaError_t cudaMemset(void* devPtr, int value, size_t count);
GWSIM_API cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count);
GWSIM_API cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream);
GWSIM_API cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count,
                                           cudaStream_t stream);
GWSIM_API cudaError_t cudaMalloc(void** devPtr, size_t size);
typedef struct CUmemPoolHandle_st* cudaMemPool_t;
GWSIM_API cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream);
GWSIM_API cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                              cudaStream_t stream);
GWSIM_API cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream);
GWSIM_API cudaError_t cudaMallocHost(void** ptr, size_t size);
GWSIM_API cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags);
GWSIM_API cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags);
GWSIM_API cudaError_t cudaFree(void* devPtr);
GWSIM_API cudaError_t cudaFreeHost(void* ptr);
GWSIM_API cudaError_t cudaStreamSynchronize(cudaStream_t stream);
GWSIM_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
GWSIM_API cudaError_t cudaDeviceSynchronize(void);
GWSIM_API cudaError_t cudaEventSynchronize(cudaEvent_t event);
GWSIM_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                          unsigned int flags);
GWSIM_API cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event,
                                               unsigned int flags);
GWSIM_API cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream);
GWSIM_API cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
// Polling (cudaErrorNotReady until done) and event records.
GWSIM_API cudaError_t cudaStreamQuery(cudaStream_t stream);
GWSIM_API cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
GWSIM_API cudaError_t cudaEventQuery(cudaEvent_t event);
GWSIM_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
GWSIM_API cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
GWSIM_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                               unsigned int flags);
GWSIM_API cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
                                                    unsigned int flags);

// Not probed; what a workload needs around the probed calls.
GWSIM_API cudaError_t cudaStreamCreate(cudaStream_t* pStream);
GWSIM_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags);
GWSIM_API cudaError_t cudaStreamDestroy(cudaStream_t stream);
GWSIM_API cudaError_t cudaEventCreate(cudaEvent_t* event);
GWSIM_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags);
GWSIM_API cudaError_t cudaEventDestroy(cudaEvent_t event);
GWSIM_API cudaError_t cudaGetLastError(void);
GWSIM_API cudaError_t cudaPeekAtLastError(void);
GWSIM_API const char* cudaGetErrorString(cudaError_t error);
GWSIM_API cudaError_t cudaGetDeviceCount(int* count);
GWSIM_API cudaError_t cudaSetDevice(int device);
GWSIM_API cudaError_t cudaGetDevice(int* device);

#ifdef __cplusplus
}
#endif
