// SPDX-License-Identifier: Apache-2.0
// The HIP runtime (libamdhip64.so.5) as far as gpuwhy probes it, declared from AMD's documented
// C signatures (no HIP header needed). Launch and copy layouts match CUDA's, which is why the
// catalogue reuses the CUDA argument layouts for these rows.
#pragma once

#include <stddef.h>

#include "gwsim/api.h"
#include "gwsim/dim3.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int hipError_t;
enum {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorNotInitialized = 3,
  hipErrorInvalidConfiguration = 9,
  hipErrorInvalidDeviceFunction = 98,
  hipErrorNoDevice = 100,
  hipErrorInvalidDevice = 101,
  hipErrorInvalidHandle = 400,
  hipErrorNotReady = 600,
};

typedef struct ihipStream_t* hipStream_t;
typedef struct ihipEvent_t* hipEvent_t;
typedef struct ihipModuleSymbol_t* hipFunction_t;
typedef struct hipGraphExec* hipGraphExec_t;
typedef void* hipDeviceptr_t;

typedef enum hipMemcpyKind {
  hipMemcpyHostToHost = 0,
  hipMemcpyHostToDevice = 1,
  hipMemcpyDeviceToHost = 2,
  hipMemcpyDeviceToDevice = 3,
  hipMemcpyDefault = 4,
} hipMemcpyKind;

// Probed (api_catalog.cpp, Family::Hip).
GWSIM_API hipError_t hipLaunchKernel(const void* function_address, dim3 numBlocks, dim3 dimBlocks,
                                     void** args, size_t sharedMemBytes, hipStream_t stream);
GWSIM_API hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridDimX,
                                           unsigned int gridDimY, unsigned int gridDimZ,
                                           unsigned int blockDimX, unsigned int blockDimY,
                                           unsigned int blockDimZ, unsigned int sharedMemBytes,
                                           hipStream_t stream, void** kernelParams, void** extra);
GWSIM_API hipError_t hipMemcpy(void* dst, const void* src, size_t sizeBytes, hipMemcpyKind kind);
GWSIM_API hipError_t hipMemcpyAsync(void* dst, const void* src, size_t sizeBytes,
                                    hipMemcpyKind kind, hipStream_t stream);
GWSIM_API hipError_t hipMemset(void* dst, int value, size_t sizeBytes);
GWSIM_API hipError_t hipMemsetAsync(void* dst, int value, size_t sizeBytes, hipStream_t stream);
GWSIM_API hipError_t hipMalloc(void** ptr, size_t size);
GWSIM_API hipError_t hipHostMalloc(void** ptr, size_t size, unsigned int flags);
GWSIM_API hipError_t hipMallocManaged(void** dev_ptr, size_t size, unsigned int flags);
GWSIM_API hipError_t hipFree(void* ptr);
GWSIM_API hipError_t hipMallocAsync(void** dev_ptr, size_t size, hipStream_t stream);
GWSIM_API hipError_t hipFreeAsync(void* dev_ptr, hipStream_t stream);
GWSIM_API hipError_t hipHostFree(void* ptr);
GWSIM_API hipError_t hipDeviceSynchronize(void);
GWSIM_API hipError_t hipStreamSynchronize(hipStream_t stream);
GWSIM_API hipError_t hipEventSynchronize(hipEvent_t event);
GWSIM_API hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int flags);
GWSIM_API hipError_t hipGraphLaunch(hipGraphExec_t graphExec, hipStream_t stream);
GWSIM_API hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void* src, size_t sizeBytes);
GWSIM_API hipError_t hipMemcpyDtoH(void* dst, hipDeviceptr_t src, size_t sizeBytes);
GWSIM_API hipError_t hipMemcpyDtoD(hipDeviceptr_t dst, hipDeviceptr_t src, size_t sizeBytes);
// Polling (hipErrorNotReady until done) and event records.
GWSIM_API hipError_t hipEventQuery(hipEvent_t event);
GWSIM_API hipError_t hipStreamQuery(hipStream_t stream);
GWSIM_API hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream);

// Not probed; what a workload needs around the probed calls.
GWSIM_API hipError_t hipInit(unsigned int flags);
GWSIM_API hipError_t hipGetDeviceCount(int* count);
GWSIM_API hipError_t hipSetDevice(int deviceId);
GWSIM_API hipError_t hipStreamCreate(hipStream_t* stream);
GWSIM_API hipError_t hipStreamDestroy(hipStream_t stream);
GWSIM_API hipError_t hipEventCreate(hipEvent_t* event);
GWSIM_API hipError_t hipEventDestroy(hipEvent_t event);
GWSIM_API hipError_t hipGetLastError(void);

#ifdef __cplusplus
}
#endif
