// SPDX-License-Identifier: Apache-2.0
#include "nccl/comm.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstring>
#include <random>

#include "gwsim/clock.hpp"

namespace gwsim::nccl {

// Generation-counting barrier: the last of n arrivals resets the count and bumps the generation,
// which is the futex word the others sleep on. Lives in shared memory, so the futex calls are the
// shared (not FUTEX_PRIVATE) kind.
struct BarrierWord {
  std::atomic<uint32_t> arrived;
  std::atomic<uint32_t> generation;
};

struct SharedState {
  uint64_t magic;
  std::atomic<uint32_t> nranks;  // set by the first rank to join
  std::atomic<int32_t> rank_pid[kMaxRanks];
  BarrierWord all;
  BarrierWord pairs[kMaxRanks][kMaxRanks];  // [low rank][high rank]
};

static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be plain words");

namespace {

constexpr uint64_t kMagic = 0x67777369'6d6e636cull;  // "gwsimncl"
constexpr char kIdPrefix[] = "gwsim-nccl:";

long futex(std::atomic<uint32_t>* word, int op, uint32_t val, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val, timeout, nullptr, 0);
}

ncclResult_t arrive_and_wait(BarrierWord* b, uint32_t n, uint64_t timeout_ns, uint64_t* waited_ns) {
  const uint32_t gen = b->generation.load(std::memory_order_acquire);
  if (b->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
    b->arrived.store(0, std::memory_order_relaxed);
    b->generation.fetch_add(1, std::memory_order_release);
    futex(&b->generation, FUTEX_WAKE, INT_MAX, nullptr);
    return ncclSuccess;
  }
  const uint64_t t0 = now_ns();
  const uint64_t deadline = t0 + timeout_ns;
  ncclResult_t r = ncclSuccess;
  while (b->generation.load(std::memory_order_acquire) == gen) {
    const uint64_t now = now_ns();
    if (now >= deadline) {
      std::fprintf(stderr, "gwsim: NCCL barrier timed out (a rank never arrived)\n");
      r = ncclSystemError;
      break;
    }
    const uint64_t left = deadline - now;
    const timespec ts{static_cast<time_t>(left / kNsPerSec), static_cast<long>(left % kNsPerSec)};
    futex(&b->generation, FUTEX_WAIT, gen, &ts);
  }
  *waited_ns += now_ns() - t0;
  return r;
}

// The segment name carried in the id, or nullptr when the id is not one of ours.
const char* segment_name(const ncclUniqueId& id) {
  if (std::strncmp(id.internal, kIdPrefix, sizeof kIdPrefix - 1) != 0) return nullptr;
  if (std::memchr(id.internal, '\0', sizeof id.internal) == nullptr) return nullptr;
  return id.internal + sizeof kIdPrefix - 1;
}

}  // namespace

ncclResult_t Comm::create_id(ncclUniqueId* id) {
  static std::atomic<uint32_t> counter{0};
  std::random_device rd;
  char name[64];
  std::snprintf(name, sizeof name, "/gwsim-nccl-%d-%u-%08x", getpid(), counter.fetch_add(1),
                static_cast<unsigned>(rd()));
  const int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return ncclSystemError;
  // ftruncate zero-fills: every counter starts at 0, which is the barriers' initial state.
  const bool ok = ftruncate(fd, sizeof(SharedState)) == 0;
  void* p = ok ? mmap(nullptr, sizeof(SharedState), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
               : MAP_FAILED;
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name);
    return ncclSystemError;
  }
  static_cast<SharedState*>(p)->magic = kMagic;
  munmap(p, sizeof(SharedState));
  std::memset(id->internal, 0, sizeof id->internal);
  std::snprintf(id->internal, sizeof id->internal, "%s%s", kIdPrefix, name);
  return ncclSuccess;
}

ncclResult_t Comm::join(const ncclUniqueId& id, int nranks, int rank, uint64_t timeout_ns,
                        Comm** out, uint64_t* waited_ns) {
  const char* name = segment_name(id);
  if (name == nullptr) return ncclInvalidArgument;
  const int fd = shm_open(name, O_RDWR, 0);
  if (fd < 0) return ncclSystemError;
  void* p = mmap(nullptr, sizeof(SharedState), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return ncclSystemError;
  auto* shared = static_cast<SharedState*>(p);
  auto give_up = [&](ncclResult_t r) {
    munmap(p, sizeof(SharedState));
    return r;
  };
  if (shared->magic != kMagic) return give_up(ncclInvalidArgument);
  uint32_t expected = 0;
  if (!shared->nranks.compare_exchange_strong(expected, static_cast<uint32_t>(nranks)) &&
      expected != static_cast<uint32_t>(nranks)) {
    return give_up(ncclInvalidArgument);  // ranks disagree on the communicator size
  }
  int32_t no_pid = 0;
  if (!shared->rank_pid[rank].compare_exchange_strong(no_pid, getpid())) {
    return give_up(ncclInvalidUsage);  // two processes claim the same rank
  }
  const ncclResult_t r = arrive_and_wait(&shared->all, nranks, timeout_ns, waited_ns);
  if (r != ncclSuccess) return give_up(r);
  // Everyone has it mapped now; the name is no longer needed, and nothing leaks in /dev/shm.
  shm_unlink(name);
  *out = new Comm(shared, rank, nranks);
  return ncclSuccess;
}

Comm::~Comm() { munmap(shared_, sizeof(SharedState)); }

ncclResult_t Comm::barrier(uint64_t timeout_ns, uint64_t* waited_ns) {
  return arrive_and_wait(&shared_->all, nranks_, timeout_ns, waited_ns);
}

ncclResult_t Comm::pair_barrier(int peer, uint64_t timeout_ns, uint64_t* waited_ns) {
  if (peer == rank_) return ncclSuccess;
  BarrierWord* b = &shared_->pairs[std::min(rank_, peer)][std::max(rank_, peer)];
  return arrive_and_wait(b, 2, timeout_ns, waited_ns);
}

}  // namespace gwsim::nccl
