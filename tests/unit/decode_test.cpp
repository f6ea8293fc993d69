// SPDX-License-Identifier: Apache-2.0
// Ring-buffer records built from the same ABI structs the BPF programs fill -> typed events.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "catalog/api_catalog.hpp"
#include "reader/decode.hpp"

namespace gpuwhy::reader {
namespace {

const ClockConverter kClock(1'000'000'000'000);  // wall = mono + 1000 s

gw_event_header header(uint16_t kind, uint16_t size) {
  gw_event_header h{};
  h.ts_ns = 5'000;
  h.pid = 42;
  h.tid = 43;
  h.kind = kind;
  h.size = size;
  h.cpu = 1;
  return h;
}

TEST(Decode, CudaMemcpyAsyncCarriesItsMeaning) {
  gw_api_call r{};
  r.hdr = header(GW_EV_API_CALL, sizeof(r));
  r.duration_ns = 777;
  const ApiInfo* api = find_api("cudaMemcpyAsync");
  ASSERT_NE(api, nullptr);
  r.api = api->id;
  r.lib = 3;
  r.args[0] = 0x1000a000;  // dst
  r.args[1] = 0x2000b000;  // src
  r.args[2] = 123457;      // count
  r.args[3] = 2;           // cudaMemcpyDeviceToHost
  r.args[4] = 0xabc;       // stream
  r.ret = 0xffffffff00000023ull;  // upper register garbage above a 32-bit enum
  Event ev;
  ASSERT_EQ(decode_record(&r, sizeof(r), kClock, ev), DecodeStatus::Ok);
  const auto& c = std::get<ApiCall>(ev);
  EXPECT_EQ(c.ts, 1'000'000'005'000);
  EXPECT_EQ(c.dur, 777);
  EXPECT_EQ(c.pid, 42u);
  EXPECT_EQ(c.tid, 43u);
  EXPECT_EQ(c.lib, 3);
  EXPECT_EQ(c.ret, 35);
  EXPECT_EQ(c.f.addr, 0x1000a000u);
  EXPECT_EQ(c.f.addr2, 0x2000b000u);
  EXPECT_EQ(c.f.bytes, 123457u);
  EXPECT_EQ(c.f.op, static_cast<int>(CopyDir::DeviceToHost));
  EXPECT_EQ(c.f.stream, 0xabcu);
}

TEST(Decode, LaunchGridFromRegistersAndFromConfigStruct) {
  const ApiInfo* rt = find_api("cudaLaunchKernel");
  uint64_t args[8] = {0xf00, (3ull << 32) | 2, 4, (8ull << 32) | 32, 1, 0x55, 0, 0};
  ApiCallFields f = decode_api_args(*rt, args, 0);
  EXPECT_EQ(f.blocks, 2u * 3 * 4);
  EXPECT_EQ(f.threads_per_block, 32u * 8);
  EXPECT_EQ(f.stream, 0x55u);
  EXPECT_EQ(f.addr, 0xf00u);

  const ApiInfo* ex = find_api("cuLaunchKernelEx");
  // Slots: func, grid x|y, grid z|block x, block y|z, stream (see CFG_LAUNCH).
  uint64_t cfg[8] = {0xf01, (5ull << 32) | 7, (64ull << 32) | 1, (1ull << 32) | 2, 0x66, 0, 0, 0};
  f = decode_api_args(*ex, cfg, 0);
  EXPECT_EQ(f.blocks, 35u);
  EXPECT_EQ(f.threads_per_block, 64u * 2);
  EXPECT_EQ(f.stream, 0x66u);

  const ApiInfo* drv = find_api("cuLaunchKernel");
  uint64_t d[8] = {0xf02, 10, 2, 1, 128, 1, 1, 0x77};
  f = decode_api_args(*drv, d, 0);
  EXPECT_EQ(f.blocks, 20u);
  EXPECT_EQ(f.threads_per_block, 128u);
  EXPECT_EQ(f.stream, 0x77u);
}

TEST(Decode, AllocationsReportThePointerReadAtReturn) {
  const ApiInfo* api = find_api("cudaMalloc");
  uint64_t args[8] = {4096, 0, 0, 0, 0, 0, 0, 0};  // slot 0 holds the size (register 1)
  ApiCallFields f = decode_api_args(*api, args, 0x7f0000001000);
  EXPECT_EQ(f.bytes, 4096u);
  EXPECT_EQ(f.addr, 0x7f0000001000u);
}

TEST(Decode, NcclPayloadIsCountTimesElementSize) {
  const ApiInfo* api = find_api("ncclAllReduce");
  uint64_t args[8] = {0x1, 0x2, 1000, 7 /* float32 */, 0 /* sum */, 0xc0, 0x5, 0};
  ApiCallFields f = decode_api_args(*api, args, 0);
  EXPECT_EQ(f.bytes, 4000u);
  EXPECT_EQ(f.addr, 0xc0u);
  EXPECT_EQ(f.stream, 0x5u);
  EXPECT_EQ(f.op, 0);
}

TEST(Decode, OffCpuKeepsCulpritsAndTaskNames) {
  gw_offcpu r{};
  r.hdr = header(GW_EV_OFFCPU, sizeof(r));
  r.duration_ns = 1000;
  r.runq_ns = 400;
  r.preempted = 1;
  r.next_pid = 99;
  r.next_tid = 100;
  std::strcpy(r.next_comm, "cpu_hog");
  r.holder_pid = 77;
  r.holder_tid = 78;
  std::strcpy(r.holder_comm, "dataloader");
  Event ev;
  ASSERT_EQ(decode_record(&r, sizeof(r), kClock, ev), DecodeStatus::Ok);
  const auto& o = std::get<OffCpu>(ev);
  EXPECT_TRUE(o.preempted);
  EXPECT_EQ(o.runq, 400);
  EXPECT_EQ(comm_view(o.next_comm), "cpu_hog");
  EXPECT_EQ(o.holder_pid, 77u);
  EXPECT_EQ(o.holder_tid, 78u);
  EXPECT_EQ(comm_view(o.holder_comm), "dataloader");
  EXPECT_EQ(o.cpu, 1u);
}

// ABI 5: where an interval's runnable part waited, the runs of the CPUs it waited for, the moves
// between run queues, and renames.
TEST(Decode, CpuHolderRecords) {
  gw_offcpu o{};
  o.hdr = header(GW_EV_OFFCPU, sizeof(o));
  o.duration_ns = 9'000;
  o.runq_ns = 9'000;
  o.preempted = 1;
  o.wait_cpu = 3;
  o.migrations = 2;
  o.cpus_allowed = 1;
  Event ev;
  ASSERT_EQ(decode_record(&o, sizeof(o), kClock, ev), DecodeStatus::Ok);
  const auto& off = std::get<OffCpu>(ev);
  EXPECT_EQ(off.wait_cpu, 3);
  EXPECT_EQ(off.migrations, 2u);
  EXPECT_EQ(off.cpus_allowed, 1u);
  o.wait_cpu = GW_NO_CPU;
  ASSERT_EQ(decode_record(&o, sizeof(o), kClock, ev), DecodeStatus::Ok);
  EXPECT_EQ(std::get<OffCpu>(ev).wait_cpu, -1);

  gw_cpu_run run{};
  run.hdr = header(GW_EV_CPU_RUN, sizeof(run));
  run.duration_ns = 4'000'000;
  std::strcpy(run.comm, "other_job");
  ASSERT_EQ(decode_record(&run, sizeof(run), kClock, ev), DecodeStatus::Ok);
  const auto& r = std::get<CpuRun>(ev);
  EXPECT_EQ(r.ts, 1'000'000'005'000);
  EXPECT_EQ(r.dur, 4'000'000);
  EXPECT_EQ(r.cpu, 1u);
  EXPECT_EQ(r.pid, 42u);
  EXPECT_EQ(r.tid, 43u);
  EXPECT_EQ(comm_view(r.comm), "other_job");
  EXPECT_EQ(kind_name(GW_EV_CPU_RUN), "cpu_run");

  gw_wait_migrate m{};
  m.hdr = header(GW_EV_WAIT_MIGRATE, sizeof(m));
  m.from_cpu = 0;
  m.to_cpu = 2;
  ASSERT_EQ(decode_record(&m, sizeof(m), kClock, ev), DecodeStatus::Ok);
  EXPECT_EQ(std::get<WaitMigrate>(ev).to_cpu, 2u);
  EXPECT_EQ(std::get<WaitMigrate>(ev).tid, 43u);

  gw_task_rename n{};
  n.hdr = header(GW_EV_TASK_RENAME, sizeof(n));
  std::memset(n.comm, 'x', sizeof(n.comm));  // unterminated: cut at 15
  ASSERT_EQ(decode_record(&n, sizeof(n), kClock, ev), DecodeStatus::Ok);
  EXPECT_EQ(comm_view(std::get<TaskRename>(ev).comm), std::string(15, 'x'));
  EXPECT_EQ(decode_record(&n, sizeof(n) - 1, kClock, ev), DecodeStatus::SizeMismatch);
}

TEST(Decode, RejectsShortUnknownAndOversizedRecords) {
  gw_api_call r{};
  r.hdr = header(GW_EV_API_CALL, sizeof(r));
  Event ev;
  EXPECT_EQ(decode_record(&r, 10, kClock, ev), DecodeStatus::TooShort);
  EXPECT_EQ(decode_record(&r, sizeof(r) - 1, kClock, ev), DecodeStatus::SizeMismatch);
  r.hdr.kind = 999;
  EXPECT_EQ(decode_record(&r, sizeof(r), kClock, ev), DecodeStatus::UnknownKind);
  gw_event_header h = header(GW_EV_OFFCPU, sizeof(gw_event_header));
  EXPECT_EQ(decode_record(&h, sizeof(h), kClock, ev), DecodeStatus::TooShort);
}

// A batch of launches: one call per item, at the batch's time plus the item's offset (negative for
// an outer launch that returned after the inner one), with only the kernel among its arguments and
// flags saying so. A batch whose size or count disagree is refused whole.
TEST(Decode, LaunchBatchGivesOneCallPerLaunch) {
  const ApiInfo* launch = find_api("cudaLaunchKernel");
  ASSERT_NE(launch, nullptr);
  gw_launch_batch b{};
  b.n = 3;
  b.hdr = header(GW_EV_LAUNCH_BATCH,
                 static_cast<uint16_t>(offsetof(gw_launch_batch, items) + 3 * sizeof(gw_launch_item)));
  const int32_t starts[] = {0, 2'000, -500};
  for (uint32_t i = 0; i < 3; ++i)
    b.items[i] = {0xfeed0 + i, starts[i], 100 * (i + 1), launch->id, 7,
                  static_cast<uint16_t>(i == 2 ? GW_FLAG_NO_RETURN : 0), 0,
                  static_cast<int32_t>(i) - 1, 0};
  std::vector<Event> out;
  ASSERT_EQ(decode_launch_batch(&b, b.hdr.size, kClock, out), DecodeStatus::Ok);
  ASSERT_EQ(out.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    const auto& c = std::get<ApiCall>(out[i]);
    EXPECT_EQ(c.ts, kClock.to_wall(5'000) + starts[i]);
    EXPECT_EQ(c.dur, 100 * (i + 1));
    EXPECT_EQ(c.pid, 42u);
    EXPECT_EQ(c.tid, 43u);
    EXPECT_EQ(c.api, launch->id);
    EXPECT_EQ(c.lib, 7);
    EXPECT_EQ(c.f.addr, 0xfeed0u + i) << "the kernel";
    EXPECT_EQ(c.f.blocks, 0u) << "no shape";
    EXPECT_EQ(c.ret, 0);
    EXPECT_EQ(c.stack_id, static_cast<int32_t>(i) - 1);
    EXPECT_EQ(c.flags, GW_FLAG_COMPACT | GW_FLAG_ARGS_SAMPLED_OUT | (i == 2 ? GW_FLAG_NO_RETURN : 0));
  }
  Event one;
  EXPECT_EQ(decode_record(&b, b.hdr.size, kClock, one), DecodeStatus::UnknownKind)
      << "a batch is not one event";
  out.clear();
  EXPECT_EQ(decode_launch_batch(&b, b.hdr.size - 1, kClock, out), DecodeStatus::SizeMismatch);
  b.n = 4;  // the header says three
  EXPECT_EQ(decode_launch_batch(&b, sizeof(b), kClock, out), DecodeStatus::SizeMismatch);
  b.n = GW_LAUNCH_BATCH + 1;
  b.hdr.size = sizeof(b);
  EXPECT_EQ(decode_launch_batch(&b, sizeof(b), kClock, out), DecodeStatus::SizeMismatch);
  EXPECT_EQ(decode_launch_batch(&b, 10, kClock, out), DecodeStatus::TooShort);
  EXPECT_TRUE(out.empty());
}

// The launch probes keep a batched launch's first argument slot as its kernel, read from the
// first or second argument register (bpf/api.bpf.h, gw_kernel_arg): every launch API must put it
// there.
TEST(Catalog, EveryLaunchHasItsKernelFirstInARegister) {
  int launches = 0;
  for (const ApiInfo& a : api_catalog()) {
    if (a.category != Category::Launch) continue;
    ++launches;
    EXPECT_EQ(a.args[0].field, Field::Func) << a.name;
    EXPECT_EQ(a.args[0].from.src, GW_ARG_REG) << a.name;
    EXPECT_LE(a.args[0].from.index, 1) << a.name;
  }
  EXPECT_GT(launches, 4);
}

// A batched launch's entry reads no spec: its cookie says it is batched, where its kernel is,
// whether it has a return probe and whether it is a runtime library's launch (a driver launch
// inside it is nested). The return probe and the records read only the low half.
TEST(Catalog, CookiesCarryWhatABatchedLaunchEntryNeeds) {
  for (const ApiInfo& a : api_catalog()) {
    const bool launch = a.category == Category::Launch;
    for (bool entry_only : {false, true}) {
      for (bool batch : {false, true}) {
        const uint64_t c = make_cookie(a, 7, entry_only, batch);
        EXPECT_EQ(c & 0xffffffffu, GW_COOKIE(a.id, 7)) << a.name;
        EXPECT_EQ(GW_COOKIE_API(c), a.id) << a.name;
        EXPECT_EQ(GW_COOKIE_LIB(c), 7) << a.name;
        EXPECT_EQ((c & GW_COOKIE_ENTRY_ONLY) != 0, entry_only) << a.name;
        EXPECT_EQ((c & GW_COOKIE_BATCHED) != 0, launch && batch) << a.name;
        EXPECT_EQ((c & GW_COOKIE_KERNEL_ARG2) != 0,
                  launch && batch && a.args[0].from.index == 1)
            << a.name;
        // The runtime libraries' launches, whose nested driver launches are not recorded.
        EXPECT_EQ((c & GW_COOKIE_RUNTIME_LAUNCH) != 0,
                  launch && (a.family == Family::Cudart || a.family == Family::Hip))
            << a.name;
      }
    }
  }
}

TEST(Catalog, IdsAreUniqueAndSpecsFitTheBpfArray) {
  std::set<uint16_t> ids;
  for (const ApiInfo& a : api_catalog()) {
    EXPECT_TRUE(ids.insert(a.id).second) << a.name;
    EXPECT_LT(a.id, GW_MAX_API) << a.name;
    EXPECT_EQ(find_api(a.name), &a);
  }
}

TEST(Clock, ParsesDurations) {
  EXPECT_EQ(parse_duration_ns("5m"), 300'000'000'000);
  EXPECT_EQ(parse_duration_ns("250ms"), 250'000'000);
  EXPECT_EQ(parse_duration_ns("2"), 2'000'000'000);
  EXPECT_EQ(parse_duration_ns("1.5h"), 5'400'000'000'000);
  EXPECT_EQ(parse_duration_ns("abc"), -1);
  EXPECT_EQ(parse_duration_ns("5 parsecs"), -1);
  EXPECT_EQ(parse_duration_ns("-3s"), -1);
}

// The BPF spec reads an API's in-memory words with one read over the span that covers them:
// cuLaunchKernel's block z and stream (stack words 1 and 3: 24 bytes from rsp+8), a launch
// config's four fields (offsets 0..39 behind the config register), cudaLaunchKernel's stream
// (one word); register-only APIs have no span.
TEST(Decode, SpecsReadMemoryWordsInOneSpan) {
  struct Want {
    const char* api;
    uint8_t src, reg, lo, len;
  };
  for (const Want& w : {Want{"cuLaunchKernel", GW_ARG_STACK, 0, 8, 24},
                        Want{"cuLaunchKernelEx", GW_ARG_DEREF, 0, 0, 40},
                        Want{"cudaLaunchKernelExC", GW_ARG_DEREF, 0, 0, 40},
                        Want{"cudaLaunchKernel", GW_ARG_STACK, 0, 16, 8},
                        Want{"cudaMemcpyAsync", GW_ARG_NONE, 0, 0, 0}}) {
    SCOPED_TRACE(w.api);
    const ApiInfo* api = find_api(w.api);
    ASSERT_NE(api, nullptr);
    const gw_api_spec s = make_spec(*api);
    EXPECT_EQ(s.span_src, w.src);
    EXPECT_EQ(s.span_reg, w.reg);
    EXPECT_EQ(s.span_lo, w.lo);
    EXPECT_EQ(s.span_len, w.len);
  }
}

}  // namespace
}  // namespace gpuwhy::reader
