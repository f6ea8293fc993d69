# SPDX-License-Identifier: Apache-2.0
# Two Python threads making GPU calls at the same time, each from its own line, for the root test
# of Python frames (tests/root/python_frames_test.cpp): both wait at a barrier, then call
# cudaMalloc through ctypes (the GIL released during each call, as PyTorch does) in a loop, so
# their calls overlap. Thread A's calls ask for 4096 * 7 bytes, B's for 4096 * 8; the lines end
# with a LINE marker (number, function). Prints {"a": tid, "b": tid} when done.
# Usage: python3 two_threads.py <path of libcudart.so.13> [calls per thread]
import ctypes
import json
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
CALLS = int(sys.argv[2]) if len(sys.argv) > 2 else 200
lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
lib.cudaFree.argtypes = [ctypes.c_void_p]
start = threading.Barrier(2)
tids = {}


def thread_a():
    tids["a"] = threading.get_native_id()
    start.wait()
    for _ in range(CALLS):
        p = ctypes.c_void_p()
        lib.cudaMalloc(ctypes.byref(p), 4096 * 7)  # LINE 7 thread_a
        lib.cudaFree(p)


def thread_b():
    tids["b"] = threading.get_native_id()
    start.wait()
    for _ in range(CALLS):
        q = ctypes.c_void_p()
        lib.cudaMalloc(ctypes.byref(q), 4096 * 8)  # LINE 8 thread_b
        lib.cudaFree(q)


# The tracer finds this process through its dlopen of the runtime and gives the probes its
# interpreter's layout within tens of milliseconds: calls before that have no Python line.
time.sleep(1.0)
threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
for t in threads:
    t.start()
for t in threads:
    t.join()
time.sleep(0.3)  # the tracer names code objects while the process lives
print(json.dumps(tids), flush=True)
