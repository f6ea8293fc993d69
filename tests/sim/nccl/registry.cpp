// SPDX-License-Identifier: Apache-2.0
#include "nccl/registry.hpp"

#include <sstream>

#include "device/device.hpp"

namespace gwsim::nccl {

Registry& Registry::get() {
  // Never destroyed: the truth file is rendered from an atexit handler, after static destructors
  // of this library could otherwise have run.
  static Registry* const registry = [] {
    auto* r = new Registry();
    Device::get().stats().add_section("nccl", [r] { return r->render_json(); });
    return r;
  }();
  return *registry;
}

ncclComm_t Registry::add(std::unique_ptr<Comm> comm) {
  auto record = std::make_shared<CommRecord>();
  record->rank = comm->rank();
  record->nranks = comm->nranks();
  const auto handle = reinterpret_cast<ncclComm_t>(comm.get());
  std::lock_guard lk(mu_);
  records_.push_back(record);
  live_[handle] = Entry{std::move(comm), std::move(record)};
  return handle;
}

Comm* Registry::find(ncclComm_t handle) {
  std::lock_guard lk(mu_);
  const auto it = live_.find(handle);
  return it == live_.end() ? nullptr : it->second.comm.get();
}

bool Registry::remove(ncclComm_t handle) {
  std::lock_guard lk(mu_);
  const auto it = live_.find(handle);
  if (it == live_.end()) return false;
  it->second.record->destroyed = true;
  live_.erase(it);
  return true;
}

void Registry::note(ncclComm_t handle, uint64_t collectives, uint64_t bytes,
                    uint64_t barrier_wait_ns, uint64_t straggle_ns) {
  std::lock_guard lk(mu_);
  const auto it = live_.find(handle);
  if (it == live_.end()) return;
  CommRecord& r = *it->second.record;
  r.collectives += collectives;
  r.bytes += bytes;
  r.barrier_wait_ns += barrier_wait_ns;
  r.straggle_ns += straggle_ns;
}

std::string Registry::render_json() {
  std::lock_guard lk(mu_);
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < records_.size(); ++i) {
    const CommRecord& r = *records_[i];
    o << (i ? ", " : "") << "{\"rank\": " << r.rank << ", \"nranks\": " << r.nranks
      << ", \"collectives\": " << r.collectives << ", \"bytes\": " << r.bytes
      << ", \"barrier_wait_ns\": " << r.barrier_wait_ns << ", \"straggle_ns\": " << r.straggle_ns
      << ", \"destroyed\": " << (r.destroyed ? "true" : "false") << "}";
  }
  o << "]";
  return o.str();
}

uint64_t dtype_size(ncclDataType_t dt) {
  switch (dt) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
  }
  return 0;
}

}  // namespace gwsim::nccl
