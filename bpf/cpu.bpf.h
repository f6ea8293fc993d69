/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What traced threads do on the CPU, sampled: a perf_event timer on every CPU (set up by user
 * space, gw_config.sample_period_ns apart) finds the running task; a traced one is recorded with
 * the syscall it is in and whether the timer interrupted kernel code. The off-CPU intervals say
 * where a thread waited; these say where its CPU time went, a syscall's included, without the
 * syscall tracepoints' cost on every syscall of the host.
 */
#ifndef GPUWHY_CPU_BPF_H
#define GPUWHY_CPU_BPF_H

#include "gpuwhy.bpf.h"
#include "api.bpf.h" /* gw_user_stack */

SEC("perf_event")
int gw_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gw_cpu_sample *rec;
	__u64 cs;

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
	rec->stack_id = gw_user_stack(ctx);
	gw_submit_event(rec, sizeof(*rec));
	return 0;
}

#endif /* GPUWHY_CPU_BPF_H */
