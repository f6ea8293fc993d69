// SPDX-License-Identifier: Apache-2.0
// The communicators of this process: validates ncclComm_t handles (a stale or bogus handle is an
// error, never a crash) and keeps per-communicator ground truth for the GWSIM_TRUTH file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nccl/comm.hpp"

namespace gwsim::nccl {

struct CommRecord {
  int rank = 0;
  int nranks = 0;
  uint64_t collectives = 0;
  uint64_t bytes = 0;
  uint64_t barrier_wait_ns = 0;  // time this rank waited for the others
  uint64_t straggle_ns = 0;      // delay injected on this rank (GWSIM_STRAGGLE_*)
  bool destroyed = false;
};

class Registry {
 public:
  static Registry& get();

  ncclComm_t add(std::unique_ptr<Comm> comm);
  // nullptr for an unknown handle.
  Comm* find(ncclComm_t handle);
  bool remove(ncclComm_t handle);
  // Adds to the communicator's record (no-op for an unknown handle).
  void note(ncclComm_t handle, uint64_t collectives, uint64_t bytes, uint64_t barrier_wait_ns,
            uint64_t straggle_ns);

  // The "nccl" member of the truth file: one object per communicator ever created.
  std::string render_json();

 private:
  struct Entry {
    std::unique_ptr<Comm> comm;
    std::shared_ptr<CommRecord> record;
  };

  std::mutex mu_;
  std::map<ncclComm_t, Entry> live_;
  std::vector<std::shared_ptr<CommRecord>> records_;
};

// Size of an element of `dt`; 0 for an invalid type.
uint64_t dtype_size(ncclDataType_t dt);

}  // namespace gwsim::nccl
