// SPDX-License-Identifier: Apache-2.0
// A simulated NCCL communicator: ranks are separate processes that meet in a POSIX shared-memory
// segment named by the ncclUniqueId. A collective is a barrier across the ranks (a real, blocking
// futex wait, woken by the last rank to arrive) followed by a transfer on the GPU.
#pragma once

#include <cstdint>

#include "gwsim/nccl.h"

namespace gwsim::nccl {

inline constexpr int kMaxRanks = 64;

struct SharedState;

class Comm {
 public:
  // Creates the shared segment and writes its name into `id`.
  static ncclResult_t create_id(ncclUniqueId* id);
  // Joins the communicator named by `id` as `rank` of `nranks`, blocking until every rank has
  // joined; the time spent waiting is added to *waited_ns.
  static ncclResult_t join(const ncclUniqueId& id, int nranks, int rank, uint64_t timeout_ns,
                           Comm** out, uint64_t* waited_ns);

  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  // Returns once every rank has entered the same barrier (timeout: ncclSystemError).
  ncclResult_t barrier(uint64_t timeout_ns, uint64_t* waited_ns);
  // Returns once `peer` has entered its pair barrier with this rank (point-to-point rendezvous).
  ncclResult_t pair_barrier(int peer, uint64_t timeout_ns, uint64_t* waited_ns);

 private:
  Comm(SharedState* shared, int rank, int nranks) : shared_(shared), rank_(rank), nranks_(nranks) {}

  SharedState* shared_;
  int rank_;
  int nranks_;
};

}  // namespace gwsim::nccl
