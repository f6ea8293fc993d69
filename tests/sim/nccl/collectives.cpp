// SPDX-License-Identifier: Apache-2.0
// Collectives, point-to-point and groups. Each operation: optional straggler delay on the chosen
// rank, then a blocking rendezvous with the other ranks (all of them for a collective, the peer
// for send/recv), then the transfer queued on the caller's stream at GWSIM_NCCL_GBPS.
//
// Inside ncclGroupStart/End operations are deferred, and ncclGroupEnd does one rendezvous per
// communicator: a group is how real programs post sends and receives to several peers at once,
// and meeting the peers one by one would deadlock on rings. Every rank is assumed to take part in
// each group that uses the communicator, which is how collectives and all-to-alls are written.
#include <functional>
#include <vector>

#include "device/device.hpp"
#include "gwsim/clock.hpp"
#include "nccl/registry.hpp"

using gwsim::DefaultStream;
using gwsim::Device;
using gwsim::nccl::Comm;
using gwsim::nccl::Registry;

namespace {

constexpr int kNoPeer = -1;

struct Pending {
  ncclComm_t comm;
  uint64_t bytes;
  uint64_t stream;
  int peer;  // kNoPeer for collectives
};

thread_local int t_group_depth = 0;
thread_local std::vector<Pending> t_deferred;

uint64_t handle(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Sleeps on the straggler rank: the delay the other ranks then wait out in their barrier.
uint64_t straggle(const Comm& c) {
  const auto& cfg = Device::get().config();
  if (cfg.straggle_rank != c.rank() || cfg.straggle_ns == 0) return 0;
  gwsim::sleep_ns(cfg.straggle_ns);
  Device::get().record_sleep(cfg.straggle_ns);
  return cfg.straggle_ns;
}

ncclResult_t transfer(const gwsim::ApiCounter* api, const Pending& p) {
  const gwsim::Status st = Device::get().collective(api, p.bytes, p.stream, DefaultStream::kLegacy);
  return st == gwsim::Status::kOk ? ncclSuccess : ncclUnhandledCudaError;
}

// GWSIM_NCCL_ASYNC: the call returns once the operations are queued, as real NCCL's does. The
// first one holds the GPU until the ranks have met (the NCCL kernel waiting for its peers), so the
// host sees the wait only in its next sync. A failed meeting is reported on stderr (real NCCL
// reports it through ncclCommGetAsyncError) and the transfers run anyway.
ncclResult_t run_async(const gwsim::ApiCounter* api, Comm* comm, const std::vector<Pending>& ops,
                       uint64_t delayed) {
  const uint64_t timeout = Device::get().config().nccl_timeout_ns;
  uint64_t bytes = 0;
  for (const Pending& p : ops) bytes += p.bytes;
  const ncclComm_t handle = ops[0].comm;
  const int peer = ops.size() == 1 ? ops[0].peer : kNoPeer;
  const size_t count = ops.size();
  auto meet = [comm, handle, peer, timeout, count, bytes, delayed] {
    uint64_t waited = 0;
    if (peer != kNoPeer) {
      comm->pair_barrier(peer, timeout, &waited);
    } else {
      comm->barrier(timeout, &waited);
    }
    Registry::get().note(handle, count, bytes, waited, delayed);
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    const Pending& p = ops[i];
    const gwsim::Status st =
        Device::get().collective(api, p.bytes, p.stream, DefaultStream::kLegacy,
                                 i == 0 ? std::function<void()>(meet) : nullptr);
    if (st != gwsim::Status::kOk) return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

// Rendezvous for one communicator, then its transfers.
ncclResult_t run(const gwsim::ApiCounter* api, Comm* comm, const std::vector<Pending>& ops) {
  const uint64_t delayed = straggle(*comm);
  if (Device::get().config().nccl_async) return run_async(api, comm, ops, delayed);
  const uint64_t timeout = Device::get().config().nccl_timeout_ns;
  uint64_t waited = 0;
  ncclResult_t r = ncclSuccess;
  if (ops.size() == 1 && ops[0].peer != kNoPeer) {
    r = comm->pair_barrier(ops[0].peer, timeout, &waited);
  } else {
    r = comm->barrier(timeout, &waited);
  }
  Device::get().record_blocked(api, waited);
  uint64_t bytes = 0;
  for (const Pending& p : ops) {
    if (r == ncclSuccess) r = transfer(api, p);
    bytes += p.bytes;
  }
  Registry::get().note(ops[0].comm, ops.size(), bytes, waited, delayed);
  return r;
}

struct Request {
  ncclComm_t comm;
  size_t count;
  ncclDataType_t dtype;
  int red_op;        // -1 when the operation has none
  int peer_or_root;  // -1 when the operation has none
  const void* required_buffer;
  cudaStream_t stream;
  bool p2p;
};

ncclResult_t submit(const gwsim::ApiCounter* api, const Request& q) {
  Comm* comm = Registry::get().find(q.comm);
  if (comm == nullptr) return ncclInvalidArgument;
  const uint64_t size = gwsim::nccl::dtype_size(q.dtype);
  if (size == 0 || q.red_op > ncclAvg) return ncclInvalidArgument;
  if (q.peer_or_root != kNoPeer && (q.peer_or_root < 0 || q.peer_or_root >= comm->nranks())) {
    return ncclInvalidArgument;
  }
  if (q.count > 0 && q.required_buffer == nullptr) return ncclInvalidArgument;
  if (!Device::get().engine().has_stream(handle(q.stream), DefaultStream::kLegacy)) {
    return ncclUnhandledCudaError;  // what NCCL reports when the CUDA stream is unusable
  }
  const Pending p{q.comm, q.count * size, handle(q.stream), q.p2p ? q.peer_or_root : kNoPeer};
  if (t_group_depth > 0) {
    t_deferred.push_back(p);
    return ncclSuccess;
  }
  return run(api, comm, {p});
}

}  // namespace

extern "C" {

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  GWSIM_ENTER();
  const void* both = sendbuff && recvbuff ? recvbuff : nullptr;
  return submit(gw_api, {comm, count, datatype, op, kNoPeer, both, stream, false});
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  GWSIM_ENTER();
  (void)sendbuff;  // only meaningful on the root
  return submit(gw_api, {comm, count, datatype, -1, root, recvbuff, stream, false});
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  GWSIM_ENTER();
  const void* both = sendbuff && recvbuff ? recvbuff : nullptr;
  return submit(gw_api, {comm, sendcount, datatype, -1, kNoPeer, both, stream, false});
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  GWSIM_ENTER();
  const void* both = sendbuff && recvbuff ? recvbuff : nullptr;
  return submit(gw_api, {comm, recvcount, datatype, op, kNoPeer, both, stream, false});
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  GWSIM_ENTER();
  (void)recvbuff;  // only meaningful on the root
  return submit(gw_api, {comm, count, datatype, op, root, sendbuff, stream, false});
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  GWSIM_ENTER();
  return submit(gw_api, {comm, count, datatype, -1, peer, sendbuff, stream, true});
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  GWSIM_ENTER();
  return submit(gw_api, {comm, count, datatype, -1, peer, recvbuff, stream, true});
}

ncclResult_t ncclGroupStart(void) {
  GWSIM_ENTER();
  ++t_group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  GWSIM_ENTER();
  if (t_group_depth == 0) return ncclInvalidUsage;
  if (--t_group_depth > 0) return ncclSuccess;
  std::vector<Pending> deferred;
  deferred.swap(t_deferred);
  ncclResult_t first_error = ncclSuccess;
  // One rendezvous per communicator, in the order the group first used them.
  while (!deferred.empty()) {
    const ncclComm_t comm = deferred.front().comm;
    std::vector<Pending> mine, rest;
    for (const Pending& p : deferred) (p.comm == comm ? mine : rest).push_back(p);
    deferred.swap(rest);
    // A group with a single send or receive is just that point-to-point call.
    if (mine.size() > 1) {
      for (Pending& p : mine) p.peer = kNoPeer;
    }
    Comm* c = Registry::get().find(comm);
    const ncclResult_t r = c ? run(gw_api, c, mine) : ncclInvalidArgument;
    if (first_error == ncclSuccess) first_error = r;
  }
  return first_error;
}

}  // extern "C"
