// SPDX-License-Identifier: Apache-2.0
// The launch batches left in task storage at stop (bpf/api.bpf.h, events.h gw_launch_batch): a
// thread that keeps running without calling another API, leaving the CPU or exiting has written
// nothing of its last launches yet. Once every probe is detached, nothing changes the batches, so
// user space reads each traced thread's through its pidfd (the task-storage map's key from user
// space) and hands them to the reader as if they had come through the ring.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "discover/discover.hpp"
#include "gpuwhy/abi/abi.hpp"
#include "gpuwhy_bpf.skel.h"
#include "probes/probes.hpp"

namespace gpuwhy::probes {
namespace {

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL  // Linux 6.9: the pidfd names the thread, not its process
#endif

int pidfd_of_thread(pid_t tid) {
  return static_cast<int>(syscall(SYS_pidfd_open, tid, PIDFD_THREAD));
}

}  // namespace

int probe_thread_pidfd() {
  const int fd = pidfd_of_thread(static_cast<pid_t>(syscall(SYS_gettid)));
  if (fd < 0) return -errno;
  close(fd);
  return 1;
}

int Probes::thread_calls_map_fd() const { return bpf_map__fd(skel_->maps.gw_thread_calls); }

size_t Probes::thread_calls_value_size() const {
  return bpf_map__value_size(skel_->maps.gw_thread_calls);
}

std::vector<std::vector<uint8_t>> Probes::open_launch_batches() const {
  std::vector<std::vector<uint8_t>> out;
  bpf_map* calls = skel_->maps.gw_thread_calls;
  std::vector<uint8_t> value(bpf_map__value_size(calls));
  if (value.size() < sizeof(gw_launch_batch)) return out;
  uint32_t key = 0, next = 0;
  const uint32_t* prev = nullptr;
  while (bpf_map__get_next_key(skel_->maps.gw_tracked, prev, &next, sizeof(next)) == 0) {
    key = next;
    prev = &key;
    for (uint32_t tid : discover::list_threads(key)) {
      const int fd = pidfd_of_thread(static_cast<pid_t>(tid));
      if (fd < 0) continue;  // exited since: its exit wrote the batch
      const int rc = bpf_map__lookup_elem(calls, &fd, sizeof(fd), value.data(), value.size(), 0);
      close(fd);
      gw_launch_batch b;
      std::memcpy(&b, value.data(), sizeof(b));
      if (rc != 0 || b.n == 0 || b.n > GW_LAUNCH_BATCH) continue;
      b.hdr.kind = GW_EV_LAUNCH_BATCH;
      b.hdr.size = static_cast<uint16_t>(offsetof(gw_launch_batch, items) +
                                         b.n * sizeof(gw_launch_item));
      b.hdr.pid = key;
      b.hdr.tid = tid;
      b.hdr.cpu = 0;
      b.hdr.flags = 0;
      const auto* bytes = reinterpret_cast<const uint8_t*>(&b);
      out.emplace_back(bytes, bytes + b.hdr.size);
    }
  }
  return out;
}

}  // namespace gpuwhy::probes
