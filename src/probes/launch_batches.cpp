// SPDX-License-Identifier: Apache-2.0
// The launch batches left in task storage at stop (bpf/api.bpf.h, events.h gw_launch_batch): a
// thread that keeps running without calling another API, leaving the CPU or exiting has written
// nothing of its last launches yet. Once every probe is detached, nothing changes the batches, so
// a task iterator (gw_open_launches) writes each traced thread's open batch, and they go to the
// reader as if they had come through the ring.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gpuwhy/abi/abi.hpp"
#include "gpuwhy_bpf.skel.h"
#include "probes/probes.hpp"

namespace gpuwhy::probes {

int Probes::thread_calls_map_fd() const { return bpf_map__fd(skel_->maps.gw_thread_calls); }

size_t Probes::thread_calls_value_size() const {
  return bpf_map__value_size(skel_->maps.gw_thread_calls);
}

Result<std::vector<std::vector<uint8_t>>> Probes::open_launch_batches() const {
  bpf_link* link = bpf_program__attach_iter(skel_->progs.gw_open_launches, nullptr);
  constexpr const char* kStart = "cannot start the task iterator that reads open launch batches";
  if (!link) return errno_error(kStart, errno);
  const int fd = bpf_iter_create(bpf_link__fd(link));
  if (fd < 0) {
    const int e = errno;
    bpf_link__destroy(link);
    return errno_error(kStart, e);
  }
  // The iterator writes whole gw_launch_batch structs, one per thread that holds launches.
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> chunk(64 * sizeof(gw_launch_batch));
  int err = 0;
  for (;;) {
    const ssize_t n = read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + n);
  }
  close(fd);
  bpf_link__destroy(link);
  if (err) return errno_error("reading the launch batches open at stop failed", err);

  std::vector<std::vector<uint8_t>> out;
  for (size_t off = 0; off + sizeof(gw_launch_batch) <= bytes.size();
       off += sizeof(gw_launch_batch)) {
    gw_launch_batch b;
    std::memcpy(&b, bytes.data() + off, sizeof(b));
    if (b.n == 0 || b.n > GW_LAUNCH_BATCH || b.hdr.size > sizeof(b)) continue;
    const auto* p = bytes.data() + off;
    out.emplace_back(p, p + b.hdr.size);
  }
  return out;
}

}  // namespace gpuwhy::probes
