// SPDX-License-Identifier: Apache-2.0
// synth_ingest --rate N --seconds S [--batch B] [--api ID]: drives a running `gpuwhy trace` at N
// events/s for S seconds by writing synthetic API-call records straight into its event ring
// (synth_ingest.bpf.c, run with BPF_PROG_TEST_RUN on this thread's CPU). What it measures is the
// agent's side alone, reader and store: on a 2-core machine no traced process can make 1 M probed
// calls/s (each costs a uprobe trap), so ingest capacity is measured with this producer instead.
// Prints one JSON line {"target_rate":..,"seconds":..,"written":..,"dropped":..,"rate":..}.
// `dropped` counts records the full ring refused: the agent did not keep up.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "synth_ingest_bpf.skel.h"

namespace {

struct SynthArgs {  // synth_ingest.bpf.c: struct synth_args
  uint32_t count, pid, tid, api, wakeup_bytes, pad;
  uint64_t written, dropped;
};

// The newest ring map named gw_events: the agent's event ring (started last).
int find_agent_ring(uint32_t* ring_bytes) {
  uint32_t id = 0, best = 0;
  while (bpf_map_get_next_id(id, &id) == 0) {
    const int fd = bpf_map_get_fd_by_id(id);
    if (fd < 0) continue;
    bpf_map_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.type == BPF_MAP_TYPE_RINGBUF &&
        std::strcmp(info.name, "gw_events") == 0 && id > best) {
      best = id;
      *ring_bytes = info.max_entries;
    }
    close(fd);
  }
  return best ? bpf_map_get_fd_by_id(best) : -1;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "synth_ingest: %s\nusage: synth_ingest --rate N --seconds S [--batch B] [--api ID]\n", why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  double rate = 0, seconds = 0;
  uint32_t batch = 512, api = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--rate") rate = std::atof(v);
    else if (k == "--seconds") seconds = std::atof(v);
    else if (k == "--batch") batch = static_cast<uint32_t>(std::atoi(v));
    else if (k == "--api") api = static_cast<uint32_t>(std::atoi(v));
    else usage(("unknown option " + k).c_str());
  }
  if (rate <= 0 || seconds <= 0 || batch == 0) usage("--rate and --seconds are required");

  uint32_t ring_bytes = 0;
  const int ring = find_agent_ring(&ring_bytes);
  if (ring < 0) usage("no gpuwhy event ring found: start `gpuwhy trace` first");
  synth_ingest_bpf* skel = synth_ingest_bpf__open();
  if (!skel || bpf_map__reuse_fd(skel->maps.gw_events, ring) != 0 || synth_ingest_bpf__load(skel) != 0)
    usage("cannot load the synthetic producer (root? BTF?)");
  const int prog = bpf_program__fd(skel->progs.synth_write);

  SynthArgs a{};
  a.count = batch;
  a.pid = static_cast<uint32_t>(getpid());
  a.tid = static_cast<uint32_t>(gettid());
  a.api = api;
  a.wakeup_bytes = ring_bytes / 4;
  uint64_t written = 0, dropped = 0;
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration<double>(seconds);
  for (auto now = t0; now < end; now = Clock::now()) {
    // Paced: write a batch whenever the schedule is behind, sleep when it is ahead.
    const double due = std::chrono::duration<double>(now - t0).count() * rate;
    if (static_cast<double>(written + dropped) >= due) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &a, .ctx_size_in = sizeof(a));
    if (bpf_prog_test_run_opts(prog, &opts) != 0) usage("BPF_PROG_TEST_RUN failed");
    written += a.written;
    dropped += a.dropped;
  }
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("{\"target_rate\":%.0f,\"seconds\":%.3f,\"written\":%llu,\"dropped\":%llu,\"rate\":%.0f}\n",
              rate, took, static_cast<unsigned long long>(written),
              static_cast<unsigned long long>(dropped), static_cast<double>(written) / took);
  synth_ingest_bpf__destroy(skel);
  close(ring);
  return 0;
}
