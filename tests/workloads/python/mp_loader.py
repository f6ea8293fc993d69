# SPDX-License-Identifier: Apache-2.0
# A Python training loop starved by a data loader that is another process (a DataLoader-style
# multiprocessing worker), for the root test of culprit Python lines in worker processes
# (tests/root/python_frames_test.cpp). The main process makes GPU calls through ctypes (the
# simulated runtime) and blocks on the pipe the worker feeds; the worker, started with the
# multiprocessing start method given ("fork" or "spawn"), does CPU work on the line marked HOT
# before each batch. It never maps the GPU runtime itself (spawn: it imports this file as
# __mp_main__, which loads nothing at import). explain's chain must name the worker's line.
# Usage: python3 mp_loader.py <libcudart.so.13> <fork|spawn> [batches]
import ctypes
import hashlib
import json
import multiprocessing
import os
import sys
import time

RAW = bytes(16 << 20)


def produce():
    digest = hashlib.sha256(RAW).digest()  # HOT produce
    return digest


def worker(conn, batches):
    time.sleep(1.0)  # the tracer learns this process's interpreter meanwhile
    for _ in range(batches):
        conn.send_bytes(produce()[:8])
    conn.close()


def step(lib):
    p = ctypes.c_void_p()
    lib.cudaMalloc(ctypes.byref(p), 1 << 20)
    lib.cudaFree(p)
    lib.cudaDeviceSynchronize()


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    lib.cudaFree.argtypes = [ctypes.c_void_p]
    lib.cudaDeviceSynchronize.argtypes = []
    method = sys.argv[2]
    batches = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    ctx = multiprocessing.get_context(method)
    step(lib)
    time.sleep(0.5)  # the tracer finds this process and its interpreter
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=worker, args=(send, batches), name="loader")
    proc.start()
    send.close()
    recv.recv_bytes()
    # Where the loop begins (wall ns, the trace's clock), after the first batch: the test
    # explains from here on, so that the worker's start-up and sleep are not in view.
    loop_ns = time.time_ns()
    while True:
        try:
            recv.recv_bytes()  # the main thread waits for the worker's next batch
        except EOFError:
            break
        for _ in range(3):
            step(lib)
    proc.join()
    print(json.dumps({"workload": "mp_loader", "pid": os.getpid(), "worker_pid": proc.pid,
                      "loop_ns": loop_ns}), flush=True)


if __name__ == "__main__":
    main()
