// SPDX-License-Identifier: Apache-2.0
// TraceWriter: every event kind round-trips field by field, names are interned, lookup and
// metadata tables are filled, a failed batch is rolled back and counted.
#include <gtest/gtest.h>

#include "gpuwhy/abi/events.h"
#include "store/chunk_codec.hpp"
#include "store/event_tables.hpp"
#include "store_fixture.hpp"

namespace gpuwhy {
namespace {

using namespace gpuwhy::testing;
using Rows = std::vector<std::vector<std::string>>;

TEST(StoreWriter, SessionAndLookupTables) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->path(), path);
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->schema_version(), store::kSchemaVersion);
  EXPECT_EQ(f->status(), "recording");
  EXPECT_TRUE(f->is_live());
  EXPECT_EQ(f->writer_pid(), getpid());
  EXPECT_EQ(
      rows(*f,
           "SELECT id, status, host, kernel, agent_version, abi_version, command_line, "
           "pid_filter, start_ns, end_ns, last_commit_ns, batches, boot_id, "
           "mono_to_wall_ns FROM session"),
      (Rows{{"1", "recording", "gpu-host-1", "6.18.0", "0.1.0-test", std::to_string(GW_ABI_VERSION),
             "gpuwhy trace --out test.db", "NULL", std::to_string(kStart), "NULL", "NULL", "0",
             "boot-1234", "1600000000000000000"}}));
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM apis"), std::to_string(api_catalog().size()));
  const ApiInfo* a = find_api(std::string_view("ncclAllReduce"));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(rows(*f, "SELECT name, family, category FROM apis WHERE id = " + std::to_string(a->id)),
            (Rows{{"ncclAllReduce", "nccl", "collective"}}));
  EXPECT_EQ(rows(*f, "SELECT id, name FROM copy_kinds ORDER BY id"),
            (Rows{{"0", "host_to_host"},
                  {"1", "host_to_device"},
                  {"2", "device_to_host"},
                  {"3", "device_to_device"},
                  {"4", "default"}}));
  EXPECT_EQ(rows(*f,
                 "SELECT nr, name FROM syscall_names WHERE nr IN (0, 1, 7, 16, 202, 230, 232) "
                 "ORDER BY nr"),
            (Rows{{"0", "read"},
                  {"1", "write"},
                  {"7", "poll"},
                  {"16", "ioctl"},
                  {"202", "futex"},
                  {"230", "clock_nanosleep"},
                  {"232", "epoll_wait"}}));
  EXPECT_GE(std::stoi(scalar(*f, "SELECT count(*) FROM syscall_names")), 60);
  // The views read the event tables, which exist only on connections gpuwhy opens: the file
  // stores none (plain sqlite3 would find them broken); readers install their own.
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM main.sqlite_schema WHERE type = 'view'"), "0");
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM sqlite_temp_schema WHERE name = 'v_call_offcpu'"),
            "1");
}

TEST(StoreWriter, ApiCallsRoundTripWithCatalogueNulls) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  ApiCall copy = call("cudaMemcpyAsync", kStart + 10, 2500, 100, 101);
  copy.lib = 3;
  copy.ret = 0;
  copy.f.addr = 0x7f0000001000;
  copy.f.addr2 = 0x7f0000002000;
  copy.f.bytes = 1 << 20;
  copy.f.op = 1;
  copy.f.stream = 0;  // the legacy default stream is a real value: stored as 0, not NULL
  copy.stack_id = 42;
  copy.flags = GW_FLAG_READ_FAULT;
  ApiCall launch = call("cudaLaunchKernel", kStart + 20, 900, 100, 102);
  launch.ret = 98;
  launch.f.addr = 0x401000;
  launch.f.blocks = 1024;
  launch.f.threads_per_block = 256;
  launch.f.stream = 0x55;
  ApiCall sync = call("cudaDeviceSynchronize", kStart + 30, 1'000'000, 100, 101);
  ApiCall nccl = call("ncclAllReduce", kStart + 40, 5000, 100, 103);
  nccl.f.addr = 0x99;
  nccl.f.addr2 = 0x98;
  nccl.f.bytes = 4096;
  nccl.f.op = 0;  // ncclSum
  nccl.f.stream = 7;
  ApiCall init = call("ncclCommInitRank", kStart + 50, 7000, 100, 103);
  init.f.addr = 0xabc;
  init.f.nranks = 8;
  init.f.peer = 3;
  ApiCall unknown = call("cudaFree", kStart + 60, 10, 100, 101);
  unknown.api = GW_MAX_API - 1;  // an id this build's catalogue does not have: keep raw values
  unknown.f.bytes = 5;
  const std::vector<Event> batch{copy, launch, sync, nccl, init, unknown};
  ASSERT_TRUE(w->write_batch(batch).ok());
  ASSERT_TRUE(w->finish(kStart + kMs).ok());  // writes the open chunks

  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(
      rows(*f,
           "SELECT ts, dur, pid, tid, api, lib, ret, stream, bytes, op, addr, addr2, "
           "blocks, tpb, peer, nranks, stack_id, flags FROM api_calls ORDER BY ts"),
      (Rows{
          {std::to_string(kStart + 10), "2500", "100", "101", std::to_string(copy.api), "3", "0",
           "0", "1048576", "1", std::to_string(0x7f0000001000), std::to_string(0x7f0000002000),
           "NULL", "NULL", "NULL", "NULL", "42", "1"},
          {std::to_string(kStart + 20), "900", "100", "102", std::to_string(launch.api), "1", "98",
           "85", "NULL", "NULL", std::to_string(0x401000), "NULL", "1024", "256", "NULL", "NULL",
           "NULL", "0"},
          {std::to_string(kStart + 30), "1000000", "100", "101", std::to_string(sync.api), "1", "0",
           "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "0"},
          {std::to_string(kStart + 40), "5000", "100", "103", std::to_string(nccl.api), "1", "0",
           "7", "4096", "0", "153", "152", "NULL", "NULL", "NULL", "NULL", "NULL", "0"},
          {std::to_string(kStart + 50), "7000", "100", "103", std::to_string(init.api), "1", "0",
           "NULL", "NULL", "NULL", "2748", "NULL", "NULL", "NULL", "3", "8", "NULL", "0"},
          {std::to_string(kStart + 60), "10", "100", "101", std::to_string(GW_MAX_API - 1), "1",
           "0", "0", "5", "NULL", "0", "0", "0", "0", "NULL", "0", "NULL", "0"},
      }));
  EXPECT_EQ(rows(*f, "SELECT batches, last_event_ns FROM session"),
            (Rows{{"1", std::to_string(kStart + 30 + 1'000'000)}}));
  EXPECT_NE(scalar(*f, "SELECT last_commit_ns FROM session"), "NULL");
}

// A launch whose in-memory words were sampled out (GW_FLAG_ARGS_SAMPLED_OUT) stores NULL for the
// columns those words feed, and keeps what came from registers. Runtime launch: the stream is a
// stack word. Driver launch: block z (so tpb) and the stream are. Config launch: all but the
// kernel come from the config struct.
TEST(StoreWriter, SampledOutLaunchArgumentsAreNull) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  std::vector<Event> batch;
  int64_t t = kStart;
  for (const char* name : {"cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC"}) {
    for (const uint16_t flags : {0, GW_FLAG_ARGS_SAMPLED_OUT}) {
      ApiCall launch = call(name, t += 10, 900, 100, 102);
      launch.f.addr = 0x401000;
      launch.f.blocks = 1024;
      launch.f.threads_per_block = 256;
      launch.f.stream = 0;
      launch.flags = flags;
      batch.push_back(launch);
    }
  }
  ASSERT_TRUE(w->write_batch(batch).ok());
  ASSERT_TRUE(w->finish(kStart + kMs).ok());
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(rows(*f, "SELECT stream, addr, blocks, tpb, flags FROM api_calls ORDER BY ts"),
            (Rows{{"0", "4198400", "1024", "256", "0"},
                  {"NULL", "4198400", "1024", "256", "2"},
                  {"0", "4198400", "1024", "256", "0"},
                  {"NULL", "4198400", "1024", "NULL", "2"},
                  {"0", "4198400", "1024", "256", "0"},
                  {"NULL", "4198400", "NULL", "NULL", "2"}}));
}

// A call recorded at entry only (GW_FLAG_NO_RETURN, trace --entry-only) has no duration, return
// code or out-pointer value: NULL, not the zeros the record carries. Its arguments are kept.
TEST(StoreWriter, EntryOnlyCallsHaveNoDurationReturnOrOutValue) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  ApiCall launch = call("cudaLaunchKernel", kStart + 10, 0, 100, 102);
  launch.f.addr = 0x401000;
  launch.f.blocks = 8;
  launch.f.threads_per_block = 32;
  launch.flags = GW_FLAG_NO_RETURN;
  ApiCall alloc = call("cudaMalloc", kStart + 20, 0, 100, 102);
  alloc.f.bytes = 4096;
  alloc.f.addr = 0;  // the out-pointer is read at return
  alloc.flags = GW_FLAG_NO_RETURN;
  ApiCall returned = call("cudaMalloc", kStart + 30, 700, 100, 102);
  returned.f.bytes = 4096;
  returned.f.addr = 0x7000;
  ASSERT_TRUE(w->write_batch(std::vector<Event>{launch, alloc, returned}).ok());
  ASSERT_TRUE(w->finish(kStart + kMs).ok());
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(rows(*f, "SELECT dur, ret, bytes, addr, blocks, tpb, flags FROM api_calls ORDER BY ts"),
            (Rows{{"NULL", "NULL", "NULL", "4198400", "8", "32", "4"},
                  {"NULL", "NULL", "4096", "NULL", "NULL", "NULL", "4"},
                  {"700", "0", "4096", "28672", "NULL", "NULL", "0"}}));
}

TEST(StoreWriter, EveryOtherEventKindRoundTrips) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  discover::ProcessInfo p{.pid = 100,
                          .ppid = 1,
                          .comm = "python3",
                          .exe = "/usr/bin/python3",
                          .cmdline = "python3 train.py",
                          .cgroup = "/user.slice",
                          .start_ns = kStart - 5 * kMs};
  ASSERT_TRUE(w->upsert_process(p, kStart).ok());
  ASSERT_TRUE(w->upsert_thread(100, 104, "worker", kStart).ok());

  OffCpu o = offcpu(kStart + 1000, 500, 100, 101, false, "swapper/3", "nvidia-irq", 40);
  o.prev_state = 2;
  o.cpu = 7;
  o.holder_pid = 4242;
  o.holder_tid = 4243;
  o.holder_comm = comm("cpu_hog");
  OffCpu anon = offcpu(kStart + 2000, 300, 100, 101, true, "", "");
  SyscallEvent sc{.ts = kStart + 3000,
                  .dur = 70,
                  .pid = 100,
                  .tid = 101,
                  .nr = 202,
                  .ret = -110,
                  .arg0 = 0xffffffffffffffffull};
  BlockIo bio{.ts = kStart + 4000,
              .dur = 800,
              .pid = 100,
              .tid = 101,
              .dev = 0x800010,
              .sector = 123456789,
              .bytes = 4096,
              .op = 1,
              .error = -5};
  TcpRetrans tcp{.ts = kStart + 5000,
                 .pid = 0,
                 .tid = 0,
                 .family = 2,
                 .saddr = "10.0.0.1",
                 .daddr = "10.0.0.2",
                 .sport = 40000,
                 .dport = 29500,
                 .state = 1};
  TcpRetrans tcp2 = tcp;
  tcp2.pid = 100;
  tcp2.tid = 105;
  tcp2.saddr = "fe80::1";
  tcp2.family = 10;
  Reclaim rec{.ts = kStart + 6000, .dur = 9000, .pid = 100, .tid = 101, .nr_reclaimed = 32};
  ProcEvent exec{.ts = kStart + 7000,
                 .kind = ProcEventKind::Exec,
                 .pid = 100,
                 .tid = 100,
                 .other_pid = 1,
                 .other_tid = 0,
                 .exit_code = 0,
                 .comm = comm("python3"),
                 .filename = "/usr/bin/python3"};
  ProcEvent thr{.ts = kStart + 7100,
                .kind = ProcEventKind::Thread,
                .pid = 100,
                .tid = 100,
                .other_pid = 100,
                .other_tid = 104,
                .comm = comm("python3")};
  ProcEvent texit{.ts = kStart + 8000,
                  .kind = ProcEventKind::ThreadExit,
                  .pid = 100,
                  .tid = 104,
                  .exit_code = 0,
                  .comm = comm("worker")};
  ProcEvent pexit{.ts = kStart + 9000,
                  .kind = ProcEventKind::Exit,
                  .pid = 100,
                  .tid = 100,
                  .exit_code = 3,
                  .comm = comm("python3")};
  LibMapped lib{.ts = kStart + 9500, .pid = 100, .inode = 5, .dev = 6, .name = "libcudart.so"};
  const std::vector<Event> batch{o, anon, sc, bio, tcp, tcp2, rec, exec, thr, texit, pexit, lib};
  ASSERT_TRUE(w->write_batch(batch).ok());
  ASSERT_TRUE(w->finish(kStart + kMs).ok());

  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(rows(*f,
                 "SELECT o.ts, dur, runq, pid, tid, cpu, preempted, state, next_pid, "
                 "next_tid, n.s, waker_pid, waker_tid, w.s, holder_pid, holder_tid, h.s "
                 "FROM offcpu o LEFT JOIN strings n ON n.id = next_comm LEFT JOIN strings w "
                 "ON w.id = waker_comm LEFT JOIN strings h ON h.id = holder_comm ORDER BY o.ts"),
            (Rows{{std::to_string(kStart + 1000), "500", "40", "100", "101", "7", "0", "2", "900",
                   "901", "swapper/3", "800", "801", "nvidia-irq", "4242", "4243", "cpu_hog"},
                  {std::to_string(kStart + 2000), "300", "300", "100", "101", "3", "1", "0", "NULL",
                   "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"}}));
  EXPECT_EQ(rows(*f, "SELECT ts, dur, pid, tid, nr, ret, arg0 FROM syscalls"),
            (Rows{{std::to_string(kStart + 3000), "70", "100", "101", "202", "-110", "-1"}}));
  EXPECT_EQ(rows(*f, "SELECT ts, dur, pid, tid, dev, sector, bytes, op, error FROM block_io"),
            (Rows{{std::to_string(kStart + 4000), "800", "100", "101", std::to_string(0x800010),
                   "123456789", "4096", "1", "-5"}}));
  EXPECT_EQ(rows(*f,
                 "SELECT ts, pid, tid, family, saddr, sport, daddr, dport, state "
                 "FROM tcp_retrans ORDER BY rowid"),
            (Rows{{std::to_string(kStart + 5000), "NULL", "NULL", "2", "10.0.0.1", "40000",
                   "10.0.0.2", "29500", "1"},
                  {std::to_string(kStart + 5000), "100", "105", "10", "fe80::1", "40000",
                   "10.0.0.2", "29500", "1"}}));
  EXPECT_EQ(rows(*f, "SELECT ts, dur, pid, tid, nr_reclaimed FROM reclaim"),
            (Rows{{std::to_string(kStart + 6000), "9000", "100", "101", "32"}}));
  EXPECT_EQ(rows(*f,
                 "SELECT ts, kind, pid, tid, other_pid, other_tid, exit_code, comm, filename "
                 "FROM proc_events ORDER BY ts"),
            (Rows{{std::to_string(kStart + 7000), "exec", "100", "100", "1", "0", "NULL", "python3",
                   "/usr/bin/python3"},
                  {std::to_string(kStart + 7100), "thread", "100", "100", "100", "104", "NULL",
                   "python3", "NULL"},
                  {std::to_string(kStart + 8000), "thread_exit", "100", "104", "NULL", "NULL", "0",
                   "worker", "NULL"},
                  {std::to_string(kStart + 9000), "exit", "100", "100", "NULL", "NULL", "3",
                   "python3", "NULL"}}));
  EXPECT_EQ(rows(*f,
                 "SELECT pid, start_ns, ppid, comm, exe, cmdline, cgroup, first_seen_ns, "
                 "exit_ns, exit_code FROM processes"),
            (Rows{{"100", std::to_string(kStart - 5 * kMs), "1", "python3", "/usr/bin/python3",
                   "python3 train.py", "/user.slice", std::to_string(kStart),
                   std::to_string(kStart + 9000), "3"}}));
  EXPECT_EQ(
      rows(*f, "SELECT pid, tid, comm, first_seen_ns, exit_ns FROM threads"),
      (Rows{{"100", "104", "worker", std::to_string(kStart), std::to_string(kStart + 8000)}}));
  // last_event_ns is the latest interval end (the reclaim stall), not the latest start.
  EXPECT_EQ(scalar(*f, "SELECT last_event_ns FROM session"), std::to_string(kStart + 15000));
}

TEST(StoreWriter, TaskNamesAreInternedAcrossBatches) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  std::vector<Event> b1, b2;
  for (int i = 0; i < 50; ++i)
    b1.push_back(offcpu(kStart + i * 1000, 10, 1, 2, i % 2, "kworker/0:1", "python3"));
  for (int i = 0; i < 30; ++i)
    b2.push_back(offcpu(kStart + 100000 + i * 1000, 10, 1, 2, true, "kworker/0:1", "nccl-proxy"));
  ASSERT_TRUE(w->write_batch(b1).ok());
  ASSERT_TRUE(w->write_batch(b2).ok());
  ASSERT_TRUE(w->finish(kStart + kMs).ok());
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(rows(*f, "SELECT s FROM strings ORDER BY id"),
            (Rows{{"kworker/0:1"}, {"python3"}, {"nccl-proxy"}}));
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM offcpu"), "80");
  EXPECT_EQ(scalar(*f, "SELECT count(DISTINCT next_comm) FROM offcpu"), "1");
  EXPECT_EQ(scalar(*f, "SELECT batches FROM session"), "2");
}

TEST(StoreWriter, BatchesAroundTheChunkSizeKeepEveryRowInOrder) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  // Sizes around the rows-per-chunk boundary.
  int64_t ts = kStart;
  int total = 0;
  constexpr int kFull = static_cast<int>(store::kChunkRows);
  for (int n : {1, kFull - 2, kFull, kFull + 1, 3 * 8 + 5, 0}) {
    std::vector<Event> b;
    for (int i = 0; i < n; ++i) b.push_back(call("cudaLaunchKernel", ts++, 1, 7, 7));
    total += n;
    ASSERT_TRUE(w->write_batch(b).ok());
  }
  ASSERT_TRUE(w->finish(ts).ok());
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls"), std::to_string(total));
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM api_calls_chunks"),
            std::to_string((total + kFull - 1) / kFull));
  // Within a chunk, rowid order is time order; chunks were written in time order.
  EXPECT_EQ(scalar(*f,
                   "SELECT count(*) FROM api_calls a JOIN api_calls b ON b.rowid = a.rowid + 1 "
                   "WHERE b.ts <= a.ts"),
            "0");
}

TEST(StoreWriter, LibrariesProbesAndCounts) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  discover::LibraryFile lib{.path = "/proc/55/root/usr/lib/libcudart.so.13",
                            .map_path = "/usr/lib/libcudart.so.13",
                            .family = Family::Cudart,
                            .dev = 2049,
                            .inode = 777,
                            .soname = "libcudart.so.13",
                            .version = "13.0.48",
                            .build_id = "abcdef"};
  auto id = w->add_library(lib, kStart + 5, 55);
  ASSERT_TRUE(id.ok()) << id.error().line();
  auto again = w->add_library(lib, kStart + 9, 56);  // same (dev, inode): same row
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*id, *again);
  ASSERT_TRUE(w->add_lib_probe(*id, 1, 0x1234, 4, "").ok());
  ASSERT_TRUE(w->add_lib_probe(*id, 2, 0x2000, 0, "symbol not found").ok());
  ASSERT_TRUE(w->set_library_probe_counts(*id, 1, 1).ok());
  ASSERT_TRUE(w->upsert_thread(55, 56, "main", kStart).ok());
  ASSERT_TRUE(w->upsert_thread(55, 56, "renamed", kStart + 10).ok());  // still alive: same row

  const std::vector<store::LossCount> losses{{"bpf", "events_ring_full", 12},
                                             {"reader", "decode_error", 1}};
  const std::vector<std::pair<std::string, uint64_t>> counts{{"api_call", 1000}, {"offcpu", 20}};
  ASSERT_TRUE(w->set_counts(losses, counts).ok());
  const std::vector<store::LossCount> later{{"bpf", "events_ring_full", 15}};
  ASSERT_TRUE(w->set_counts(later, counts).ok());  // replaces, does not add

  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(rows(*f,
                 "SELECT id, family, path, soname, version, build_id, dev, inode, "
                 "first_seen_ns, seen_in_pid, probes_attached, probes_failed FROM libraries"),
            (Rows{{std::to_string(*id), "cudart", "/proc/55/root/usr/lib/libcudart.so.13",
                   "libcudart.so.13", "13.0.48", "abcdef", "2049", "777",
                   std::to_string(kStart + 5), "55", "1", "1"}}));
  EXPECT_EQ(rows(*f, "SELECT api_id, offset, skipped_bytes, error FROM lib_probes ORDER BY api_id"),
            (Rows{{"1", std::to_string(0x1234), "4", "NULL"},
                  {"2", std::to_string(0x2000), "0", "symbol not found"}}));
  EXPECT_EQ(rows(*f, "SELECT pid, tid, comm, first_seen_ns FROM threads"),
            (Rows{{"55", "56", "renamed", std::to_string(kStart)}}));
  EXPECT_EQ(rows(*f, "SELECT source, cause, count FROM losses ORDER BY source"),
            (Rows{{"bpf", "events_ring_full", "15"}}));
  EXPECT_EQ(rows(*f, "SELECT source, count FROM event_counts ORDER BY source"),
            (Rows{{"api_call", "1000"}, {"offcpu", "20"}}));
}

TEST(StoreWriter, FailedBatchIsRolledBackAndCountedAsStoreLoss) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  // Full chunks of off-CPU intervals: each batch writes one chunk of its thread.
  auto intervals = [](int64_t t0, uint32_t tid, const char* next) {
    std::vector<Event> b;
    for (uint32_t i = 0; i < store::kChunkRows; ++i)
      b.push_back(offcpu(t0 + i * 100, 5, 1, tid, true, next, ""));
    return b;
  };
  ASSERT_TRUE(w->write_batch(intervals(kStart, 1, "a")).ok());
  // Make chunk inserts fail from outside: the writer must name the table and roll back.
  raw_exec(path,
           "CREATE TRIGGER no_offcpu BEFORE INSERT ON offcpu_chunks "
           "BEGIN SELECT RAISE(ABORT, 'disk says no'); END;");
  Status st = w->write_batch(intervals(kStart + kMs, 2, "new-name"));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().what.find("offcpu"), std::string::npos) << st.error().what;
  EXPECT_NE(st.error().what.find("disk says no"), std::string::npos) << st.error().what;
  raw_exec(path, "DROP TRIGGER no_offcpu;");
  // The interned name of the failed batch was forgotten: it is inserted again, not dangling.
  ASSERT_TRUE(w->write_batch(intervals(kStart + 2 * kMs, 3, "new-name")).ok());
  ASSERT_TRUE(w->set_counts({}, {}).ok());
  const std::string lost = std::to_string(store::kChunkRows);
  {
    auto f = open_trace(path);
    ASSERT_TRUE(f);
    EXPECT_EQ(rows(*f, "SELECT source, cause, count FROM losses"),
              (Rows{{"store", "write_error", lost}}));
  }
  // A caller that counts the same failed events is not added to the store's own count.
  const std::vector<store::LossCount> same{{"store", "write_error", store::kChunkRows},
                                           {"bpf", "x", 1}};
  ASSERT_TRUE(w->set_counts(same, {}).ok());
  auto f = open_trace(path);
  ASSERT_TRUE(f);
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM offcpu WHERE tid = 2"), "0");
  EXPECT_EQ(scalar(*f, "SELECT count(*) FROM offcpu o JOIN strings s ON s.id = o.next_comm"),
            std::to_string(2 * store::kChunkRows));
  EXPECT_EQ(scalar(*f, "SELECT count(DISTINCT s) FROM strings"), "2");
  EXPECT_EQ(rows(*f, "SELECT source, cause, count FROM losses ORDER BY source"),
            (Rows{{"bpf", "x", "1"}, {"store", "write_error", lost}}));
  EXPECT_EQ(scalar(*f, "SELECT batches FROM session"), "2");
}

}  // namespace
}  // namespace gpuwhy
