// SPDX-License-Identifier: Apache-2.0
// The per-call joins: interval clipping, the split of off-CPU time, queued work ahead of waits.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "analysis/joins.hpp"
#include "analysis_test_util.hpp"

namespace gpuwhy::analysis {
namespace {

using testing::kMs;
using testing::kT0;
using testing::kUs;
using testing::RowsBuilder;

TEST(AnalysisJoin, OverlapOfIntervals) {
  EXPECT_EQ(overlap_ns(0, 10, 5, 20), 5);
  EXPECT_EQ(overlap_ns(5, 20, 0, 10), 5);
  EXPECT_EQ(overlap_ns(0, 10, 10, 20), 0);  // touching is not overlapping
  EXPECT_EQ(overlap_ns(0, 10, 2, 3), 1);
  EXPECT_EQ(overlap_ns(0, 10, 20, 30), 0);
}

TEST(AnalysisJoin, ClipsAPreemptionToTheCall) {
  OffCpuRow o{100, 50, 50, 1, 1, 2, 2, 0, true};  // [100, 150)
  const OffCpuParts inside = clip_offcpu(o, 120, 200);
  EXPECT_EQ(inside.preempted, 30);
  EXPECT_EQ(inside.blocked, 0);
  EXPECT_EQ(clip_offcpu(o, 0, 100).total(), 0);
  EXPECT_EQ(clip_offcpu(o, 110, 120).preempted, 10);
}

TEST(AnalysisJoin, SplitsABlockedIntervalIntoSleepAndRunQueueTail) {
  // Asleep [0, 80), woken at 80, waited for a CPU until 100.
  OffCpuRow o{0, 100, 20, 1, 1, 3, 3, 0, false};
  const OffCpuParts all = clip_offcpu(o, 0, 1000);
  EXPECT_EQ(all.blocked, 80);
  EXPECT_EQ(all.wakeup, 20);
  EXPECT_EQ(all.preempted, 0);
  const OffCpuParts tail = clip_offcpu(o, 70, 90);
  EXPECT_EQ(tail.blocked, 10);
  EXPECT_EQ(tail.wakeup, 10);
  const OffCpuParts late = clip_offcpu(o, 90, 95);
  EXPECT_EQ(late.blocked, 0);
  EXPECT_EQ(late.wakeup, 5);
}

TEST(AnalysisJoin, UnionOfIntervals) {
  UnionLength u;
  for (auto [s, e] : {std::pair{0, 10}, {5, 8}, {8, 12}, {20, 30}, {25, 25}, {40, 50}}) u.add(s, e);
  EXPECT_EQ(u.total(), 12 + 10 + 10);
}

TEST(AnalysisJoin, CoverageOfAThreadsCalls) {
  RowsBuilder b;
  b.process(100, "trainer");
  b.call(100, 100, "cudaStreamSynchronize", 0, 10 * kMs);
  b.call(100, 100, "cudaLaunchKernel", 5, 3 * kMs);  // nested: counted once
  b.call(100, 100, "cudaStreamSynchronize", 20, 10 * kMs);
  b.call(100, 100, "cudaStreamSynchronize", 40, 10 * kMs);
  const TraceRows rows = b.build();
  const Joins j = compute_joins(rows);
  ASSERT_EQ(j.threads.size(), 1u);
  EXPECT_EQ(j.threads[0].api_ns, 30 * kMs);
  CallUnion u(rows, j, j.threads[0]);
  auto at = RowsBuilder::at;
  EXPECT_EQ(u.covered(at(5), at(45)), (5 + 10 + 5) * kMs);
  EXPECT_EQ(u.covered(at(10), at(20)), 0);
  EXPECT_EQ(u.covered(at(10), at(100)), 20 * kMs);  // overlaps the previous query
  EXPECT_EQ(u.covered(at(25), at(26)), 1 * kMs);
  EXPECT_EQ(u.covered(at(60), at(70)), 0);
}

// The walks that skip calls (OuterCalls::jump, CallUnion, the per-call overlaps found from the
// off-CPU rows) against brute force, on a thread whose calls nest (a runtime call's driver
// call), overlap partly (a stray overlap) and leave gaps: skipping must never change an answer.
TEST(AnalysisJoin, SkippingWalksAgreeWithBruteForce) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    RowsBuilder b(2'000);
    b.process(100, "trainer");
    double at = 1.0;
    for (int i = 0; i < 400; ++i) {
      const int64_t dur = static_cast<int64_t>(rng() % 3000) * kUs / 10;  // 0 .. 300 µs
      b.call(100, 100, i % 7 == 0 ? "cudaStreamSynchronize" : "cudaLaunchKernel", at, dur);
      if (rng() % 4 == 0 && dur > 2 * kUs)  // a driver call inside it
        b.call(100, 100, "cuLaunchKernel", at + 0.0005, dur / 2);
      if (rng() % 10 == 0) {  // the next call starts inside this one and ends after it
        at += static_cast<double>(dur) / kMs / 2;
        continue;
      }
      at += static_cast<double>(dur) / kMs + static_cast<double>(rng() % 500) / 1000.0;
    }
    double off = 1.0;
    while (off < at) {  // off-CPU rows of the thread: disjoint, in time order
      const int64_t dur = static_cast<int64_t>(1 + rng() % 400) * kUs;
      if (rng() % 2) {
        b.preempt(100, 100, off, dur, 7, "hog");
      } else {
        b.block(100, 100, off, dur, 8, 8, "waker", dur / 4);
      }
      off += static_cast<double>(dur) / kMs + static_cast<double>(rng() % 3000) / 1000.0;
    }
    const TraceRows rows = b.build();
    const Joins j = compute_joins(rows);
    ASSERT_EQ(j.threads.size(), 1u);
    const ThreadSummary& t = j.threads[0];
    // Brute force: the union of every call, cut at the span's end.
    auto union_of = [&](int64_t x, int64_t y) {
      std::vector<std::pair<int64_t, int64_t>> v;
      for (size_t i = t.call_begin; i < t.call_end; ++i) {
        const int64_t s = std::max(rows.calls[i].ts, x);
        const int64_t e = std::min({rows.calls[i].end(), t.last_ns, y});
        if (e > s) v.emplace_back(s, e);
      }
      std::sort(v.begin(), v.end());
      UnionLength u;
      for (auto [s, e] : v) u.add(s, e);
      return u.total();
    };
    // The pieces a walk that never jumps makes, and the pieces seen through jumps.
    std::vector<OuterCalls::Piece> all;
    OuterCalls walk(rows, j, t);
    for (OuterCalls::Piece p; walk.next(p);) all.push_back(p);
    int64_t pieces_ns = 0;
    for (const auto& p : all) pieces_ns += p.e - p.s;
    EXPECT_EQ(pieces_ns, union_of(t.first_ns, t.last_ns));
    CallUnion u(rows, j, t);
    OuterCalls jumping(rows, j, t);
    OuterCalls::Piece cur{};
    bool have = jumping.next(cur);
    int64_t q = t.first_ns;
    while (q < t.last_ns) {
      const int64_t len = static_cast<int64_t>(rng() % 2000) * kUs / 10;
      EXPECT_EQ(u.covered(q, q + len), union_of(q, q + len)) << "round " << round;
      // The piece covering q, if any, as the walk without jumps has it.
      if (have && cur.e <= q) {
        jumping.jump(q);
        have = jumping.next(cur);
        while (have && cur.e <= q) have = jumping.next(cur);
      }
      const auto it = std::find_if(all.begin(), all.end(), [&](auto& p) { return p.e > q; });
      ASSERT_EQ(have, it != all.end());
      if (have) {
        EXPECT_EQ(cur.idx, it->idx);
        EXPECT_EQ(cur.e, it->e);
        EXPECT_EQ(cur.s <= q, it->s <= q);
      }
      q += static_cast<int64_t>(rng() % 5000) * kUs / 10;
    }
    // The per-call overlaps, from the off-CPU rows, against every call against every row.
    for (size_t i = t.call_begin; i < t.call_end; ++i) {
      const CallRow& c = rows.calls[i];
      OffCpuParts want;
      for (const OffCpuRow& o : rows.offcpu) {
        const OffCpuParts p = clip_offcpu(o, c.ts, c.end());
        want.preempted += p.preempted;
        want.blocked += p.blocked;
        want.wakeup += p.wakeup;
      }
      const CallOverlap* got = j.overlap(static_cast<uint32_t>(i));
      EXPECT_EQ(got ? got->preempted_ns : 0, want.preempted) << "call " << i;
      EXPECT_EQ(got ? got->blocked_ns : 0, want.blocked) << "call " << i;
      EXPECT_EQ(got ? got->wakeup_ns : 0, want.wakeup) << "call " << i;
    }
    // The off-CPU time inside calls, per row, as the thread's summary adds it up.
    int64_t preempted_in = 0, blocked_in = 0;
    for (const OffCpuRow& o : rows.offcpu) {
      const int64_t s = std::max(o.ts, t.first_ns);
      if (clip_offcpu(o, t.first_ns, t.last_ns).total() == 0) continue;
      if (o.preempted) {
        preempted_in += union_of(s, std::min(o.end(), t.last_ns));
      } else if (clip_offcpu(o, t.first_ns, t.last_ns).blocked > 0) {
        blocked_in += union_of(s, std::min(o.end() - o.runq, t.last_ns));
      }
    }
    EXPECT_EQ(t.preempted_in_calls_ns, preempted_in);
    EXPECT_EQ(t.blocked_in_calls_ns, blocked_in);
  }
}

TEST(AnalysisJoin, PerCallOverlapUsesOnlyTheCallersThreadAndClips) {
  RowsBuilder b;
  b.process(100, "trainer").process(200, "other");
  // A 10 ms sync at +1 s on tid 100; a preemption straddling its start, a sleep inside it.
  b.call(100, 100, "cudaStreamSynchronize", 1000, 10 * kMs);
  b.preempt(100, 100, 998, 4 * kMs, 4242, "cpu_hog");              // 2 ms inside
  b.block(100, 100, 1005, 3 * kMs, 100, 100, "trainer", 1 * kMs);  // 2 asleep + 1 runq
  b.preempt(200, 200, 1000, 10 * kMs, 4242, "cpu_hog");            // another thread: ignored
  b.syscall(100, 100, 202, 1004, 2 * kMs);
  const TraceRows rows = b.build();
  const Joins j = compute_joins(rows);
  ASSERT_EQ(j.overlaps.size(), 1u);
  const CallOverlap& o = j.overlaps[0];
  EXPECT_EQ(o.preempted_ns, 2 * kMs);
  EXPECT_EQ(o.blocked_ns, 2 * kMs);
  EXPECT_EQ(o.wakeup_ns, 1 * kMs);
  EXPECT_EQ(o.syscall_ns, 2 * kMs);
  EXPECT_EQ(rows.offcpu[o.main_offcpu].ts, RowsBuilder::at(1005));  // 3 ms inside beats 2 ms
}

TEST(AnalysisJoin, ThreadSummaryNamesCulpritsAndSeparatesGpuWaits) {
  RowsBuilder b;
  b.process(100, "trainer").thread(100, 105, "ckpt_writer");
  b.call(100, 100, "cudaLaunchKernel", 0, 5 * kUs);
  b.call(100, 100, "cudaStreamSynchronize", 100, 50 * kMs);
  b.call(100, 100, "cudaLaunchKernel", 1000, 5 * kUs);
  // Asleep inside the sync, woken by the runtime's thread: expected, not a culprit.
  b.block(100, 100, 110, 30 * kMs, 100, 107, "cuda-evthandlr");
  // Asleep between calls, woken by a sibling: a lock.
  b.block(100, 100, 300, 200 * kMs, 100, 105, "ckpt_writer");
  b.preempt(100, 100, 600, 100 * kMs, 4242, "cpu_hog");
  const TraceRows rows = b.build();
  const Joins j = compute_joins(rows);
  ASSERT_EQ(j.threads.size(), 1u);
  const ThreadSummary& t = j.threads[0];
  EXPECT_EQ(t.span_ns(), 1000 * kMs + 5 * kUs);
  EXPECT_EQ(t.off.blocked, 230 * kMs);
  EXPECT_EQ(t.off.preempted, 100 * kMs);
  EXPECT_EQ(t.blocked_in_calls_ns, 30 * kMs);
  EXPECT_EQ(t.blocked_by_app_ns, 200 * kMs);
  ASSERT_EQ(t.wakers.size(), 1u);
  EXPECT_EQ(t.wakers[0].tid, 105u);
  EXPECT_EQ(t.wakers[0].ns, 200 * kMs);
  ASSERT_EQ(t.preemptors.size(), 1u);
  EXPECT_EQ(t.preemptors[0].pid, 4242u);
  EXPECT_EQ(rows.string(t.preemptors[0].comm), "cpu_hog");
  EXPECT_EQ(t.preempted_in_calls_ns, 0);
  EXPECT_EQ(t.launches, 2u);
}

TEST(AnalysisJoin, SleepsInsideCallsBlameOnlyOtherGpuThreads) {
  RowsBuilder b;
  b.process(100, "trainer").thread(100, 101, "worker").thread(100, 107, "gwsim-gpu");
  // A launch that blocks on a full queue until the GPU thread (no API calls of its own) drains it.
  b.call(100, 100, "cudaLaunchKernel", 0, 5 * kMs);
  b.block(100, 100, 1, 3 * kMs, 100, 107, "gwsim-gpu");
  // A launch blocked on a runtime lock that another dispatch thread releases.
  b.call(100, 100, "cudaLaunchKernel", 10, 5 * kMs);
  b.block(100, 100, 11, 2 * kMs, 100, 101, "worker");
  b.call(100, 101, "cudaMemcpy", 9, 3 * kMs, 1 << 20, 1);
  const Joins j = compute_joins(b.build());
  const ThreadSummary* t = j.thread(100);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->off.blocked, 5 * kMs);
  EXPECT_EQ(t->blocked_by_app_ns, 2 * kMs);
  ASSERT_EQ(t->wakers.size(), 1u);
  EXPECT_EQ(t->wakers[0].tid, 101u);
}

TEST(AnalysisJoin, QueuedWorkAheadOfEachWait) {
  RowsBuilder b;
  b.process(100, "trainer");
  for (int i = 0; i < 5; ++i) b.call(100, 100, "cudaLaunchKernel", i, 5 * kUs);
  b.call(100, 100, "cudaMemcpyAsync", 6, 10 * kUs, 1 << 20, 1);
  b.call(100, 100, "cudaStreamSynchronize", 7, 2 * kMs);  // waits on 6
  b.call(100, 100, "cudaLaunchKernel", 10, 5 * kUs);
  b.call(100, 100, "cudaMemcpy", 11, 100 * kUs, 4, 2);      // sync copy: waits on 1
  b.call(100, 100, "cudaStreamSynchronize", 12, 10 * kUs);  // nothing left
  const TraceRows rows = b.build();
  const Joins j = compute_joins(rows);
  EXPECT_EQ(j.queued_ahead[5], 5u);  // the async copy sees the five launches
  EXPECT_EQ(j.queued_ahead[6], 6u);
  EXPECT_EQ(j.queued_ahead[8], 1u);
  EXPECT_EQ(j.queued_ahead[9], 0u);
}

TEST(AnalysisJoin, NestedDriverCallsAreCountedOnce) {
  RowsBuilder b;
  b.process(100, "trainer");
  b.call(100, 100, "cudaMemcpy", 0, 10 * kMs, 1 << 20, 1);
  b.call(100, 100, "cuMemcpyHtoD_v2", 0.5, 9 * kMs, 1 << 20);  // the runtime's own driver call
  b.call(100, 100, "cudaLaunchKernel", 20, 5 * kUs);
  const TraceRows rows = b.build();
  const Joins j = compute_joins(rows);
  EXPECT_FALSE(j.nested(0));
  EXPECT_TRUE(j.nested(1));
  EXPECT_FALSE(j.nested(2));
  EXPECT_EQ(j.threads[0].api_ns, 10 * kMs + 5 * kUs);
  EXPECT_EQ(rows.calls[1].dir, static_cast<int8_t>(CopyDir::HostToDevice));  // from the symbol
}

TEST(AnalysisJoin, SortsRowsByThreadThenTime) {
  RowsBuilder b;
  b.process(100, "a");
  b.call(100, 102, "cudaLaunchKernel", 5, 1);
  b.call(100, 101, "cudaLaunchKernel", 9, 1);
  b.call(100, 102, "cudaLaunchKernel", 1, 1);
  b.call(100, 101, "cudaLaunchKernel", 3, 1);
  const TraceRows rows = b.build();
  ASSERT_EQ(rows.calls.size(), 4u);
  EXPECT_EQ(rows.calls[0].tid, 101u);
  EXPECT_EQ(rows.calls[0].ts, RowsBuilder::at(3));
  EXPECT_EQ(rows.calls[2].tid, 102u);
  EXPECT_EQ(rows.calls[2].ts, RowsBuilder::at(1));
  EXPECT_EQ(kT0, rows.window.trace_start_ns);
}

}  // namespace
}  // namespace gpuwhy::analysis
