# SPDX-License-Identifier: Apache-2.0
# A Python training loop on the simulated runtime with a per-step scalar read-back: the line
# marked READBACK copies 4 bytes device-to-host (what loss.item() does), which waits for every
# kernel queued so far, then the host prepares the backward pass while the GPU idles. explain's
# hidden_sync chain must name that line. Usage: python3 train_loop.py <libcudart.so.13> [steps]
import ctypes
import json
import os
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 150


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


lib.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t,
                                 ctypes.c_void_p]
lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
lib.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
lib.cudaDeviceSynchronize.argtypes = []
D2H = 2
# Any distinct addresses serve as kernels for the simulator.
KERNELS = [ctypes.cast(ctypes.create_string_buffer(16), ctypes.c_void_p).value for _ in range(4)]


def launch(kernel, n):
    for _ in range(n):
        lib.cudaLaunchKernel(kernel, Dim3(64, 1, 1), Dim3(256, 1, 1), None, 0, None)


def host_work(ns):
    end = time.perf_counter_ns() + ns
    while time.perf_counter_ns() < end:
        pass


def train_step(d_loss):
    launch(KERNELS[0], 12)  # forward
    loss = ctypes.c_float()
    lib.cudaMemcpy(ctypes.byref(loss), d_loss, 4, D2H)  # READBACK (loss.item())
    loss_value = loss.value
    host_work(8_000_000)  # the host builds the backward pass: the GPU has nothing queued
    launch(KERNELS[1], 12)  # backward
    host_work(300_000)
    launch(KERNELS[2], 4)  # optimizer
    return loss_value


def main():
    d_loss = ctypes.c_void_p()
    lib.cudaMalloc(ctypes.byref(d_loss), 4)
    time.sleep(1.0)  # the tracer gives the probes this interpreter's layout first
    for _ in range(STEPS):
        train_step(d_loss)
    lib.cudaDeviceSynchronize()
    time.sleep(0.3)
    print(json.dumps({"workload": "train_loop", "pid": os.getpid()}), flush=True)


main()
