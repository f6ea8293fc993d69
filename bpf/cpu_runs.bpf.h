/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Who held a CPU while a traced thread waited in its run queue. The thread's own switch-in says
 * only who had the CPU last; a short helper that preempted it and a busy neighbour that then ran
 * for milliseconds need the runs in between. So each CPU counts the traced threads runnable and
 * waiting on it (gw_cpu_wait.waiting: up at a preemption or a wake-up queued there, moved by a
 * migration, down at switch-in), and while the count is not zero every sched_switch on that CPU
 * emits the task it switches away from with its run since the CPU's previous switch
 * (gw_cpu_run). A CPU nobody traced waits on costs one array load and one store per switch.
 */
#ifndef GPUWHY_CPU_RUNS_BPF_H
#define GPUWHY_CPU_RUNS_BPF_H

#include "gpuwhy.bpf.h"

struct gw_cpu_wait {
	__s32 waiting;     /* traced threads runnable on this CPU's queue, waiting for it */
	__u32 touched;     /* a waiter came or left since this CPU's last switch */
	__u64 last_switch; /* ns of this CPU's last sched_switch; 0 before the first one seen */
	__u64 pad[6];      /* a cache line each: other CPUs change `waiting` */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set by user space: the possible CPUs */
	__type(key, __u32);
	__type(value, struct gw_cpu_wait);
} gw_cpu_wait SEC(".maps");

/* A traced thread starts (n = 1) or stops (n = -1) waiting on `cpu`. False for a CPU the map does
 * not have: the thread is then not counted (its wait_cpu stays GW_NO_CPU). */
static __always_inline bool gw_cpu_wait__add(__u32 cpu, int n)
{
	struct gw_cpu_wait *w = bpf_map_lookup_elem(&gw_cpu_wait, &cpu);

	if (!w)
		return false;
	__sync_fetch_and_add(&w->waiting, n);
	/* The run under way when the waiter came or left is emitted even if the count is back to 0
	 * by the next switch (a waiter pulled away by another CPU). */
	if (!w->touched)
		w->touched = 1;
	return true;
}

/* At every sched_switch, before the switched tasks' own waits change: ends this CPU's run of
 * `prev` and emits it if a traced thread waited for it. */
static __always_inline void gw_cpu_runs__switch(struct task_struct *prev, __u64 now)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct gw_cpu_wait *w = bpf_map_lookup_elem(&gw_cpu_wait, &cpu);
	struct gw_cpu_run *rec;
	__u64 last;

	if (!w)
		return;
	last = w->last_switch;
	w->last_switch = now;
	if (w->waiting <= 0 && !w->touched)
		return;
	w->touched = 0;
	if (!last)
		return;
	rec = gw_reserve_event(sizeof(*rec));
	if (!rec)
		return;
	gw_fill_header(&rec->hdr, GW_EV_CPU_RUN, sizeof(*rec), last, prev->tgid, prev->pid);
	rec->duration_ns = now - last;
	__builtin_memcpy(rec->comm, prev->comm, GW_COMM_LEN);
	gw_submit_event(rec, sizeof(*rec));
}

static __always_inline void gw_emit_wait_migrate(struct task_struct *p, __u32 from, __u32 to)
{
	struct gw_wait_migrate *rec = gw_reserve_event(sizeof(*rec));

	if (!rec)
		return;
	gw_fill_header(&rec->hdr, GW_EV_WAIT_MIGRATE, sizeof(*rec), bpf_ktime_get_ns(), p->tgid,
		       p->pid);
	rec->from_cpu = from;
	rec->to_cpu = to;
	gw_submit_event(rec, sizeof(*rec));
}

#endif /* GPUWHY_CPU_RUNS_BPF_H */
