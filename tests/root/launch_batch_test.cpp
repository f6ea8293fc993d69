// SPDX-License-Identifier: Apache-2.0
// The launches a thread still holds in its batch when tracing stops (bpf/api.bpf.h): the agent
// reads them from the thread's task storage with a task iterator, after the probes are gone.
//
// A thread that really launched is nearly always switched out (which writes its batch) before an
// agent on a 2-CPU machine finishes stopping, so the end-to-end tests seldom reach this path; here
// the batch is placed in a sleeping child's task storage from user space (through the map, keyed
// by the thread's pidfd) once the probes are detached (so that no switch-out or exec of the child
// writes it first), and Probes::open_launch_batches must hand it back as the record the ring would
// have carried, once.
#include <bpf/bpf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <memory>
#include <variant>
#include <vector>

#include "gpuwhy/abi/abi.hpp"
#include "probes/probes.hpp"
#include "reader/decode.hpp"
#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

// A pidfd naming thread `tid` (PIDFD_THREAD, Linux 6.9): the task-storage map's key from user
// space. -1 with errno set when the kernel has none.
int thread_pidfd(pid_t tid) { return static_cast<int>(syscall(SYS_pidfd_open, tid, PIDFD_THREAD)); }

// Places `b` as the open batch of thread `tid`'s task storage.
void place_batch(const probes::Probes& p, pid_t tid, const gw_launch_batch& b) {
  std::vector<uint8_t> value(p.thread_calls_value_size(), 0);
  ASSERT_GE(value.size(), sizeof(b));
  std::memcpy(value.data(), &b, sizeof(b));
  const int fd = thread_pidfd(tid);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  EXPECT_EQ(bpf_map_update_elem(p.thread_calls_map_fd(), &fd, value.data(), BPF_NOEXIST), 0)
      << std::strerror(errno);
  close(fd);
}

// The probes loaded with launch batching on, for tests that place batches (skipped where this
// kernel cannot key the map from user space).
class LaunchBatches : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    const int fd = thread_pidfd(static_cast<pid_t>(syscall(SYS_gettid)));
    if (fd < 0) GTEST_SKIP() << "placing a batch needs thread pidfds (Linux 6.9); the agent does not";
    close(fd);
    probes::ProbeConfig cfg;
    cfg.launch_batch = true;
    cfg.launch_read_mask = 63;
    auto loaded = probes::Probes::load(cfg);
    ASSERT_TRUE(loaded) << loaded.error().line();
    p = std::move(loaded.value());
  }
  std::unique_ptr<probes::Probes> p;
  TempDir dir;
};

TEST_F(LaunchBatches, AnOpenBatchIsReadFromItsThreadAtStop) {
  Child holder({"/bin/sleep", "30"}, dir.path), empty({"/bin/sleep", "30"}, dir.path),
      untraced({"/bin/sleep", "30"}, dir.path);
  ASSERT_TRUE(p->track_pid(holder.pid()));
  ASSERT_TRUE(p->track_pid(empty.pid()));

  // Three launches, the second an outer launch that began before the batch's first.
  gw_launch_batch b{};
  b.hdr.ts_ns = 5'000'000;
  b.n = 3;
  const int32_t starts[] = {0, -700, 1'200};
  for (uint32_t i = 0; i < b.n; ++i)
    b.items[i] = {0x7000 + i, starts[i], 40 + i, static_cast<uint16_t>(1 + i % 2), 9, 0, 0, -1, 0};
  p->detach_all();
  place_batch(*p, holder.pid(), b);
  gw_launch_batch none{};
  none.hdr.ts_ns = 1;
  place_batch(*p, empty.pid(), none);  // a thread with storage and no launches left
  place_batch(*p, untraced.pid(), b);  // not a traced process: never looked at

  auto records = p->open_launch_batches();
  ASSERT_TRUE(records) << records.error().line();
  ASSERT_EQ(records->size(), 1u);
  std::vector<Event> calls;
  const ClockConverter clock(1'000'000'000);
  ASSERT_EQ(reader::decode_launch_batch((*records)[0].data(), (*records)[0].size(), clock, calls),
            reader::DecodeStatus::Ok);
  ASSERT_EQ(calls.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    const auto* c = std::get_if<ApiCall>(&calls[i]);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->pid, static_cast<uint32_t>(holder.pid()));
    EXPECT_EQ(c->tid, static_cast<uint32_t>(holder.pid()));
    EXPECT_EQ(c->ts, 1'000'000'000 + 5'000'000 + starts[i]);
    EXPECT_EQ(c->dur, 40 + i);
    EXPECT_EQ(c->api, 1 + i % 2);
    EXPECT_EQ(c->lib, 9);
    EXPECT_EQ(c->f.addr, 0x7000u + i);
    EXPECT_EQ(c->flags, GW_FLAG_COMPACT | GW_FLAG_ARGS_SAMPLED_OUT);
  }
  // Written once: a second read finds the batch empty.
  auto again = p->open_launch_batches();
  ASSERT_TRUE(again) << again.error().line();
  EXPECT_TRUE(again->empty());
  for (Child* c : {&holder, &empty, &untraced}) c->stop(9);
}

// More open batches than the iterator's output buffer holds (32 KiB: ~31 batches): the iterator
// stops at the full buffer and runs the task that did not fit again on the next read, so every
// batch must come back exactly once.
TEST_F(LaunchBatches, MoreOpenBatchesThanTheIteratorBufferHoldsAllComeBackOnce) {
  constexpr int kThreads = 80;
  std::vector<std::unique_ptr<Child>> children;
  for (int i = 0; i < kThreads; ++i) {
    children.push_back(std::make_unique<Child>(std::vector<std::string>{"/bin/sleep", "30"},
                                               dir.path));
    ASSERT_TRUE(p->track_pid(children.back()->pid()));
  }
  p->detach_all();
  std::map<uint32_t, uint32_t> launches_of;  // tid -> launches placed
  for (int i = 0; i < kThreads; ++i) {
    gw_launch_batch b{};
    b.hdr.ts_ns = 1'000 + i;
    b.n = 1 + i % GW_LAUNCH_BATCH;
    for (uint32_t k = 0; k < b.n; ++k) b.items[k] = {0x9000 + k, 0, 1, 1, 1, 0, 0, -1, 0};
    place_batch(*p, children[i]->pid(), b);
    launches_of[children[i]->pid()] = b.n;
  }

  auto records = p->open_launch_batches();
  ASSERT_TRUE(records) << records.error().line();
  EXPECT_EQ(records->size(), static_cast<size_t>(kThreads));
  std::map<uint32_t, uint32_t> seen;
  const ClockConverter clock(0);
  for (const auto& r : *records) {
    std::vector<Event> calls;
    ASSERT_EQ(reader::decode_launch_batch(r.data(), r.size(), clock, calls),
              reader::DecodeStatus::Ok);
    ASSERT_FALSE(calls.empty());
    const auto* c = std::get_if<ApiCall>(&calls[0]);
    ASSERT_TRUE(c);
    seen[c->tid] += static_cast<uint32_t>(calls.size());
  }
  EXPECT_EQ(seen, launches_of);
  for (auto& c : children) c->stop(9);
}

}  // namespace
}  // namespace gpuwhy::testing
