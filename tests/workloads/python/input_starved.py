# SPDX-License-Identifier: Apache-2.0
# A Python training loop starved by its data loader, for the root test of culprit Python lines
# (tests/root/python_culprit_test.cpp). The main thread makes GPU calls through ctypes (the
# simulated runtime) and then blocks reading the next batch from a pipe; a loader thread (named
# "loader") fills the pipe after CPU work on the line marked HOT (hashing, which releases the GIL
# as decoding in C does: the main thread waits for the data, not for the GIL). explain's io_stall chain must
# name the loader thread and that line. The first calls are made at once, before the tracer can
# know the interpreter's layout (the test counts them). Usage: python3 input_starved.py
# <libcudart.so.13> [batches]
import ctypes
import hashlib
import json
import os
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
BATCHES = int(sys.argv[2]) if len(sys.argv) > 2 else 30
lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
lib.cudaFree.argtypes = [ctypes.c_void_p]
lib.cudaDeviceSynchronize.argtypes = []
libc = ctypes.CDLL(None)
PR_SET_NAME = 15


RAW = bytes(16 << 20)


def produce():
    digest = hashlib.sha256(RAW).digest()  # HOT produce
    return digest


def loader(w):
    libc.prctl(PR_SET_NAME, b"loader", 0, 0, 0)
    for _ in range(BATCHES):
        batch = produce()
        os.write(w, batch[:8])
    os.close(w)


def step():
    p = ctypes.c_void_p()
    lib.cudaMalloc(ctypes.byref(p), 1 << 20)
    lib.cudaFree(p)
    lib.cudaDeviceSynchronize()


def main():
    for _ in range(50):  # at once: some of these precede the tracer's discovery of the process
        step()
    time.sleep(1.0)  # the tracer gives the probes this interpreter's layout meanwhile
    # Where the loop begins (wall ns, the trace's clock): the test explains from here on, so
    # that the sleep above (3.10 sleeps in select(), read as a wait for data) is not in view.
    loop_ns = time.time_ns()
    r, w = os.pipe()
    t = threading.Thread(target=loader, args=(w,))
    t.start()
    while True:
        raw = os.read(r, 8)  # the main thread waits for the loader's next batch
        if not raw:
            break
        for _ in range(3):
            step()
    t.join()
    print(json.dumps({"workload": "input_starved", "pid": os.getpid(),
                      "loader_tid": t.native_id, "loop_ns": loop_ns}), flush=True)


main()
