// SPDX-License-Identifier: Apache-2.0
// trace --gpu-activity, the agent's half without a process: the CUPTI client's datagrams
// (include/gpuwhy/abi/gpu_activity.h) parsed and converted into gpu_activity rows, the rows
// written and read back, and the busy-time union audit states (analysis/gpu_truth.cpp).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "analysis/gpu_truth.hpp"
#include "gpu_activity/receiver.hpp"
#include "store_fixture.hpp"

namespace gpuwhy::testing {
namespace {

using Rows = std::vector<std::vector<std::string>>;

// Builds datagrams the way the client does.
struct Datagram {
  std::vector<uint8_t> bytes;
  template <class T>
  T& add(uint16_t kind, size_t extra = 0) {
    const size_t size = (sizeof(T) + extra + 7) & ~size_t{7};
    const size_t at = bytes.size();
    bytes.resize(at + size);
    auto* h = reinterpret_cast<gw_ga_header*>(bytes.data() + at);
    h->kind = kind;
    h->size = static_cast<uint16_t>(size);
    h->pid = 42;
    return *reinterpret_cast<T*>(bytes.data() + at);
  }
  void name(uint32_t id, const std::string& text) {
    const size_t at = bytes.size();
    add<gw_ga_name>(GW_GA_NAME, text.size());
    auto* n = reinterpret_cast<gw_ga_name*>(bytes.data() + at);
    n->name_id = id;
    n->len = static_cast<uint32_t>(text.size());
    std::memcpy(bytes.data() + at + sizeof(gw_ga_name), text.data(), text.size());
  }
  void kernel(uint64_t start, uint64_t end, uint32_t name_id) {
    auto& k = add<gw_ga_kernel>(GW_GA_KERNEL);
    k.start_ns = start;
    k.end_ns = end;
    k.stream = 7;
    k.correlation = 9;
    k.grid[0] = 128;
    k.block[0] = 256;
    k.name_id = name_id;
  }
};

TEST(GpuActivity, DatagramsBecomeRowsOnTheWallClock) {
  gpu_activity::Converter conv(ClockConverter(1'000), 0);
  Datagram d;
  d.add<gw_ga_hello>(GW_GA_HELLO).version = GW_GA_VERSION;
  d.name(1, "_Z6matmulPfS_i");
  d.kernel(5'000, 7'000, 1);
  auto& m = d.add<gw_ga_memcpy>(GW_GA_MEMCPY);
  m.start_ns = 8'000;
  m.end_ns = 9'000;
  m.bytes = 4096;
  m.copy_kind = 1;
  m.src_kind = 1;
  m.dst_kind = 3;
  d.add<gw_ga_dropped>(GW_GA_DROPPED).unsent = 3;
  ASSERT_TRUE(conv.add_datagram(d.bytes));
  const auto names = conv.take_names();
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].name, "matmul(float*, float*, int)");
  EXPECT_EQ(names[0].mangled, "_Z6matmulPfS_i");
  const auto rows = conv.take_rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].kind, "kernel");
  EXPECT_EQ(rows[0].ts, 6'000);  // monotonic + the offset
  EXPECT_EQ(rows[0].dur, 2'000);
  EXPECT_EQ(rows[0].name_id, names[0].id);
  EXPECT_EQ(rows[0].grid[0], 128);
  EXPECT_EQ(rows[1].kind, "memcpy");
  EXPECT_EQ(rows[1].copy_kind, "HtoD");
  EXPECT_EQ(rows[1].src_kind, "pageable");
  EXPECT_EQ(rows[1].dst_kind, "device");
  bool unsent = false;
  for (const auto& l : conv.losses())
    if (l.source == "cupti" && l.cause == "unsent") unsent = l.count == 3;
  EXPECT_TRUE(unsent);
  EXPECT_EQ(conv.family_state().first, "on");
}

TEST(GpuActivity, MalformedAndUnknownRecords) {
  gpu_activity::Converter conv(ClockConverter(0), 0);
  Datagram d;
  d.kernel(1, 2, 0);
  d.add<gw_ga_hello>(77);  // a kind from a newer client: skipped
  d.kernel(3, 4, 0);
  std::vector<uint8_t> cut = d.bytes;
  cut.resize(cut.size() - 8);  // the last record cut short
  EXPECT_FALSE(conv.add_datagram(cut));
  EXPECT_EQ(conv.take_rows().size(), 1u);  // the records before the damage are kept
  std::vector<uint8_t> zero(16, 0);        // size 0: no progress possible
  EXPECT_FALSE(conv.add_datagram(zero));
  uint64_t malformed = 0;
  for (const auto& l : conv.losses())
    if (l.cause == "malformed") malformed = l.count;
  EXPECT_EQ(malformed, 2u);
}

TEST(GpuActivity, TimeBoxAndStepAside) {
  gpu_activity::Converter conv(ClockConverter(0), 10'000);
  Datagram d;
  d.kernel(9'000, 9'500, 0);
  d.kernel(10'000, 11'000, 0);  // starts at the bound: not kept
  d.kernel(9'000, 0, 0);        // an end CUPTI never filled in: not kept either
  const std::string text = "another CUPTI subscriber is present";
  const size_t at = d.bytes.size();
  d.add<gw_ga_status>(GW_GA_STATUS, text.size());
  auto* s = reinterpret_cast<gw_ga_status*>(d.bytes.data() + at);
  s->code = GW_GA_ST_OTHER_SUBSCRIBER;
  s->len = static_cast<uint32_t>(text.size());
  std::memcpy(d.bytes.data() + at + sizeof(gw_ga_status), text.data(), text.size());
  ASSERT_TRUE(conv.add_datagram(d.bytes));
  EXPECT_EQ(conv.take_rows().size(), 1u);
  const auto listed = conv.event_counts();
  std::map<std::string, uint64_t> counts(listed.begin(), listed.end());
  EXPECT_EQ(counts["gpu_activity_after_time_box"], 1u);
  EXPECT_EQ(counts["gpu_activity_bad_times"], 1u);
  const auto [state, detail] = conv.family_state();
  EXPECT_EQ(state, "failed");
  EXPECT_NE(detail.find("pid 42: another CUPTI subscriber"), std::string::npos) << detail;
}

TEST(GpuActivity, RowsRoundTripThroughTheStore) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  store::GpuKernelName n{1, 42, "matmul(float*)", "_Z6matmulPf"};
  store::GpuActivityRow k;
  k.kind = "kernel";
  k.pid = 42;
  k.ts = kStart + 5 * kMs;
  k.dur = kMs;
  k.device = 0;
  k.stream = 7;
  k.name_id = 1;
  k.has_dims = true;
  k.grid[0] = 2;
  k.block[0] = 64;
  store::GpuActivityRow c;
  c.kind = "memcpy";
  c.pid = 42;
  c.ts = kStart + 6 * kMs;
  c.dur = kMs / 2;
  c.bytes = 1 << 20;
  c.copy_kind = "DtoH";
  c.src_kind = "device";
  c.dst_kind = "pinned";
  std::vector<store::GpuActivityRow> rs{k, c};
  ASSERT_TRUE(w->write_gpu_activity(std::span(&n, 1), rs));
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(rows(*f,
                 "SELECT a.kind, a.dur, a.grid_x, a.block_x, a.bytes, a.copy_kind, a.dst_kind, "
                 "n.name FROM gpu_activity a LEFT JOIN gpu_kernel_names n ON n.id = a.name_id "
                 "ORDER BY a.ts"),
            (Rows{{"kernel", "1000000", "2", "64", "NULL", "NULL", "NULL", "matmul(float*)"},
                  {"memcpy", "500000", "NULL", "NULL", "1048576", "DtoH", "pinned", "NULL"}}));
}

TEST(GpuActivity, BusyIsTheUnionClippedToTheSpan) {
  std::vector<std::pair<int64_t, int64_t>> iv{{0, 10}, {5, 15}, {20, 30}, {40, 50}, {-5, 2}};
  EXPECT_EQ(analysis::union_ns(iv, 0, 45), 15 + 10 + 5);
  std::vector<std::pair<int64_t, int64_t>> none;
  EXPECT_EQ(analysis::union_ns(none, 0, 100), 0);
}

}  // namespace
}  // namespace gpuwhy::testing
