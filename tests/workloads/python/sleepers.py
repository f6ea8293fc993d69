# SPDX-License-Identifier: Apache-2.0
# Two Python threads blocked in a C call (time.sleep releases the GIL, as a GPU call does), each
# at its own line, for the root test that walks the live interpreter's frames from user space
# the way the probe does (tests/root/python_frames_test.cpp). Prints one JSON line with each
# thread's ids once both sleep; ends on its own after a minute. With an argument, loads that GPU
# runtime first (ctypes), so that `gpuwhy check` lists the process.
import ctypes
import json
import sys
import threading
import time

if len(sys.argv) > 1:
    ctypes.CDLL(sys.argv[1])
ready = threading.Barrier(3)


def worker():
    ids["worker"] = [threading.get_ident(), threading.get_native_id()]
    ready.wait()
    time.sleep(60)  # WAIT 2 worker


def main_wait():
    ids["main"] = [threading.get_ident(), threading.get_native_id()]
    ready.wait()
    time.sleep(0.2)
    print(json.dumps(ids), flush=True)
    time.sleep(60)  # WAIT 1 main_wait


ids = {}
t = threading.Thread(target=worker, daemon=True)
t.start()
threading.Thread(target=lambda: ready.wait(), daemon=True).start()
main_wait()
