# SPDX-License-Identifier: Apache-2.0
# GPU calls from known Python lines, for the root test of Python frames (tests/root/
# python_frames_test.cpp). Each site calls cudaMalloc through ctypes (the GIL released during the
# call, as PyTorch does) with its own size, 4096 * site number, so the test can tell the sites'
# calls apart; the line of each call ends with a SITE marker (number, function) for the test.
# Usage: python3 call_sites.py <path of libcudart.so.13> [rounds]
import asyncio
import ctypes
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
lib.cudaFree.argtypes = [ctypes.c_void_p]


def free(p):
    lib.cudaFree(p)


def plain():
    p = ctypes.c_void_p()
    lib.cudaMalloc(ctypes.byref(p), 4096 * 1)  # SITE 1 plain
    free(p)


def outer():
    def inner():
        p = ctypes.c_void_p()
        lib.cudaMalloc(ctypes.byref(p), 4096 * 2)  # SITE 2 outer.<locals>.inner
        free(p)
    inner()  # CALLER 2


def gen():
    for _ in range(2):
        p = ctypes.c_void_p()
        lib.cudaMalloc(ctypes.byref(p), 4096 * 3)  # SITE 3 gen
        yield p


async def coro():
    await asyncio.sleep(0)
    p = ctypes.c_void_p()
    lib.cudaMalloc(ctypes.byref(p), 4096 * 4)  # SITE 4 coro
    free(p)


class Trainer:
    def step(self):
        p = ctypes.c_void_p()
        lib.cudaMalloc(ctypes.byref(p), 4096 * 5)  # SITE 5 Trainer.step
        free(p)


def worker():
    for _ in range(ROUNDS):
        p = ctypes.c_void_p()
        lib.cudaMalloc(ctypes.byref(p), 4096 * 6)  # SITE 6 worker
        free(p)


def main():
    # The tracer finds this process through its dlopen of the runtime and gives the probes its
    # interpreter's layout within tens of milliseconds: calls before that have no Python line.
    time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 1.0)
    t = threading.Thread(target=worker, name="worker")
    t.start()
    trainer = Trainer()
    for _ in range(ROUNDS):
        plain()
        outer()
        for p in gen():
            free(p)
        asyncio.run(coro())
        trainer.step()
    t.join()
    time.sleep(0.3)  # the tracer names code objects while the process lives
    print("done", flush=True)


main()
