# SPDX-License-Identifier: Apache-2.0
# GPU calls from code objects that live a moment only, as at a PyTorch start-up (where most of
# the frames left unnamed were such): the body of a module imported once and then dropped, a
# class body inside it, and code made by exec, each calling cudaMalloc through ctypes from its
# own line with its own size, then working `after` seconds more before it ends and its code
# object is freed (the next module's may be made at the same address). For the root test of
# Python frames (tests/root/python_frames_test.cpp): every such call names its own module, class
# or generated code, never another's.
# Module i's calls ask for 4096 * (100 + i) (body) and 4096 * (1000 + i) (class K<i>); exec'd
# code i's for 4096 * (3000 + i). Module i has i statements before its call, so its calls are
# at other instructions and lines than module i - 1's. Prints {"dir": ..., "modules": [{"file",
# "body_line", "class_line"}, ...]} when done.
# Usage: python3 short_lived.py <path of libcudart.so.13> [modules] [after seconds]
import ctypes
import gc
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
import types

# What importing the generated modules would import first (3.12's invalidate_caches imports
# importlib.metadata), before the tracer knows this process: its module bodies live microseconds.
importlib.invalidate_caches()
lib = ctypes.CDLL(sys.argv[1])
N = int(sys.argv[2]) if len(sys.argv) > 2 else 8
AFTER = float(sys.argv[3]) if len(sys.argv) > 3 else 0.3
lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
lib.cudaFree.argtypes = [ctypes.c_void_p]
shared = types.ModuleType("gw_short_lived_lib")
shared.lib, shared.AFTER = lib, AFTER
sys.modules[shared.__name__] = shared


def module_text(i):
    lines = ["import ctypes", "import time", "from gw_short_lived_lib import lib, AFTER"]
    lines += [f"v{k} = {k}" for k in range(i)]
    lines += ["p = ctypes.c_void_p()",
              f"lib.cudaMalloc(ctypes.byref(p), 4096 * {100 + i})",
              "lib.cudaFree(p)",
              f"class K{i}:",
              "    q = ctypes.c_void_p()",
              f"    lib.cudaMalloc(ctypes.byref(q), 4096 * {1000 + i})",
              "    lib.cudaFree(q)",
              "end = time.monotonic() + AFTER",
              "while time.monotonic() < end:",
              "    pass"]
    body = lines.index(f"lib.cudaMalloc(ctypes.byref(p), 4096 * {100 + i})") + 1
    klass = lines.index(f"    lib.cudaMalloc(ctypes.byref(q), 4096 * {1000 + i})") + 1
    return "\n".join(lines) + "\n", body, klass


# The tracer finds this process through its dlopen of the runtime and gives the probes its
# interpreter's layout within tens of milliseconds: calls before that have no Python line.
time.sleep(1.0)
root = tempfile.mkdtemp(prefix="gw_short_lived_")
sys.path.insert(0, root)
modules = []
for i in range(N):
    text, body, klass = module_text(i)
    path = os.path.join(root, f"gw_short_m{i}.py")
    with open(path, "w") as f:
        f.write(text)
    modules.append({"file": path, "body_line": body, "class_line": klass})
importlib.invalidate_caches()
sys.dont_write_bytecode = True
for i in range(N):
    importlib.import_module(f"gw_short_m{i}")
    del sys.modules[f"gw_short_m{i}"]  # its module, code and class freed
    gc.collect()
for i in range(N):
    code = compile("import ctypes, time\n"
                   "p = ctypes.c_void_p()\n"
                   f"lib.cudaMalloc(ctypes.byref(p), 4096 * {3000 + i})\n"
                   "lib.cudaFree(p)\n"
                   "end = time.monotonic() + AFTER\n"
                   "while time.monotonic() < end:\n"
                   "    pass\n", f"<generated {i}>", "exec")
    exec(code, {"lib": lib, "AFTER": AFTER})
    del code
    gc.collect()
time.sleep(0.3)  # the tracer names code objects while the process lives
print(json.dumps({"dir": root, "modules": modules}), flush=True)
shutil.rmtree(root)
