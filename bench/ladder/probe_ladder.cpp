// SPDX-License-Identifier: Apache-2.0
// probe_ladder LIB SYMBOL RUNG: attaches one rung of probe_ladder.bpf.c (empty, storage, clock,
// ring, regs, args, args_s, batch, compact; entry only: eempty, eclock, ecompact, ecpu, ering) to
// SYMBOL in LIB as gpuwhy does (one uprobe_multi link for entry, one for return, at gpuwhy's probe
// offset), prints "ready", drains the ring until SIGINT/SIGTERM, then prints one
// JSON line {"rung":..,"records":N}. bench/probe_ladder.sh times a call loop under each rung.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "discover/discover.hpp"
#include "probe_ladder_bpf.skel.h"
#include "probes/uprobe_multi.hpp"

namespace {
volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }
int count_record(void* ctx, void*, size_t) {
  ++*static_cast<unsigned long long*>(ctx);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: probe_ladder LIB SYMBOL RUNG (see probe_ladder.bpf.c)\n");
    return 2;
  }
  const std::string lib = argv[1], symbol = argv[2], rung = argv[3];
  auto offset = gpuwhy::discover::function_probe_offset(lib, symbol);
  if (!offset) {
    std::fprintf(stderr, "probe_ladder: %s\n", offset.error().line().c_str());
    return 1;
  }
  probe_ladder_bpf* skel = probe_ladder_bpf__open();
  if (!skel) return 1;
  struct Pair {
    const char* rung;
    bpf_program* entry;
    bpf_program* ret;
  } pairs[] = {{"empty", skel->progs.e_empty, skel->progs.r_empty},
               {"storage", skel->progs.e_storage, skel->progs.r_storage},
               {"clock", skel->progs.e_clock, skel->progs.r_clock},
               {"ring", skel->progs.e_clock, skel->progs.r_ring},
               {"regs", skel->progs.e_regs, skel->progs.r_args},
               {"args", skel->progs.e_args, skel->progs.r_args},
               {"args_s", skel->progs.e_args_s, skel->progs.r_args},
               {"batch", skel->progs.e_regs, skel->progs.r_batch},
               {"compact", skel->progs.e_func, skel->progs.r_compact},
               // Entry only: no return program.
               {"eempty", skel->progs.e_empty, nullptr},
               {"ecompact", skel->progs.e_ecompact, nullptr},
               {"ering", skel->progs.e_ering, nullptr},
               {"eclock", skel->progs.e_eclock, nullptr},
               {"ecpu", skel->progs.e_ecpu, nullptr}};
  const Pair* pick = nullptr;
  for (const Pair& p : pairs)
    if (rung == p.rung) pick = &p;
  if (!pick) {
    std::fprintf(stderr, "probe_ladder: unknown rung %s\n", rung.c_str());
    return 2;
  }
  bpf_object* obj = skel->obj;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, obj) {
    const bool used = prog == pick->entry || prog == pick->ret;
    bpf_program__set_autoload(prog, used);
    bpf_program__set_autoattach(prog, false);
    if (used)
      bpf_program__set_expected_attach_type(
          prog, static_cast<bpf_attach_type>(gpuwhy::probes::kAttachUprobeMulti));
  }
  if (probe_ladder_bpf__load(skel)) {
    std::fprintf(stderr, "probe_ladder: load failed\n");
    return 1;
  }
  const std::vector<uint64_t> offsets{*offset}, cookies{1};
  auto e = gpuwhy::probes::attach_uprobe_multi(bpf_program__fd(pick->entry), lib, offsets, cookies,
                                               false);
  decltype(e) r = 0;
  if (pick->ret)
    r = gpuwhy::probes::attach_uprobe_multi(bpf_program__fd(pick->ret), lib, offsets, cookies, true);
  if (!e || !r) {
    std::fprintf(stderr, "probe_ladder: %s\n", (!e ? e.error() : r.error()).line().c_str());
    return 1;
  }
  unsigned long long records = 0;
  ring_buffer* rb =
      ring_buffer__new(bpf_map__fd(skel->maps.ladder_ring), count_record, &records, nullptr);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::printf("ready\n");
  std::fflush(stdout);
  // The programs submit without waking anyone (as gpuwhy's do), so epoll would never report the
  // ring: drain it on a timer, as gpuwhy's reader does.
  while (!g_stop) {
    ring_buffer__consume(rb);
    usleep(2000);
  }
  ring_buffer__consume(rb);
  std::printf("{\"rung\":\"%s\",\"records\":%llu}\n", rung.c_str(), records);
  ring_buffer__free(rb);
  close(*e);
  if (pick->ret) close(*r);
  probe_ladder_bpf__destroy(skel);
  return 0;
}
