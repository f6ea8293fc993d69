// SPDX-License-Identifier: Apache-2.0
// gen_trace: writes a large, realistic, finished trace file through store::TraceWriter (the
// agent's own write path: batches of 16384 events, one transaction each, indexes at finish) and
// reports how fast that was.
//
//   gen_trace --out PATH [--events N (10000000)] [--processes P (4)] [--seed S (1)]
//
// Each process is a training job: a `trainer` thread (launch bursts, async uploads, one stream
// synchronize per step during which it sleeps off-CPU, sometimes preempted by a co-runner), a
// `pt_data_0` loader thread (pinned uploads, futex/I/O sleeps) and a `pt_autograd_0` thread
// (launches, short sleeps). Deterministic for a given seed. Prints one JSON line:
// {"events":..,"api_calls":..,"offcpu":..,"write_s":..,"rows_per_s":..,"finish_s":..,
//  "file_bytes":..,"bytes_per_event":..,"span_s":..}
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "store/store.hpp"

using namespace gpuwhy;

namespace {

struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  // Uniform in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % uint64_t(hi - lo + 1)); }
  bool chance(double p) { return (next() % 1000000) < p * 1000000; }
};

Comm comm_of(const char* s) {
  Comm c{};
  std::strncpy(c.data(), s, c.size() - 1);
  return c;
}

enum class Role { Trainer, Loader, Autograd };

struct Thread {
  uint32_t pid, tid;
  Role role;
  int64_t now;        // this thread's clock (wall ns)
  int step_pos = 0;   // position inside the trainer's step
  uint64_t stream;
};

constexpr uint16_t kLib = 1;
// Catalogue ids (src/catalog/api_catalog.cpp): stored, stable.
constexpr uint16_t kLaunch = 1, kMemcpyAsync = 7, kStreamSync = 22, kMalloc = 17, kFree = 20,
                   kEventSync = 25;
constexpr int kLaunchesPerStep = 60;

struct Gen {
  Rng rng;
  std::vector<Thread> threads;
  uint32_t hog_pid = 0;
  uint64_t n_api = 0, n_off = 0;

  ApiCall call(Thread& t, uint16_t api, int64_t dur) {
    ApiCall c;
    c.ts = t.now;
    c.dur = dur;
    c.pid = t.pid;
    c.tid = t.tid;
    c.api = api;
    c.lib = kLib;
    c.ret = 0;
    c.f.stream = t.stream;
    t.now += dur;
    return c;
  }

  OffCpu off(Thread& t, int64_t dur, bool preempted) {
    OffCpu o;
    o.ts = t.now;
    o.dur = dur;
    o.pid = t.pid;
    o.tid = t.tid;
    o.cpu = static_cast<uint32_t>(rng.range(0, 7));
    o.preempted = preempted;
    if (preempted) {
      o.prev_state = 0;
      o.runq = dur;
      if (rng.chance(0.7)) {
        o.next_pid = hog_pid;
        o.next_tid = hog_pid + static_cast<uint32_t>(rng.range(0, 5));
        o.next_comm = comm_of("cpu_hog");
      } else {
        o.next_pid = 0;
        o.next_tid = static_cast<uint32_t>(rng.range(100, 140));
        o.next_comm = comm_of("kworker/1:2");
      }
    } else {
      o.prev_state = 1;  // TASK_INTERRUPTIBLE
      o.runq = rng.range(2000, 40000);
      o.next_pid = 0;
      o.next_tid = 0;
      o.next_comm = comm_of("swapper/1");
      // Woken by the GPU completion thread of its own process, or by a sibling.
      o.waker_pid = t.pid;
      o.waker_tid = t.pid + 7;
      o.waker_comm = comm_of(t.role == Role::Trainer ? "cuda-EvtHandlr" : "python3");
    }
    t.now += dur;
    return o;
  }

  // Appends this thread's next event(s) to `out`.
  void step(Thread& t, std::vector<Event>& out) {
    t.now += rng.range(500, 4000);  // host work between calls
    switch (t.role) {
      case Role::Trainer: {
        const int pos = t.step_pos++;
        if (pos < kLaunchesPerStep) {
          if (rng.chance(0.02)) out.push_back(off(t, rng.range(20000, 2000000), true));
          ApiCall c = call(t, kLaunch, rng.range(3000, 12000));
          c.f.addr = 0x7f0000400000ull + 0x40 * uint64_t(pos % 24);
          c.f.blocks = uint64_t(rng.range(1, 4096));
          c.f.threads_per_block = 256;
          out.push_back(c);
        } else if (pos < kLaunchesPerStep + 2) {
          ApiCall c = call(t, kMemcpyAsync, rng.range(8000, 30000));
          c.f.bytes = 1 << 20;
          c.f.op = 1;  // host to device
          c.f.addr = 0x7f1000000000ull;
          c.f.addr2 = 0x7f2000000000ull;
          out.push_back(c);
        } else {
          // Synchronize: most of it asleep off-CPU, woken when the GPU drains.
          const int64_t wait = rng.range(2000000, 20000000);
          const int64_t ts = t.now;
          t.now += 3000;
          out.push_back(off(t, wait, false));
          t.now += 2000;
          ApiCall c = call(t, kStreamSync, 0);
          c.ts = ts;
          c.dur = t.now - ts;
          out.push_back(c);
          t.step_pos = 0;
        }
        break;
      }
      case Role::Loader: {
        if (rng.chance(0.5)) {
          out.push_back(off(t, rng.range(50000, 5000000), rng.chance(0.1)));
        } else if (rng.chance(0.05)) {
          ApiCall c = call(t, rng.chance(0.5) ? kMalloc : kFree, rng.range(100000, 300000));
          c.f.addr = 0x7f3000000000ull + uint64_t(rng.range(0, 1000)) * 0x100000;
          c.f.bytes = 8 << 20;
          out.push_back(c);
        } else {
          ApiCall c = call(t, kMemcpyAsync, rng.range(10000, 60000));
          c.f.bytes = 4 << 20;
          c.f.op = 1;
          out.push_back(c);
        }
        break;
      }
      case Role::Autograd: {
        if (rng.chance(0.3)) {
          out.push_back(off(t, rng.range(5000, 800000), rng.chance(0.2)));
        } else if (rng.chance(0.02)) {
          out.push_back(call(t, kEventSync, rng.range(50000, 3000000)));
        } else {
          ApiCall c = call(t, kLaunch, rng.range(3000, 9000));
          c.f.addr = 0x7f0000800000ull;
          c.f.blocks = 1024;
          c.f.threads_per_block = 128;
          out.push_back(c);
        }
        break;
      }
    }
  }
};

uint64_t arg_u64(int argc, char** argv, const char* name, uint64_t dflt) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::strtoull(argv[i + 1], nullptr, 10);
  return dflt;
}

std::string arg_str(int argc, char** argv, const char* name) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return {};
}

double secs(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

int die(const std::string& what) {
  std::fprintf(stderr, "gen_trace: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string out = arg_str(argc, argv, "--out");
  if (out.empty()) {
    std::fprintf(stderr,
                 "usage: gen_trace --out PATH [--events N (10000000)] [--processes P (4)] "
                 "[--seed S (1)]\n");
    return 2;
  }
  const uint64_t target = arg_u64(argc, argv, "--events", 10'000'000);
  const uint32_t nproc = static_cast<uint32_t>(arg_u64(argc, argv, "--processes", 4));
  const size_t batch_max = 16384;  // the reader's batch size (src/reader/ring_reader.hpp)

  Gen g{Rng{0x9e3779b97f4a7c15ull ^ arg_u64(argc, argv, "--seed", 1)}, {}};
  // Span: about 12 k events/s per process, so 10 M events over 4 processes cover ~3.5 minutes.
  const int64_t start = wall_ns() - int64_t(target / (nproc * 12000.0) * 1e9) - 60'000'000'000;
  g.hog_pid = 9000;

  store::SessionInfo s;
  s.host = "bench-host";
  s.kernel = "Linux 6.18 x86_64";
  s.agent_version = GPUWHY_VERSION;
  s.command_line = "gen_trace";
  s.boot_id = "00000000-0000-0000-0000-000000000000";
  s.start_ns = start;
  s.mono_to_wall_ns = 0;
  unlink(out.c_str());
  auto w = store::TraceWriter::create(out, s);
  if (!w) return die(w.error().line());
  store::TraceWriter& tw = **w;

  discover::LibraryFile lib;
  lib.path = lib.map_path = "/usr/local/cuda/lib/libcudart.so.13";
  lib.family = Family::Cudart;
  lib.dev = 2049;
  lib.inode = 131072;
  lib.soname = "libcudart.so.13";
  lib.version = "13.0.48";
  lib.build_id = "0123456789abcdef0123456789abcdef01234567";
  if (auto id = tw.add_library(lib, start, 0); !id) return die(id.error().line());

  for (uint32_t p = 0; p < nproc; ++p) {
    const uint32_t pid = 20000 + p * 100;
    discover::ProcessInfo pi;
    pi.pid = pid;
    pi.ppid = 1;
    pi.comm = "python3";
    pi.exe = "/usr/bin/python3.11";
    pi.cmdline = "python3 train.py --rank " + std::to_string(p);
    pi.cgroup = "/system.slice/train.service";
    pi.start_ns = start - 1'000'000'000;
    if (auto st = tw.upsert_process(pi, start); !st) return die(st.error().line());
    const struct {
      uint32_t off;
      Role role;
      const char* comm;
    } ts[] = {{0, Role::Trainer, "trainer"}, {1, Role::Loader, "pt_data_0"},
              {2, Role::Autograd, "pt_autograd_0"}};
    for (const auto& t : ts) {
      if (auto st = tw.upsert_thread(pid, pid + t.off, t.comm, start); !st)
        return die(st.error().line());
      g.threads.push_back(Thread{pid, pid + t.off, t.role, start + int64_t(p) * 777, 0,
                                 0x5500000000ull + pid});
    }
  }

  std::vector<Event> batch;
  batch.reserve(batch_max + 4);
  uint64_t written = 0;
  int64_t last_ts = start;
  const auto t0 = std::chrono::steady_clock::now();
  while (written < target) {
    batch.clear();
    // Round-robin over the threads, always advancing the one furthest behind in time: the file
    // is close to time order, as the agent's batches are.
    while (batch.size() < batch_max && written + batch.size() < target) {
      Thread* behind = &g.threads[0];
      for (Thread& t : g.threads)
        if (t.now < behind->now) behind = &t;
      g.step(*behind, batch);
    }
    if (batch.size() + written > target) batch.resize(target - written);
    for (const Event& ev : batch) (std::holds_alternative<ApiCall>(ev) ? g.n_api : g.n_off)++;
    if (auto st = tw.write_batch(batch); !st) return die(st.error().line());
    written += batch.size();
    for (const Thread& t : g.threads) last_ts = std::max(last_ts, t.now);
  }
  const auto t1 = std::chrono::steady_clock::now();

  const std::vector<store::LossCount> losses = {
      {"bpf", "events_ring_full", 0}, {"bpf", "lifecycle_ring_full", 0},
      {"bpf", "pending_full", 0},     {"bpf", "offcpu_full", 0},
      {"reader", "decode_error", 0},  {"store", "write_error", 0}};
  const std::vector<std::pair<std::string, uint64_t>> counts = {{"api_call", g.n_api},
                                                                {"offcpu", g.n_off}};
  if (auto st = tw.set_counts(losses, counts); !st) return die(st.error().line());
  if (auto st = tw.finish(last_ts); !st) return die(st.error().line());
  const auto t2 = std::chrono::steady_clock::now();
  w->reset();  // closes the file

  struct stat st {};
  stat(out.c_str(), &st);
  const double write_s = secs(t1 - t0), finish_s = secs(t2 - t1);
  std::printf(
      "{\"events\":%llu,\"api_calls\":%llu,\"offcpu\":%llu,\"write_s\":%.3f,\"rows_per_s\":%.0f,"
      "\"finish_s\":%.3f,\"file_bytes\":%lld,\"bytes_per_event\":%.1f,\"span_s\":%.1f}\n",
      (unsigned long long)written, (unsigned long long)g.n_api, (unsigned long long)g.n_off,
      write_s, written / write_s, finish_s, (long long)st.st_size,
      double(st.st_size) / double(written), (last_ts - start) / 1e9);
  return 0;
}
