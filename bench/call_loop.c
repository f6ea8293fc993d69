// SPDX-License-Identifier: Apache-2.0
// call_loop LIB SYMBOL CALLS: dlopen LIB, call SYMBOL CALLS times in a tight loop, print one JSON
// line {"symbol":..,"calls":N,"elapsed_ns":..,"ns_per_call":..}. A symbol named cuda* is called
// with cudaLaunchKernel's signature (func, dim3 grid, dim3 block, args, shared_mem, stream);
// any other with (uint64_t, uint64_t).
// call_loop - getppid CALLS: the getppid system call instead (what a tracer's syscall tracepoints
// cost every process on the host).
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  unsigned x, y, z;
} dim3;
typedef int (*launch_fn)(const void*, dim3, dim3, void**, size_t, void*);
typedef int (*plain_fn)(uint64_t, uint64_t);

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: call_loop LIB SYMBOL CALLS | call_loop - getppid CALLS\n");
    return 2;
  }
  const uint64_t calls = strtoull(argv[3], NULL, 10);
  if (strcmp(argv[1], "-") == 0 && strcmp(argv[2], "getppid") == 0) {
    const uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < calls; ++i) syscall(SYS_getppid);
    const uint64_t elapsed = now_ns() - t0;
    printf("{\"symbol\":\"getppid\",\"calls\":%llu,\"elapsed_ns\":%llu,\"ns_per_call\":%.2f}\n",
           (unsigned long long)calls, (unsigned long long)elapsed,
           calls ? (double)elapsed / (double)calls : 0.0);
    return 0;
  }
  void* h = dlopen(argv[1], RTLD_NOW);
  if (!h) {
    fprintf(stderr, "call_loop: %s\n", dlerror());
    return 1;
  }
  void* sym = dlsym(h, argv[2]);
  if (!sym) {
    fprintf(stderr, "call_loop: no symbol %s in %s\n", argv[2], argv[1]);
    return 1;
  }
  uint64_t bad = 0;
  uint64_t t0 = now_ns();
  if (strncmp(argv[2], "cuda", 4) == 0) {
    launch_fn f = (launch_fn)sym;
    const dim3 grid = {64, 1, 1}, block = {256, 1, 1};
    void* params[1] = {NULL};
    for (uint64_t i = 0; i < calls; ++i) bad += f((const void*)&main, grid, block, params, 0, NULL) != 0;
  } else {
    plain_fn f = (plain_fn)sym;
    for (uint64_t i = 0; i < calls; ++i) bad += f(i, calls) != 0;
  }
  const uint64_t elapsed = now_ns() - t0;
  printf("{\"symbol\":\"%s\",\"calls\":%llu,\"elapsed_ns\":%llu,\"ns_per_call\":%.2f}\n", argv[2],
         (unsigned long long)calls, (unsigned long long)elapsed,
         calls ? (double)elapsed / (double)calls : 0.0);
  return bad ? 1 : 0;
}
