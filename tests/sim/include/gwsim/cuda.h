// SPDX-License-Identifier: Apache-2.0
// The CUDA driver API (libcuda.so.1) as far as gpuwhy probes it, declared from NVIDIA's
// documented C signatures (no CUDA header needed). The unsuffixed cuMemAlloc/cuMemFree/
// cuMemAllocHost are the legacy 32-bit entry points that libcuda still exports next to the _v2
// ones.
#pragma once

#include <stddef.h>

#include "gwsim/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int CUresult;
enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_READY = 600,
};

typedef unsigned long long CUdeviceptr;
typedef unsigned int CUdeviceptr_v1;
typedef int CUdevice;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUgraphExec_st* CUgraphExec;
typedef struct CUlaunchAttribute_st CUlaunchAttribute;

// Layout matters: seven u32 (grid, block, shared memory), then hStream at offset 32.
typedef struct CUlaunchConfig_st {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute* attrs;
  unsigned int numAttrs;
} CUlaunchConfig;

// Probed (api_catalog.cpp, Family::CudaDriver).
GWSIM_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                  unsigned int gridDimZ, unsigned int blockDimX,
                                  unsigned int blockDimY, unsigned int blockDimZ,
                                  unsigned int sharedMemBytes, CUstream hStream,
                                  void** kernelParams, void** extra);
GWSIM_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                       unsigned int gridDimZ, unsigned int blockDimX,
                                       unsigned int blockDimY, unsigned int blockDimZ,
                                       unsigned int sharedMemBytes, CUstream hStream,
                                       void** kernelParams, void** extra);
GWSIM_API CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                                    void** extra);
GWSIM_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f,
                                         void** kernelParams, void** extra);
GWSIM_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
GWSIM_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
GWSIM_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                 CUstream hStream);
GWSIM_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                      CUstream hStream);
GWSIM_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount);
GWSIM_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost,
                                        size_t ByteCount);
GWSIM_API CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount);
GWSIM_API CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount);
GWSIM_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
GWSIM_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                        size_t ByteCount);
GWSIM_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost,
                                        size_t ByteCount, CUstream hStream);
GWSIM_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost,
                                             size_t ByteCount, CUstream hStream);
GWSIM_API CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                        CUstream hStream);
GWSIM_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                             CUstream hStream);
GWSIM_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                        size_t ByteCount, CUstream hStream);
GWSIM_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                             size_t ByteCount, CUstream hStream);
GWSIM_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize);
GWSIM_API CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize);
GWSIM_API CUresult cuMemFree_v2(CUdeviceptr dptr);
GWSIM_API CUresult cuMemFree(CUdeviceptr_v1 dptr);
GWSIM_API CUresult cuMemAllocHost_v2(void** pp, size_t bytesize);
GWSIM_API CUresult cuMemAllocHost(void** pp, unsigned int bytesize);
GWSIM_API CUresult cuCtxSynchronize(void);
GWSIM_API CUresult cuStreamSynchronize(CUstream hStream);
GWSIM_API CUresult cuStreamSynchronize_ptsz(CUstream hStream);
GWSIM_API CUresult cuEventSynchronize(CUevent hEvent);
GWSIM_API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
GWSIM_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);
// Polling (CUDA_ERROR_NOT_READY until done) and event records.
GWSIM_API CUresult cuEventQuery(CUevent hEvent);
GWSIM_API CUresult cuStreamQuery(CUstream hStream);
GWSIM_API CUresult cuStreamQuery_ptsz(CUstream hStream);
GWSIM_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
GWSIM_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream);
GWSIM_API CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags);
GWSIM_API CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
                                               unsigned int flags);

// Not probed; what a workload needs around the probed calls.
GWSIM_API CUresult cuInit(unsigned int Flags);
GWSIM_API CUresult cuDriverGetVersion(int* driverVersion);
GWSIM_API CUresult cuDeviceGetCount(int* count);
GWSIM_API CUresult cuDeviceGet(CUdevice* device, int ordinal);
GWSIM_API CUresult cuMemFreeHost(void* p);
GWSIM_API CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags);
GWSIM_API CUresult cuStreamDestroy_v2(CUstream hStream);
GWSIM_API CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags);
GWSIM_API CUresult cuEventDestroy_v2(CUevent hEvent);

#ifdef __cplusplus
}
#endif
