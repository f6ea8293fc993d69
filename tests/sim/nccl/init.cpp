// SPDX-License-Identifier: Apache-2.0
// Communicator life cycle and queries.
#include <memory>

#include "device/device.hpp"
#include "nccl/registry.hpp"

using gwsim::Device;
using gwsim::nccl::Comm;
using gwsim::nccl::kMaxRanks;
using gwsim::nccl::Registry;

namespace {

constexpr int kVersion = 22809;  // what NVIDIA's libnccl.so.2 from CUDA 13.0 reports (2.28.9)

ncclResult_t init_rank(const gwsim::ApiCounter* api, ncclComm_t* comm, int nranks,
                       const ncclUniqueId& id, int rank) {
  if (comm == nullptr || nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) {
    return ncclInvalidArgument;
  }
  Comm* joined = nullptr;
  uint64_t waited = 0;
  const ncclResult_t r =
      Comm::join(id, nranks, rank, Device::get().config().nccl_timeout_ns, &joined, &waited);
  Device::get().record_blocked(api, waited);
  if (r != ncclSuccess) return r;
  *comm = Registry::get().add(std::unique_ptr<Comm>(joined));
  return ncclSuccess;
}

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  GWSIM_ENTER();
  if (version == nullptr) return ncclInvalidArgument;
  *version = kVersion;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  GWSIM_ENTER();
  if (uniqueId == nullptr) return ncclInvalidArgument;
  return Comm::create_id(uniqueId);
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  GWSIM_ENTER();
  return init_rank(gw_api, comm, nranks, commId, rank);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  GWSIM_ENTER();
  (void)config;
  return init_rank(gw_api, comm, nranks, commId, rank);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  GWSIM_ENTER();
  // Queued collectives (GWSIM_NCCL_ASYNC) still meet through this communicator: let them finish
  // first, as real NCCL's destroy does.
  if (Device::get().config().nccl_async && Registry::get().find(comm) != nullptr) {
    uint64_t waited = 0;
    Device::get().engine().wait_all(&waited);
    Device::get().record_blocked(gw_api, waited);
  }
  return Registry::get().remove(comm) ? ncclSuccess : ncclInvalidArgument;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  GWSIM_ENTER();
  return Registry::get().remove(comm) ? ncclSuccess : ncclInvalidArgument;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  GWSIM_ENTER();
  return Registry::get().find(comm) ? ncclSuccess : ncclInvalidArgument;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  GWSIM_ENTER();
  const Comm* c = Registry::get().find(comm);
  if (c == nullptr || count == nullptr) return ncclInvalidArgument;
  *count = c->nranks();
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  GWSIM_ENTER();
  const Comm* c = Registry::get().find(comm);
  if (c == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = c->rank();
  return ncclSuccess;
}

// The simulated communicators are blocking and a failed meeting is reported on stderr (not kept):
// no operation of theirs is ever in progress or failed asynchronously.
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  GWSIM_ENTER();
  if (Registry::get().find(comm) == nullptr || asyncError == nullptr) return ncclInvalidArgument;
  *asyncError = ncclSuccess;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  GWSIM_ENTER();
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error";
    case ncclSystemError:
      return "unhandled system error";
    case ncclInternalError:
      return "internal error";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclInvalidUsage:
      return "invalid usage";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
  }
  return "unknown result code";
}

}  // extern "C"
