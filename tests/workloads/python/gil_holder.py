# SPDX-License-Identifier: Apache-2.0
# A training loop whose main thread makes the GPU calls (ctypes releases the GIL around each
# foreign call, as torch does around its CUDA calls) while a second Python thread, a metrics
# aggregator, runs pure-Python work. After every call the main thread must take the GIL back
# from the aggregator: the interpreter makes it wait up to its switch interval (5 ms) before it
# asks the holder to let go. Nothing in the program says "GIL": only the scheduler sees it.
# With --no-aggregator the same loop runs alone.
# Usage: python3 gil_holder.py <libcudart.so.13> [steps] [--no-aggregator]
# Prints one JSON line: the main thread's own truth over its loop, from the kernel's counters:
# wall time, its CPU time and its run-queue wait (/proc/thread-self/schedstat); the rest is time
# asleep, almost all of it waiting for the GIL: the GPU calls are launches, which return at once
# (the step never syncs: its kernels are short, and the queue never fills).
import ctypes
import json
import os
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
args = [a for a in sys.argv[2:] if not a.startswith("--")]
STEPS = int(args[0]) if args else 60
AGGREGATOR = "--no-aggregator" not in sys.argv


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


lib.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t,
                                 ctypes.c_void_p]
lib.cudaDeviceSynchronize.argtypes = []
KERNELS = [ctypes.cast(ctypes.create_string_buffer(16), ctypes.c_void_p).value for _ in range(2)]
stop = threading.Event()


def schedstat():
    with open("/proc/thread-self/schedstat") as f:
        on_cpu, waiting, _ = f.read().split()
    return int(on_cpu), int(waiting)


def aggregate_metrics(history):
    # Pure Python: holds the interpreter while it runs.
    while not stop.is_set():
        total = 0
        for i in range(2000):
            total += (i * i) % 7  # AGGREGATE
        history.append(total)
        if len(history) > 1000:
            del history[:500]


def train_step():
    for _ in range(5):
        lib.cudaLaunchKernel(KERNELS[0], Dim3(64, 1, 1), Dim3(256, 1, 1), None, 0, None)
    end = time.perf_counter_ns() + 2_000_000  # the host prepares the next batch
    while time.perf_counter_ns() < end:
        pass


def main():
    time.sleep(1.0)  # the tracer gives the probes this interpreter's layout first
    agg = None
    if AGGREGATOR:
        agg = threading.Thread(target=aggregate_metrics, args=([],), name="metrics")
        agg.start()
        time.sleep(0.05)
    wall0 = time.perf_counter_ns()
    cpu0, runq0 = schedstat()
    for _ in range(STEPS):
        train_step()
    cpu1, runq1 = schedstat()
    wall = time.perf_counter_ns() - wall0
    stop.set()
    if agg:
        agg.join()
    lib.cudaDeviceSynchronize()
    asleep = max(0, wall - (cpu1 - cpu0) - (runq1 - runq0))
    print(json.dumps({"workload": "gil_holder", "pid": os.getpid(),
                      "main_tid": threading.get_native_id(),
                      "aggregator_tid": agg.native_id if agg else 0,
                      "wall_ns": wall, "asleep_ns": asleep, "asleep_share": asleep / wall,
                      "runq_share": (runq1 - runq0) / wall}), flush=True)


main()
