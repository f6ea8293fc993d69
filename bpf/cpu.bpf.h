/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What traced threads do on the CPU, sampled: a perf_event timer on every CPU (set up by user
 * space, gw_config.sample_period_ns apart) finds the running task; a traced one is recorded with
 * the syscall it is in and whether the timer interrupted kernel code. The off-CPU intervals say
 * where a thread waited; these say where its CPU time went, a syscall's included, without the
 * syscall tracepoints' cost on every syscall of the host. In a Python process whose layout is
 * known, the sample also carries the thread's Python stack (python.bpf.h): the line a data loader
 * or a lock holder was running while the GPU thread waited for it.
 */
#ifndef GPUWHY_CPU_BPF_H
#define GPUWHY_CPU_BPF_H

#include "gpuwhy.bpf.h"
#include "api.bpf.h" /* gw_walk_user_stack, gw_thread_calls, gw_py_stack */

/* What a sampled thread that has no API-call storage (it never made a GPU call) remembers
 * between walks: created only for threads of Python processes. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct gw_py_thread_cache);
} gw_py_threads SEC(".maps");

/* The sampled thread's Python stack key, 0 when none: the same walk, depth and map as an API
 * call's, with a scratch of its own (the timer can interrupt an API probe's walk). A thread that
 * makes GPU calls shares the state address its probes remember. */
static __always_inline __u64 gw_py_sample_stack(struct task_struct *task,
						struct gw_py_thread_cache **cache)
{
	__u32 tgid = task->tgid;
	struct gw_thread_calls *tc;
	struct gw_py_thread_cache *pt;

	if (!gw_cfg.python_stacks || !bpf_map_lookup_elem(&gw_py_procs, &tgid))
		return 0;
	tc = bpf_task_storage_get(&gw_thread_calls, task, 0, 0);
	pt = tc ? &tc->py
		: bpf_task_storage_get(&gw_py_threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!pt)
		return 0;
	*cache = pt;
	return gw_py_stack(task, pt, GW_PY_SLOT_SAMPLE);
}

SEC("perf_event")
int gw_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gw_cpu_sample *rec;
	struct gw_py_thread_cache *py = NULL;
	__u64 cs, flags;

	if (!gw_is_tracked(pid_tgid >> 32))
		return 0;
	rec = gw_reserve_event(sizeof(*rec));
	if (!rec)
		return 0;
	gw_fill_header(&rec->hdr, GW_EV_CPU_SAMPLE, sizeof(*rec), bpf_ktime_get_ns(),
		       pid_tgid >> 32, (__u32)pid_tgid);
	rec->period_ns = gw_cfg.sample_period_ns;
	rec->syscall = gw_task_syscall(bpf_get_current_task_btf());
	/* The context is read in whole words only, and this kernel's pt_regs makes cs a 16-bit
	 * member of a union (FRED): read the word that holds it (the low bits are the privilege
	 * level; the verifier refuses a 2-byte context read). */
	cs = *(volatile __u64 *)&ctx->regs.cs;
	rec->kernel = (cs & 3) == 0;
	rec->pad = 0;
	rec->py_stack = gw_py_sample_stack(bpf_get_current_task_btf(), &py);
	/* A native stack with --stacks, and by default where no Python stack names the line: a
	 * native program's function is where its time went (a late rank decoding on the CPU). A
	 * Python thread's native stacks are the interpreter's frames, many and deep: they would fill
	 * the stack map without naming anything its Python line does not. */
	rec->stack_id = gw_cfg.capture_stacks || (gw_cfg.sample_stacks && rec->py_stack == 0)
				? gw_walk_user_stack(ctx)
				: -1;
	rec->min_flt = bpf_get_current_task_btf()->min_flt;
	rec->maj_flt = bpf_get_current_task_btf()->maj_flt;
	flags = gw_submit_flags_strided(sizeof(*rec), true, 1);
	bpf_ringbuf_submit(rec, py ? gw_py_submit_flags(py, rec->py_stack, flags) : flags);
	return 0;
}

#endif /* GPUWHY_CPU_BPF_H */
