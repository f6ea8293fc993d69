// SPDX-License-Identifier: Apache-2.0
// The shipped views against small hand-built traces whose answers are worked out by hand.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "store/event_tables.hpp"
#include "store_fixture.hpp"

namespace gpuwhy {
namespace {

using namespace gpuwhy::testing;
using Rows = std::vector<std::vector<std::string>>;

// Thread 11 of process 10, times relative to kStart (ns):
//   call A [1000, 2000)   call B [3000, 3100)   call C [4000, 4100)
//   I0 [ 100,  200) blocked,   waker irq/nvidia      (before A: no overlap)
//   I1 [ 500, 1200) preempted, next kworker/2:1      (straddles A's start: 200 inside)
//   I2 [1300, 1450) blocked,   waker irq/nvidia, runq 30   (150 inside, runq 30)
//   I3 [1500, 1600) preempted, next python3          (100)
//   I4 [1700, 1750) preempted, next kworker/2:1      (50)
//   I5 [1900, 2500) blocked,   waker nccl-proxy, runq 100 (straddles A's end: 100 inside,
//                                                          its runq tail is after A: 0)
//   I6 [2900, 3300) blocked,   waker nccl-proxy, runq 20  (covers all of B: 100)
//   I7 [4100, 4200) preempted, next python3          (starts as C ends: no overlap)
// Thread 12 is off-CPU [1000, 1900) preempted by kworker/2:1: another thread, never counted.
class StoreViews : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("t.db");
    auto w = make_writer(path_);
    ASSERT_TRUE(w);
    ApiCall a = call("cudaStreamSynchronize", kStart + 1000, 1000, 10, 11);
    ApiCall b = call("cudaMemcpyAsync", kStart + 3000, 100, 10, 11);
    b.f.op = 2;  // device_to_host
    b.f.bytes = 4096;
    ApiCall c = call("ncclAllReduce", kStart + 4000, 100, 10, 11);
    c.f.op = 0;  // ncclSum: not a copy direction
    a.stack_id = 5;  // A and B from one call site, C from none the stack names
    b.stack_id = 5;
    c.stack_id = 6;
    const std::vector<Event> events{
        a,
        b,
        c,
        offcpu(kStart + 100, 100, 10, 11, false, "", "irq/nvidia", 0),
        offcpu(kStart + 500, 700, 10, 11, true, "kworker/2:1", ""),
        offcpu(kStart + 1000, 900, 10, 12, true, "kworker/2:1", ""),
        offcpu(kStart + 1300, 150, 10, 11, false, "swapper/2", "irq/nvidia", 30),
        offcpu(kStart + 1500, 100, 10, 11, true, "python3", ""),
        offcpu(kStart + 1700, 50, 10, 11, true, "kworker/2:1", ""),
        offcpu(kStart + 1900, 600, 10, 11, false, "swapper/2", "nccl-proxy", 100),
        offcpu(kStart + 2900, 400, 10, 11, false, "swapper/2", "nccl-proxy", 20),
        offcpu(kStart + 4100, 100, 10, 11, true, "python3", ""),
        // CPU samples of thread 11, 5 ms each: three in write (nr 1), one in kernel code outside
        // a syscall, two in its own code; one of thread 12, in an unnamed syscall 999.
        CpuSample{kStart + 5000, 5'000'000, 10, 11, 0, 1, true},
        CpuSample{kStart + 5100, 5'000'000, 10, 11, 0, 1, true},
        CpuSample{kStart + 5200, 5'000'000, 10, 11, 1, 1, true},
        CpuSample{kStart + 5300, 5'000'000, 10, 11, 1, -1, true},
        CpuSample{kStart + 5400, 5'000'000, 10, 11, 0, -1, false},
        CpuSample{kStart + 5500, 5'000'000, 10, 11, 0, -1, false},
        CpuSample{kStart + 5600, 5'000'000, 10, 12, 1, 999, true},
    };
    ASSERT_TRUE(w->write_batch(events).ok());
    ASSERT_TRUE(w->upsert_thread(10, 11, "trainer", kStart).ok());
    const std::vector<store::StackFrameRow> frames{
        {5, 0, 0x7f00, "/usr/lib/libcudart.so.13", 0x1000, "cudaStreamSynchronize+0x0", false},
        {5, 1, 0x5500, "/opt/app/train", 0x200, "train_step+0x20", true},
        {5, 2, 0x5600, "/opt/app/train", 0x300, "main+0x10", false},
        {6, 0, 0x7f10, "/usr/lib/libnccl.so.2", 0x2000, "ncclAllReduce+0x0", false}};
    ASSERT_TRUE(w->write_stack_frames(frames).ok());
    const std::vector<store::LossCount> losses{{"bpf", "events_ring_full", 5},
                                               {"reader", "decode_error", 2}};
    ASSERT_TRUE(w->set_counts(losses, {}).ok());
    if (finish_) {
      ASSERT_TRUE(w->finish(kStart + 10'000).ok());
    } else {
      // A trace cut short after an idle second: the writer wrote the open chunks once they were
      // kChunkFlushAgeNs old, then died without finish().
      std::this_thread::sleep_for(std::chrono::nanoseconds(store::kChunkFlushAgeNs) +
                                  std::chrono::milliseconds(50));
      ASSERT_TRUE(w->flush_due().ok());
    }
    w.reset();
    file_ = open_trace(path_);
    ASSERT_TRUE(file_);
  }

  bool finish_ = true;
  TempDir dir_;
  std::string path_;
  std::unique_ptr<store::TraceFile> file_;
};

constexpr const char* kPerCall =
    "SELECT ts - 1700000000000000000, dur, name, category, oncpu_ns, offcpu_ns, preempted_ns, "
    "blocked_ns, runq_ns, intervals, top_preemptor, top_preemptor_ns, top_waker, top_waker_ns "
    "FROM v_call_offcpu ORDER BY ts";
const Rows kPerCallExpected{
    {"1000", "1000", "cudaStreamSynchronize", "sync", "400", "600", "350", "250", "380", "5",
     "kworker/2:1", "250", "irq/nvidia", "150"},
    {"3000", "100", "cudaMemcpyAsync", "copy", "0", "100", "0", "100", "0", "1", "NULL", "NULL",
     "nccl-proxy", "100"},
    {"4000", "100", "ncclAllReduce", "collective", "100", "0", "0", "0", "0", "0", "NULL", "NULL",
     "NULL", "NULL"},
};

TEST_F(StoreViews, CallOffCpuClipsIntervalsToTheCall) {
  EXPECT_EQ(rows(*file_, kPerCall), kPerCallExpected);
}

TEST_F(StoreViews, CallOffCpuIntervalsListsEachClippedInterval) {
  EXPECT_EQ(rows(*file_,
                 "SELECT i.ts - 1700000000000000000, ns, runq_ns, preempted, next_task, "
                 "waker_task FROM v_call_offcpu_intervals i JOIN api_calls c ON "
                 "c.rowid = i.call_id WHERE c.ts = 1700000000000001000 ORDER BY i.ts"),
            (Rows{{"500", "200", "200", "1", "kworker/2:1", "NULL"},
                  {"1300", "150", "30", "0", "swapper/2", "irq/nvidia"},
                  {"1500", "100", "100", "1", "python3", "NULL"},
                  {"1700", "50", "50", "1", "kworker/2:1", "NULL"},
                  {"1900", "100", "0", "0", "swapper/2", "nccl-proxy"}}));
}

TEST_F(StoreViews, ThreadOffCpuTotalsAndCulprits) {
  EXPECT_EQ(rows(*file_,
                 "SELECT pid, tid, comm, offcpu_ns, preempted_ns, blocked_ns, runq_ns, "
                 "intervals, top_preemptor, top_preemptor_ns, top_waker, top_waker_ns "
                 "FROM v_thread_offcpu ORDER BY tid"),
            (Rows{{"10", "11", "trainer", "2200", "950", "1250", "1100", "8", "kworker/2:1", "750",
                   "nccl-proxy", "1000"},
                  {"10", "12", "NULL", "900", "900", "0", "900", "1", "kworker/2:1", "900", "NULL",
                   "NULL"}}));
}

TEST_F(StoreViews, ThreadCpuSaysWhereEachThreadsCpuTimeWent) {
  EXPECT_EQ(rows(*file_,
                 "SELECT pid, tid, comm, what, samples, est_ns, share FROM v_thread_cpu "
                 "ORDER BY tid, samples DESC, what"),
            (Rows{{"10", "11", "trainer", "write", "3", "15000000", "0.5"},
                  {"10", "11", "trainer", "user", "2", "10000000", "0.3333"},
                  {"10", "11", "trainer", "kernel", "1", "5000000", "0.1667"},
                  {"10", "12", "NULL", "syscall 999", "1", "5000000", "1.0"}}));
}

TEST_F(StoreViews, CallSitesGroupCallsByWhereTheyWereMade) {
  EXPECT_EQ(rows(*file_, "SELECT pid, name, symbol, module, calls, dur_ns, max_dur_ns "
                         "FROM v_call_sites ORDER BY name"),
            (Rows{{"10", "cudaMemcpyAsync", "train_step+0x20", "/opt/app/train", "1", "100", "100"},
                  {"10", "cudaStreamSynchronize", "train_step+0x20", "/opt/app/train", "1", "1000",
                   "1000"}}));
}

TEST_F(StoreViews, CallsNameDirectionAndUnits) {
  EXPECT_EQ(
      rows(*file_,
           "SELECT t_ms, dur_us, name, family, category, bytes, op, direction "
           "FROM v_calls ORDER BY ts"),
      (Rows{{"0.001", "1.0", "cudaStreamSynchronize", "cudart", "sync", "NULL", "NULL", "NULL"},
            {"0.003", "0.1", "cudaMemcpyAsync", "cudart", "copy", "4096", "2", "device_to_host"},
            {"0.004", "0.1", "ncclAllReduce", "nccl", "collective", "0", "0", "NULL"}}));
  // call_id joins v_calls and v_call_offcpu.
  EXPECT_EQ(scalar(*file_,
                   "SELECT count(*) FROM v_calls c JOIN v_call_offcpu o USING (call_id) "
                   "WHERE c.ts = o.ts"),
            "3");
}

TEST_F(StoreViews, LossesWithTotal) {
  EXPECT_EQ(rows(*file_, "SELECT * FROM v_losses"), (Rows{{"bpf", "events_ring_full", "5"},
                                                          {"reader", "decode_error", "2"},
                                                          {"total", "all", "7"}}));
}

// The same answers from a trace whose writer never finished.
class StoreViewsUnfinished : public StoreViews {
 protected:
  void SetUp() override {
    finish_ = false;
    StoreViews::SetUp();
  }
};

TEST_F(StoreViewsUnfinished, CallOffCpuSameAnswer) {
  ASSERT_EQ(file_->status(), "recording");
  EXPECT_EQ(rows(*file_, kPerCall), kPerCallExpected);
  // offcpu_id is the interval's rowid: it finds the same interval again.
  EXPECT_EQ(scalar(*file_,
                   "SELECT count(*) FROM v_call_offcpu_intervals i JOIN offcpu o "
                   "ON o.rowid = i.offcpu_id AND o.ts = i.ts"),
            "6");
}

TEST(StoreViewsThroughput, OneRowPerSecondWithZerosInGaps) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  const int64_t s = 1'000'000'000;
  ApiCall copy = call("cudaMemcpy", kStart + s + 5, 10, 10, 11);
  copy.f.bytes = 100;
  const std::vector<Event> events{
      call("cudaLaunchKernel", kStart + 1, 20, 10, 11),
      call("cudaLaunchKernel", kStart + 2, 30, 10, 11),
      call("cudaLaunchKernel", kStart + s + 1, 40, 10, 11),
      copy,
      call("cudaLaunchKernel", kStart + 3 * s + 1, 50, 10, 11),
      call("cudaLaunchKernel", kStart + 7, 60, 20, 21),
  };
  ASSERT_TRUE(w->write_batch(events).ok());
  ASSERT_TRUE(w->finish(kStart + 4 * s).ok());
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(rows(*f,
                 "SELECT pid, category, second, bucket_ts - 1700000000000000000, calls, "
                 "busy_ns, bytes FROM v_throughput"),
            (Rows{{"10", "copy", "1", "1000000000", "1", "10", "100"},
                  {"10", "launch", "0", "0", "2", "50", "0"},
                  {"10", "launch", "1", "1000000000", "1", "40", "0"},
                  {"10", "launch", "2", "2000000000", "0", "0", "0"},
                  {"10", "launch", "3", "3000000000", "1", "50", "0"},
                  {"20", "launch", "0", "0", "1", "60", "0"}}));
  EXPECT_EQ(rows(*f, "SELECT * FROM v_losses"), (Rows{{"total", "all", "0"}}));
}

TEST(StoreViewsFiles, EveryViewFileIsOneDocumentedCreateView) {
  const auto views = store::shipped_views();
  std::vector<std::string> names;
  for (const auto& v : views) {
    names.push_back(v.name);
    EXPECT_FALSE(v.description.empty()) << v.name;
    EXPECT_EQ(v.description.find("SPDX"), std::string::npos) << v.name;
    EXPECT_NE(v.sql.find("CREATE VIEW " + v.name + " AS"), std::string::npos) << v.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"v_call_offcpu", "v_call_offcpu_intervals",
                                             "v_call_sites", "v_calls",
                                             "v_losses", "v_op_totals", "v_python_sites",
                                             "v_thread_cpu",
                                             "v_thread_offcpu", "v_throughput"}));
}

}  // namespace
}  // namespace gpuwhy
