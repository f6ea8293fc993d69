# SPDX-License-Identifier: Apache-2.0
# A Python loop calling cudaLaunchKernel of a libcudart.so.13 through ctypes at a given Python
# stack depth; prints the mean ns per call. bench/python_cost.sh runs it untraced and traced.
# usage: python3 python_calls.py <libcudart.so.13> <calls> <depth>
import ctypes
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
CALLS, DEPTH = int(sys.argv[2]), int(sys.argv[3])


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


launch = lib.cudaLaunchKernel
launch.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
grid, block = Dim3(1, 1, 1), Dim3(1, 1, 1)


def loop(n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        launch(4096, grid, block, None, 0, None)
    return time.perf_counter_ns() - t0


def nest(d, n):
    return loop(n) if d <= 1 else nest(d - 1, n)


time.sleep(0.5)  # the tracer finds the process (dlopen hint) before the measured loop
nest(DEPTH, 1000)  # warm-up
print(nest(DEPTH, CALLS) / CALLS)
