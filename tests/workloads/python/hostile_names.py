# SPDX-License-Identifier: Apache-2.0
# A traced process that names itself to attack the reader's terminal (tests/root/
# hostile_names_test.cpp): it sets its comm with prctl(PR_SET_NAME) to argv[2] (an escape
# sequence and a newline before a fake VERDICT), runs from a file whose name the test chose the
# same way, with an interpreter started under a hostile argv[0], and makes GPU calls from Python
# lines: a per-step scalar read-back (explain's hidden_sync chain names its line, file name
# included) and allocations (audit names their site). The test writes this file's copy with the
# marker on the READBACK line replaced by raw escape bytes: the line's source text is hostile too.
# Usage: python3 <copy of hostile_names.py> <libcudart.so.13> <comm> [steps]
import ctypes
import json
import os
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
libc = ctypes.CDLL(None)
PR_SET_NAME = 15
libc.prctl(PR_SET_NAME, ctypes.c_char_p(os.fsencode(sys.argv[2])), 0, 0, 0)
STEPS = int(sys.argv[3]) if len(sys.argv) > 3 else 60


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


lib.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t,
                                 ctypes.c_void_p]
lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
lib.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
lib.cudaDeviceSynchronize.argtypes = []
D2H = 2
KERNELS = [ctypes.cast(ctypes.create_string_buffer(16), ctypes.c_void_p).value for _ in range(2)]


def host_work(ns):
    end = time.perf_counter_ns() + ns
    while time.perf_counter_ns() < end:
        pass


def train_step(d_loss):
    for _ in range(8):
        lib.cudaLaunchKernel(KERNELS[0], Dim3(64, 1, 1), Dim3(256, 1, 1), None, 0, None)
    loss = ctypes.c_float()
    lib.cudaMemcpy(ctypes.byref(loss), d_loss, 4, D2H)  # READBACK HOSTILE_SOURCE
    host_work(6_000_000)  # the GPU has nothing queued
    for _ in range(8):
        lib.cudaLaunchKernel(KERNELS[1], Dim3(64, 1, 1), Dim3(256, 1, 1), None, 0, None)


def main():
    time.sleep(1.0)  # the tracer gives the probes this interpreter's layout first
    buffers = []
    for _ in range(4):
        p = ctypes.c_void_p()
        lib.cudaMalloc(ctypes.byref(p), 1 << 20)  # ALLOC
        buffers.append(p)
    d_loss = ctypes.c_void_p()
    lib.cudaMalloc(ctypes.byref(d_loss), 4)
    for _ in range(STEPS):
        train_step(d_loss)
    lib.cudaDeviceSynchronize()
    time.sleep(0.3)
    print(json.dumps({"workload": "hostile_names", "pid": os.getpid()}), flush=True)


main()
