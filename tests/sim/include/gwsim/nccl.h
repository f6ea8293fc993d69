// SPDX-License-Identifier: Apache-2.0
// NCCL (libnccl.so.2) as far as gpuwhy probes it, declared from NVIDIA's documented C signatures.
// ncclUniqueId is a 128-byte struct passed BY VALUE to ncclCommInitRank: it travels in memory on
// the stack and takes no register, which is what the tracer's argument layout relies on.
#pragma once

#include <stddef.h>

#include "gwsim/api.h"
#include "gwsim/cudart.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
} ncclResult_t;

typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
} ncclDataType_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef struct ncclComm* ncclComm_t;
// Opaque here: the simulator ignores the configuration, and callers may pass NULL.
typedef struct ncclConfig_v22800 ncclConfig_t;

// Probed (api_catalog.cpp, Family::Nccl).
GWSIM_API ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                     ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                     cudaStream_t stream);
GWSIM_API ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                     ncclDataType_t datatype, int root, ncclComm_t comm,
                                     cudaStream_t stream);
GWSIM_API ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                     ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
GWSIM_API ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         cudaStream_t stream);
GWSIM_API ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                  ncclDataType_t datatype, ncclRedOp_t op, int root,
                                  ncclComm_t comm, cudaStream_t stream);
GWSIM_API ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype,
                                int peer, ncclComm_t comm, cudaStream_t stream);
GWSIM_API ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                ncclComm_t comm, cudaStream_t stream);
GWSIM_API ncclResult_t ncclGroupStart(void);
GWSIM_API ncclResult_t ncclGroupEnd(void);
GWSIM_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                        int rank);
GWSIM_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                              int rank, ncclConfig_t* config);
// The watchdog's poll: ncclSuccess, with the communicator's asynchronous error in *asyncError.
GWSIM_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);

// Not probed; what a workload needs around the probed calls.
GWSIM_API ncclResult_t ncclGetVersion(int* version);
GWSIM_API ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
GWSIM_API ncclResult_t ncclCommDestroy(ncclComm_t comm);
GWSIM_API ncclResult_t ncclCommFinalize(ncclComm_t comm);
GWSIM_API ncclResult_t ncclCommAbort(ncclComm_t comm);
GWSIM_API ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
GWSIM_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
GWSIM_API const char* ncclGetErrorString(ncclResult_t result);

#ifdef __cplusplus
}
#endif
