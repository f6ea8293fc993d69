/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one BPF object of gpuwhy. Each probe family lives in its own header; this translation unit
 * gathers them so maps and the license are defined exactly once.
 */
#include "gpuwhy.bpf.h"

#include "api.bpf.h"
#include "proc.bpf.h"
#include "sched.bpf.h"
#include "host.bpf.h"
#include "cpu.bpf.h"

char LICENSE[] SEC("license") = "GPL";
