// SPDX-License-Identifier: Apache-2.0
// The audit on hand-built rows: memory sites and patterns, untouched buffers, the live-memory
// peak, and the regime of a loop whose budget is known.
#include <gtest/gtest.h>

#include "analysis/audit.hpp"
#include "analysis/units.hpp"
#include "analysis_test_util.hpp"
#include "export/audit_render.hpp"
#include "export/explain_render.hpp"
#include "export/html_report.hpp"

namespace gpuwhy::analysis {
namespace {

using testing::kMs;
using testing::kUs;
using testing::RowsBuilder;

constexpr uint64_t kPageable = 0x10000;       // malloc'd host memory
constexpr uint64_t kPinned = 0x7f0000000000;  // from cudaMallocHost
constexpr uint64_t kDevice = 0x200000000;
constexpr uint64_t k64M = 64ull << 20;

// Steps of 20 ms: a 64 MiB pageable upload taking 6 ms, and, with `pinned_ms` > 0, a 64 MiB
// synchronous upload from pinned memory taking that long and an async one that returns at once
// (its time is only the queueing, so it must not set the rate); then a kernel and its sync.
RowsBuilder transfer_loop(double pinned_ms) {
  RowsBuilder b;
  b.process(1, "train");
  b.call(1, 1, "cudaMallocHost", 0, kMs, 128ull << 20, -1, kPinned);
  b.call(1, 1, "cudaMalloc", 1, kMs, 128ull << 20, -1, kDevice);
  for (int i = 0; i < 400; ++i) {
    const double t = 10 + 20.0 * i;
    b.call(1, 1, "cudaMemcpy", t, 6 * kMs, k64M, 1, kDevice, kPageable);
    if (pinned_ms > 0) {
      b.call(1, 1, "cudaMemcpy", t + 6.5, static_cast<int64_t>(pinned_ms * kMs), k64M, 1, kDevice,
             kPinned);
      b.call(1, 1, "cudaMemcpyAsync", t + 11, 10 * kUs, k64M, 1, kDevice, kPinned);
    }
    b.call(1, 1, "cudaLaunchKernel", t + 11.1, 5 * kUs);
    b.call(1, 1, "cudaStreamSynchronize", t + 11.5, 3 * kMs);
  }
  return b;
}

nlohmann::ordered_json transfer_lever_json(const AuditReport& r) {
  const nlohmann::ordered_json j = render::audit_json(r);
  for (const auto& l : j["processes"][0]["levers"])
    if (l["kind"] == "transfer_bound") return l;
  return nullptr;
}

const Lever* transfer_lever(const ProcessAudit& p) {
  for (const Lever& l : p.levers)
    if (l.kind == "transfer_bound") return &l;
  return nullptr;
}

const MemorySite* site_with(const ProcessMemory& m, uint64_t bytes_allocated) {
  for (const MemorySite& s : m.sites)
    if (s.bytes_allocated == bytes_allocated) return &s;
  return nullptr;
}

TEST(AnalysisAudit, MemoryPatternsAndUntouchedBuffers) {
  RowsBuilder b;
  b.process(1, "train");
  // Set-up: weights (copied into) and a 64 MiB buffer nobody touches, both kept to the end.
  b.call(1, 1, "cudaMalloc", 0, kMs / 10, 1 << 20, -1, 0x100000000);
  b.call(1, 1, "cudaMalloc", 0.5, kMs / 10, 64 << 20, -1, 0x200000000);
  b.call(1, 1, "cudaMemcpy", 1, kMs, 1 << 20, static_cast<int>(CopyDir::HostToDevice), 0x100000000,
         0x5000);
  // Steps 2..99 ms: a temporary allocated and freed at the same address, and a 1 KiB buffer kept
  // every step (different addresses).
  for (int i = 0; i < 10; ++i) {
    const double t = 10 + 9.0 * i;
    b.call(1, 1, "cudaMalloc", t, kMs / 10, 4096, -1, 0x300000000);
    b.call(1, 1, "cudaMemset", t + 1, kMs / 10, 4096, -1, 0x300000000);
    b.call(1, 1, "cudaFree", t + 2, kMs / 10, 0, -1, 0x300000000);
    b.call(1, 1, "cudaMalloc", t + 3, kMs / 10, 1024, -1, 0x400000000 + 0x1000 * i);
  }
  b.call(1, 1, "cudaStreamSynchronize", 100, kMs);
  const TraceRows rows = b.build();
  const auto all = audit_memory(rows);
  ASSERT_EQ(all.size(), 1u);
  const ProcessMemory& m = all[0].second;
  // Without stacks the sites are the API; one site, cudaMalloc, mixing the patterns.
  ASSERT_EQ(m.sites.size(), 1u);
  const MemorySite& s = m.sites[0];
  EXPECT_EQ(s.allocs, 22u);
  EXPECT_EQ(s.frees, 10u);
  EXPECT_EQ(s.kept_bytes, (1u << 20) + (64u << 20) + 10 * 1024u);
  // Untouched and kept: the 64 MiB buffer and the ten 1 KiB buffers, not the copied weights.
  EXPECT_EQ(s.untouched_bytes, (64u << 20) + 10 * 1024u);
  EXPECT_EQ(s.untouched_allocs, 11u);
  EXPECT_EQ(m.peak, (1u << 20) + (64u << 20) + 9 * 1024u + 4096u);
  EXPECT_EQ(m.live_end, (1u << 20) + (64u << 20) + 10 * 1024u);
  EXPECT_EQ(m.allocations, 22u);
  EXPECT_LE(m.timeline.size(), 101u);
  (void)site_with;
}

TEST(AnalysisAudit, AReusedAddressIsANewAllocation) {
  RowsBuilder b;
  b.process(1, "p");
  b.call(1, 1, "cudaMalloc", 0, kMs / 10, 8192, -1, 0x100000000);
  b.call(1, 1, "cudaFree", 1, kMs / 10, 0, -1, 0x100000000);
  b.call(1, 1, "cudaMalloc", 2, kMs / 10, 8192, -1, 0x100000000);
  // A copy into the second one only: the first was freed before it.
  b.call(1, 1, "cudaMemcpy", 50, kMs, 8192, static_cast<int>(CopyDir::HostToDevice), 0x100000000,
         0x5000);
  b.call(1, 1, "cudaStreamSynchronize", 100, kMs);
  const TraceRows rows = b.build();
  const auto all = audit_memory(rows);
  ASSERT_EQ(all.size(), 1u);
  const ProcessMemory& m = all[0].second;
  ASSERT_EQ(m.sites.size(), 1u);
  EXPECT_EQ(m.sites[0].untouched_bytes, 0u);
  EXPECT_EQ(m.peak, 8192u);
  EXPECT_EQ(m.live_end, 8192u);
}

// Stream-ordered pool allocations (cudaMallocAsync / cudaFreeAsync, what PyTorch's and JAX's
// async allocators call) count as device memory like cudaMalloc's, and an async free does not
// drain the queue as cudaFree does: time in it is the runtime's, not a wait for the GPU.
TEST(AnalysisAudit, PoolAllocationsAreDeviceMemoryAndTheirFreesDoNotWait) {
  RowsBuilder b;
  b.process(1, "p");
  b.call(1, 1, "cudaMallocAsync", 0, kMs / 10, 8192, -1, 0x100000000);
  for (int i = 0; i < 10; ++i) {
    const double t = 1 + 10 * i;
    b.call(1, 1, "cudaMallocAsync", t, kMs / 10, 4096, -1, 0x200000000);
    b.call(1, 1, "cudaFreeAsync", t + 2, kMs, 0, -1, 0x200000000);
  }
  b.call(1, 1, "cudaStreamSynchronize", 200, kMs);
  const TraceRows rows = b.build();
  const auto all = audit_memory(rows);
  ASSERT_EQ(all.size(), 1u);
  const ProcessMemory& m = all[0].second;
  EXPECT_EQ(m.allocations, 11u);
  EXPECT_EQ(m.peak, 8192u + 4096u);
  EXPECT_EQ(m.live_end, 8192u);
  EXPECT_EQ(m.pinned_host_peak, 0u);
  const ApiMeta& free_async = rows.api(find_api(std::string_view("cudaFreeAsync"))->id);
  EXPECT_EQ(free_async.cat, Category::Free);
  EXPECT_FALSE(drains_queue(free_async));
  EXPECT_TRUE(drains_queue(rows.api(find_api(std::string_view("cudaFree"))->id)));
}

TEST(AnalysisAudit, GpuBoundLoopFromItsBudget) {
  RowsBuilder b;
  b.process(1, "train");
  // 20 steps of 10 ms: launch at once, then wait 9 ms in the sync.
  for (int i = 0; i < 20; ++i) {
    const double t = 10.0 * i;
    b.call(1, 1, "cudaLaunchKernel", t, kMs / 100);
    b.call(1, 1, "cudaStreamSynchronize", t + 0.5, 9 * kMs);
  }
  const AuditReport r = audit(b.build(), {.price_per_gpu_hour = 3.6});
  ASSERT_EQ(r.processes.size(), 1u);
  const ProcessAudit& p = r.processes[0];
  EXPECT_EQ(p.regime, Regime::GpuBound) << p.evidence;
  EXPECT_GT(p.times.gpu_ns, p.times.host_ns);
  // Every sync waited: fed the whole of each episode (launch to sync end).
  EXPECT_NEAR(static_cast<double>(p.busy.estimate_ns), 20 * 9.5 * kMs, 0.01 * 20 * 9.5 * kMs);
  EXPECT_GE(p.busy.upper_ns, p.busy.estimate_ns);
  EXPECT_LE(p.busy.lower_ns, p.busy.estimate_ns);
  // 3.6 per hour is 1e-12 per ns.
  EXPECT_NEAR(p.cost, 1e-12 * static_cast<double>(p.last_ns - p.first_ns), 1e-9);
}

TEST(AnalysisAudit, HostBoundLoopFromItsBudget) {
  RowsBuilder b;
  b.process(1, "train");
  // 20 steps of 10 ms: a launch, 9 ms of host work, a sync that returns at once.
  for (int i = 0; i < 20; ++i) {
    const double t = 10.0 * i;
    b.call(1, 1, "cudaLaunchKernel", t, kMs / 100);
    b.call(1, 1, "cudaStreamSynchronize", t + 9.5, kMs / 100);
  }
  const AuditReport r = audit(b.build());
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].regime, Regime::HostBound) << r.processes[0].evidence;
  // Unknown within each episode: the estimate is its middle, the error half of it.
  EXPECT_GT(r.processes[0].busy.error_ns(), 0);
}

// Pinning returns the pageable copies' time less the same bytes at the pinned rate the trace
// shows: 6 ms - 64 MiB at 64 MiB per 4 ms = 2 ms a step. The async pinned copies, which return in
// 10 us, would make the rate absurd if they counted.
TEST(AnalysisAudit, TransferLeverSaysWhatPinningReturnsAtTheObservedRate) {
  const AuditReport r = audit(transfer_loop(4).build(), {.price_per_gpu_hour = 3.6});
  ASSERT_EQ(r.processes.size(), 1u);
  const Lever* l = transfer_lever(r.processes[0]);
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->pinning.has_value());
  const PinningEstimate& p = *l->pinning;
  EXPECT_TRUE(p.rate_observed);
  EXPECT_NEAR(p.pinned_bytes_per_s, k64M / 4e-3, 1e-6 * k64M / 4e-3);
  EXPECT_EQ(p.pageable_bytes, 400 * k64M);
  EXPECT_EQ(p.pageable_ns, 400 * 6 * kMs);
  EXPECT_NEAR(static_cast<double>(p.returns_ns), 400 * 2.0 * kMs, 1e-3 * 400 * 2 * kMs);
  // The synchronous pinned copies would overlap compute as async ones: 4 ms a step more; the
  // lever's time is the sum, the most that pinning and async copies return together.
  EXPECT_EQ(l->async_returns_ns, 400 * 4 * kMs);
  EXPECT_NEAR(static_cast<double>(l->lost_ns), static_cast<double>(p.returns_ns + 400 * 4 * kMs),
              1e-3 * l->lost_ns);
  // The same figure in the text, the JSON and the HTML card.
  const std::string text = render::audit_text(r);
  EXPECT_NE(text.find("pinning returns " + fmt_duration(p.returns_ns)), std::string::npos) << text;
  EXPECT_NE(text.find("the pinned rate seen in this trace"), std::string::npos) << text;
  const nlohmann::ordered_json j = render::audit_json(r);
  const auto pin = transfer_lever_json(r)["pinning"];
  EXPECT_EQ(pin["returns_ns"].get<int64_t>(), p.returns_ns) << j.dump(1);
  EXPECT_EQ(pin["rate"], "observed");
  const std::string html =
      render::explain_html(render::explain_json(r.explain), nlohmann::ordered_json::object(), j);
  EXPECT_NE(html.find("pinning returns <b>" + fmt_duration(p.returns_ns) + "</b>"),
            std::string::npos);
}

// Without measurable pinned copies the rate is the stated default, and the output says so:
// 6 ms - 64 MiB / 25 GB/s = 3.32 ms a step.
TEST(AnalysisAudit, TransferLeverUsesTheStatedDefaultRateWithoutPinnedCopies) {
  const AuditReport r = audit(transfer_loop(0).build());
  ASSERT_EQ(r.processes.size(), 1u);
  const Lever* l = transfer_lever(r.processes[0]);
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->pinning.has_value());
  EXPECT_FALSE(l->pinning->rate_observed);
  EXPECT_EQ(l->pinning->pinned_bytes_per_s, kDefaultPinnedBytesPerS);
  const double per_step = 6e6 - k64M / 25e9 * 1e9;
  EXPECT_NEAR(static_cast<double>(l->pinning->returns_ns), 400 * per_step, 1e-3 * 400 * per_step);
  EXPECT_EQ(l->async_returns_ns, 0);
  EXPECT_EQ(l->lost_ns, l->pinning->returns_ns);
  EXPECT_NE(render::audit_text(r).find("assumed: no pinned copy"), std::string::npos);
  EXPECT_EQ(transfer_lever_json(r)["pinning"]["rate"], "default");
}

TEST(AnalysisAudit, PinningEstimateNeedsEnoughPinnedBytesForARate) {
  // 1 GB pageable in 100 ms; 32 MiB of pinned copies is too little to measure a rate.
  PinningEstimate e = estimate_pinning(1'000'000'000, 100 * kMs, 32ull << 20, 1e12);
  EXPECT_FALSE(e.rate_observed);
  EXPECT_EQ(e.at_pinned_ns, 40 * kMs);
  EXPECT_EQ(e.returns_ns, 60 * kMs);
  // 1 GB at a measured 5 GB/s takes 200 ms, more than the pageable copies did: nothing back.
  e = estimate_pinning(1'000'000'000, 100 * kMs, 500'000'000, 5e9);
  EXPECT_TRUE(e.rate_observed);
  EXPECT_EQ(e.returns_ns, 0);
}

// The median copy's rate: one copy read slow (preempted before it queued its DMA) and one read
// fast do not move it.
TEST(AnalysisAudit, PinnedRateIsTheMedianCopysRate) {
  const uint64_t mib8 = 8ull << 20;  // 8 MiB at 20 GB/s: 419 us
  EXPECT_NEAR(
      pinned_copy_rate(
          {{mib8, 419'430}, {mib8, 419'430}, {mib8, 5'000'000}, {mib8, 100'000}, {mib8, 419'430}}),
      20e9, 1e6);
  EXPECT_EQ(pinned_copy_rate({}), 0);
}

// The last call's native call site (trace --stacks).
void from_stack(RowsBuilder& b, int32_t stack_id) {
  CallRow& c = b.rows().calls.back();
  CallExt e = b.rows().ext(c);
  e.stack_id = stack_id;
  b.rows().set_ext(c, e);
}

constexpr int32_t kAllocatorStack = 5, kStepStack = 7, kSetupStack = 9;
constexpr uint64_t k20M = 20ull << 20;

RowsBuilder with_sites() {
  RowsBuilder b;
  b.process(1, "train");
  b.rows().call_sites = {
      {kAllocatorStack,
       "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, "
       "unsigned long, CUstream_st*)+0x2f4 in libc10_cuda.so"},
      {kStepStack, "gw::Trainer::step(unsigned long)+0x91 in sim_train"},
      {kSetupStack, "gw::Trainer::setup()+0x40 in sim_train"}};
  return b;
}

void segment(RowsBuilder& b, double at_ms, uint64_t addr) {
  b.call(1, 1, "cudaMalloc", at_ms, kMs / 10, k20M, -1, addr);
  from_stack(b, kAllocatorStack);
}

TEST(AnalysisAudit, AllocatorFramesAreNamedWhateverTheirSpelling) {
  EXPECT_TRUE(names_allocator("c10::cuda::CUDACachingAllocator::Native::alloc_block+0x1"));
  EXPECT_TRUE(names_allocator("_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator"));
  EXPECT_TRUE(
      names_allocator("/usr/lib/python3/dist-packages/torch/cuda/memory.py "
                      "caching_allocator_alloc"));
  EXPECT_TRUE(names_allocator("cupy.cuda.memory.MemoryPool.malloc"));
  EXPECT_TRUE(names_allocator("tsl::BFCAllocator::Extend(unsigned long, unsigned long)"));
  EXPECT_FALSE(names_allocator("gw::Trainer::step(unsigned long)+0x91 in sim_train"));
  EXPECT_FALSE(names_allocator("cudaMalloc (no stack recorded)"));
  EXPECT_FALSE(names_allocator("/home/me/train.py model.forward"));
}

// A caching allocator reserves 2 segments, grows by 2 under a larger batch, empties its cache
// (one sweep of all 4) and reserves 2 again; meanwhile the program leaks 1 MiB a step at its own
// site and holds a 64 MiB buffer nothing copies to. The reserve is reported as such, and neither
// counted as growth nor as a candidate to free; the leak and the unused buffer still are.
TEST(AnalysisAudit, CachingAllocatorReserveIsShownApartFromALeak) {
  RowsBuilder b = with_sites();
  b.call(1, 1, "cudaMalloc", 0.5, kMs / 10, k64M, -1, 0x900000000);
  from_stack(b, kSetupStack);
  segment(b, 1, 0x100000000);
  segment(b, 1.2, 0x110000000);
  for (int i = 0; i < 9; ++i) {
    b.call(1, 1, "cudaMalloc", 10 + 10 * i, kMs / 10, 1 << 20, -1, 0x500000000 + 0x200000 * i);
    from_stack(b, kStepStack);
  }
  segment(b, 50, 0x120000000);
  segment(b, 50.3, 0x130000000);
  for (uint64_t a : {0x100000000, 0x110000000, 0x120000000, 0x130000000})
    b.call(1, 1, "cudaFree", 70 + 0.1 * ((a >> 28) & 3), kMs / 20, 0, -1, a);
  segment(b, 72, 0x140000000);
  segment(b, 72.2, 0x150000000);
  b.call(1, 1, "cudaStreamSynchronize", 100, kMs);
  const auto all = audit_memory(b.build());
  ASSERT_EQ(all.size(), 1u);
  const ProcessMemory& m = all[0].second;
  const AllocatorReserve& r = m.reserve;
  EXPECT_EQ(r.segments, 2u);
  EXPECT_EQ(r.bytes, 2 * k20M);
  EXPECT_EQ(r.peak_segments, 4u);
  EXPECT_EQ(r.peak_bytes, 4 * k20M);
  EXPECT_EQ(r.reserved_segments, 6u);
  EXPECT_EQ(r.released_segments, 4u);
  ASSERT_EQ(r.growth.size(), 3u);
  EXPECT_EQ(r.growth[1].segments, 2u);
  EXPECT_EQ(r.growth[1].reserved_after, 4 * k20M);
  ASSERT_EQ(r.sweeps.size(), 1u);
  EXPECT_EQ(r.sweeps[0].bytes, 4 * k20M);
  EXPECT_FALSE(r.still_growing);
  EXPECT_NE(r.site.find("CUDACachingAllocator"), std::string::npos);
  const MemorySite* seg = nullptr;
  const MemorySite* leak = nullptr;
  const MemorySite* unused = nullptr;
  for (const MemorySite& s : m.sites) {
    if (s.site.find("CachingAllocator") != std::string::npos) seg = &s;
    if (s.site.find("Trainer::step") != std::string::npos) leak = &s;
    if (s.site.find("Trainer::setup") != std::string::npos) unused = &s;
  }
  ASSERT_NE(seg, nullptr);
  EXPECT_EQ(seg->pattern, "reserve");
  EXPECT_EQ(seg->untouched_bytes, 0u) << "a reserve is not a candidate to free";
  EXPECT_EQ(seg->kept_bytes, 2 * k20M);
  ASSERT_NE(leak, nullptr);
  EXPECT_EQ(leak->pattern, "growing");
  EXPECT_EQ(leak->kept_bytes, 9u << 20);
  ASSERT_NE(unused, nullptr);
  EXPECT_EQ(unused->untouched_bytes, k64M);
}

// Growth that does not settle: four steps in the window's last half, no sweep after them.
TEST(AnalysisAudit, AReserveThatKeepsGrowingIsFlagged) {
  RowsBuilder b = with_sites();
  b.call(1, 1, "cudaLaunchKernel", 0, 5 * kUs);
  for (int i = 0; i < 4; ++i) segment(b, 52 + 12 * i, 0x100000000 + 0x10000000ull * i);
  b.call(1, 1, "cudaStreamSynchronize", 100, kMs);
  const AuditReport rep = audit(b.build());
  ASSERT_EQ(rep.processes.size(), 1u);
  const AllocatorReserve& r = rep.processes[0].memory.reserve;
  EXPECT_EQ(r.growth.size(), 4u);
  EXPECT_TRUE(r.still_growing);
  const std::string text = render::audit_text(rep);
  EXPECT_NE(text.find("reserved by a caching allocator: 80.0 MiB in 4 segment(s)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("still growing"), std::string::npos) << text;
  const auto j = render::audit_json(rep);
  EXPECT_EQ(j["processes"][0]["memory"]["reserve"]["segments"], 4);
  EXPECT_EQ(j["processes"][0]["memory"]["reserve"]["still_growing"], true);
}

// 20 steps of 10 ms of a main thread (tid 1) and an autograd thread (tid 2) that take turns: the
// main thread launches, sleeps until the autograd thread wakes it 4 ms later and syncs at
// `sync_at` ms into the step for `sync_ns`; the autograd thread launches for 3.9 ms, wakes the
// main thread and sleeps until the next step.
RowsBuilder alternating_threads(double sync_at, int64_t sync_ns) {
  RowsBuilder b;
  b.process(1, "python3");
  b.thread(1, 2, "pt_autograd_0");
  for (int i = 0; i < 20; ++i) {
    const double t = 10.0 * i;
    b.call(1, 1, "cudaLaunchKernel", t, kMs / 100);
    b.block(1, 1, t + 0.1, 4 * kMs, 1, 2, "pt_autograd_0");
    b.call(1, 1, "cudaStreamSynchronize", t + sync_at, sync_ns);
    for (int k = 0; k < 13; ++k) b.call(1, 2, "cudaLaunchKernel", t + 0.2 + 0.3 * k, kMs / 100);
    if (i < 19) b.block(1, 2, t + 4.1, 6 * kMs, 1, 1, "python3");
  }
  return b;
}

// One story per process (issue 31): PyTorch's main thread waits while its autograd thread runs
// the backward pass, and the other way round; here the main thread's sync waits 5 ms and finds
// the GPU still busy. Counted as two spans with their waits for each other as host time, the
// process looked twice as long as its window and host-bound; its dispatch time is one window,
// and its GPU was fed through nearly all of it.
TEST(AnalysisAudit, AlternatingThreadsAreOneStoryOverTheWindow) {
  RowsBuilder b = alternating_threads(4.2, 5 * kMs);
  const AuditReport r = audit(b.build());
  ASSERT_EQ(r.processes.size(), 1u);
  const ProcessAudit& p = r.processes[0];
  SCOPED_TRACE(p.evidence);
  const int64_t window = p.last_ns - p.first_ns;
  EXPECT_GT(p.times.delegated_ns, 20 * 4 * kMs) << "the waits for each other";
  // The dispatch time is the window, not two spans.
  EXPECT_LT(p.times.span_ns, window + window / 10);
  EXPECT_GT(p.times.span_ns, window - window / 5);
  // Every sync waited: fed from the forward pass's launch to the sync's end, 9.2 of 10 ms.
  EXPECT_GT(p.busy.fed_ns, window * 8 / 10);
  EXPECT_EQ(p.regime, Regime::GpuBound);
  EXPECT_NE(p.evidence.find("left out"), std::string::npos);
  EXPECT_FALSE(p.agreement.empty());
}

// The same alternation with syncs that return at once: nothing says the GPU was fed, and the
// host work that fills the window is what holds it back.
TEST(AnalysisAudit, AlternatingThreadsWithAnIdleGpuAreHostBound) {
  RowsBuilder b = alternating_threads(9.5, kMs / 100);
  const AuditReport r = audit(b.build());
  ASSERT_EQ(r.processes.size(), 1u);
  const ProcessAudit& p = r.processes[0];
  EXPECT_EQ(p.busy.fed_ns, 0) << p.evidence;
  EXPECT_EQ(p.regime, Regime::HostBound) << p.evidence;
}

}  // namespace
}  // namespace gpuwhy::analysis
