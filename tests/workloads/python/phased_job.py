# SPDX-License-Identifier: Apache-2.0
# A job traced from its start to its exit (`gpuwhy trace -- python phased_job.py ...`), in the
# three phases a training script has:
# - start-up: building the model on the CPU, its weights copied to the device layer by layer
#   (synchronous copies), one warm-up step, then "compiling" on the CPU;
# - the steps: a few launches, a sync, then a pacing sleep with nothing queued (the planted cause:
#   the GPU idles while the dispatch thread sleeps);
# - the tail: a checkpoint, the weights copied back layer by layer and serialised on the CPU,
#   then a final evaluation on the CPU.
# Nothing in it says where a phase begins: only the rate of its GPU work does. With --no-phases
# the same steps run alone (no start-up, no tail).
# Usage: python3 phased_job.py <libcudart.so.13> [steps] [--no-phases]
# Prints one JSON line: the steps' own truth, from its own clocks: where they began and ended
# (wall ns, as the trace's timestamps) and the share of their time spent in the pacing sleep.
import ctypes
import json
import os
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
args = [a for a in sys.argv[2:] if not a.startswith("--")]
STEPS = int(args[0]) if args else 300
PHASES = "--no-phases" not in sys.argv


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


lib.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t,
                                 ctypes.c_void_p]
lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
lib.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
lib.cudaDeviceSynchronize.argtypes = []
H2D, D2H = 1, 2
LAYER_BYTES = 4 << 20
LAYERS = 16
KERNELS = [ctypes.cast(ctypes.create_string_buffer(16), ctypes.c_void_p).value for _ in range(3)]


def cpu_work(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        total += sum(i * i for i in range(200))
    return total


def step():
    for k in range(12):
        lib.cudaLaunchKernel(KERNELS[k % 3], Dim3(64, 1, 1), Dim3(256, 1, 1), None, 0, None)
    lib.cudaDeviceSynchronize()
    t0 = time.perf_counter_ns()
    time.sleep(0.004)  # PACING: the GPU has nothing queued meanwhile
    return time.perf_counter_ns() - t0


def main():
    host = ctypes.create_string_buffer(LAYER_BYTES)
    weights = []
    for _ in range(LAYERS):
        d = ctypes.c_void_p()
        lib.cudaMalloc(ctypes.byref(d), LAYER_BYTES)
        weights.append(d)
    if PHASES:
        cpu_work(0.8)  # building the model
        for d in weights:
            lib.cudaMemcpy(d, host, LAYER_BYTES, H2D)
            cpu_work(0.04)  # the next layer's initialisation
        step()  # warm-up
        cpu_work(0.5)  # compiling, autotuning
    start = time.time_ns()
    wall0 = time.perf_counter_ns()
    slept = 0
    for _ in range(STEPS):
        slept += step()
    wall = time.perf_counter_ns() - wall0
    end = time.time_ns()
    if PHASES:
        for d in weights:  # the checkpoint
            lib.cudaMemcpy(host, d, LAYER_BYTES, D2H)
            cpu_work(0.04)  # serialising the layer
        cpu_work(0.6)  # evaluating on the CPU
    print(json.dumps({"workload": "phased_job", "pid": os.getpid(), "steps": STEPS,
                      "steady_start_ns": start, "steady_end_ns": end,
                      "sleep_share": slept / wall}), flush=True)


main()
