// SPDX-License-Identifier: Apache-2.0
// Two exported functions with the same body. Built with -fcf-protection=full, gwb_cet begins with
// endbr64 and then `push %rbp`; gwb_plain (nocf_check) begins with `push %rbp` directly, like
// NVIDIA's libcudart entry points. A uprobe on endbr64 is single-stepped out of line; one on
// `push %rbp` is emulated. The bodies call a local helper so that, with frame pointers and no
// sibling calls, GCC gives them a frame (a leaf body would start with a RIP-relative load, which
// the kernel also single-steps).
//
// gwb_cet_past_endbr is a second function symbol at gwb_cet + 4 (past endbr64), so that a tracer
// without offset support (Debian's bpftrace 0.17 refuses `uprobe:LIB:gwb_cet+4`) can probe there.
// bench/placement.sh checks that gwb_cet really starts with endbr64 before measuring.
#include <stdint.h>

volatile uint64_t gwb_sink;

static __attribute__((noinline)) void gwb_work(uint64_t v) { gwb_sink += v; }

__attribute__((visibility("default"), noinline)) int gwb_cet(uint64_t a, uint64_t b) {
  gwb_work(a ^ b);
  return 0;
}

__attribute__((visibility("default"), noinline, nocf_check)) int gwb_plain(uint64_t a, uint64_t b) {
  gwb_work(a ^ b);
  return 0;
}

__asm__(".globl gwb_cet_past_endbr\n"
        ".type gwb_cet_past_endbr, @function\n"
        ".set gwb_cet_past_endbr, gwb_cet + 4\n"
        ".size gwb_cet_past_endbr, 8\n");
