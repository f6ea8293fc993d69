/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Off-CPU intervals of every traced thread, with what ran instead and who woke it. BTF
 * tracepoints (tp_btf) need no tracefs. An interval opens at sched_switch-out, learns its waker at
 * sched_waking, and is emitted at sched_switch-in. Its runnable part is counted on the CPU whose
 * run queue holds it (cpu_runs.bpf.h): from the preemption, or from sched_wakeup, through
 * sched_migrate_task, to the switch-in.
 */
#ifndef GPUWHY_SCHED_BPF_H
#define GPUWHY_SCHED_BPF_H

#include "gpuwhy.bpf.h"
#include "api.bpf.h" /* gw_flush_launches_of */
#include "cpu_runs.bpf.h"

struct gw_offcpu_open {
	__u64 ts;
	__u64 wake_ts;
	__s64 prev_state;
	__u32 next_pid;
	__u32 next_tid;
	__u32 waker_pid;
	__u32 waker_tid;
	char next_comm[GW_COMM_LEN];
	char waker_comm[GW_COMM_LEN];
	__u8 preempted;
	__u8 throttled; /* its CPU quota was used up: see gw_task_throttled() */
	__s16 syscall;
	__u16 wait_cpu;   /* the CPU it is counted waiting on (gw_cpu_wait), GW_NO_CPU: none */
	__u16 first_cpu;  /* the CPU it began waiting on */
	__u16 migrations; /* moves to another run queue while waiting */
	__u16 pad2;
	__u64 arg0;       /* the syscall's first argument (gw_offcpu.arg0) */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32); /* tid */
	__type(value, struct gw_offcpu_open);
} gw_offcpu_open SEC(".maps");

/* Scratch space: the open-interval record is too large for the BPF stack next to the others. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gw_offcpu_open);
} gw_offcpu_scratch SEC(".maps");

/*
 * Whether the task is held off the CPU by its cgroup's CPU quota (CFS bandwidth: cpu.max,
 * cpu.cfs_quota_us), not by another task. Since 6.18 the kernel throttles a task itself when it
 * returns to user mode and marks it (task_struct.throttled); before, the whole group's run queue
 * is throttled and its throttle_count (its own or an ancestor's throttling) says so. Either way
 * the task is still runnable when it leaves the CPU: without this it reads as a preemption by
 * whichever task ran next, or by nobody.
 */
static __always_inline __u8 gw_task_throttled(struct task_struct *p)
{
	struct cfs_rq *cq;

	if (bpf_core_field_exists(p->throttled))
		return BPF_CORE_READ(p, throttled) ? 1 : 0;
	if (!bpf_core_field_exists(p->se.cfs_rq))
		return 0; /* no group scheduling: no quota either */
	cq = BPF_CORE_READ(p, se.cfs_rq);
	if (!cq || !bpf_core_field_exists(cq->throttle_count))
		return 0;
	return BPF_CORE_READ(cq, throttle_count) > 0;
}

static __always_inline void gw_switch_out(struct task_struct *prev, struct task_struct *next,
					  bool preempt, unsigned int prev_state, __u64 now)
{
	__u32 zero = 0, tid = prev->pid, cpu = bpf_get_smp_processor_id();
	struct gw_offcpu_open *o = bpf_map_lookup_elem(&gw_offcpu_scratch, &zero);

	if (!o)
		return;
	o->ts = now;
	o->wake_ts = 0;
	o->prev_state = prev_state;
	/* Runnable when switched out means it lost the CPU involuntarily. */
	o->preempted = preempt || (prev_state & 0xff) == 0;
	o->throttled = o->preempted ? gw_task_throttled(prev) : 0;
	o->syscall = gw_task_syscall(prev);
	o->arg0 = o->syscall >= 0 ? gw_task_syscall_arg0(prev) : 0;
	o->next_pid = next->tgid;
	o->next_tid = next->pid;
	o->waker_pid = 0;
	o->waker_tid = 0;
	__builtin_memcpy(o->next_comm, next->comm, GW_COMM_LEN);
	__builtin_memset(o->waker_comm, 0, GW_COMM_LEN);
	/* A preempted thread waits in this CPU's queue from now; a blocked one from its wake-up. */
	o->wait_cpu = o->preempted ? cpu : GW_NO_CPU;
	o->first_cpu = o->wait_cpu;
	o->migrations = 0;
	o->pad2 = 0;
	if (bpf_map_update_elem(&gw_offcpu_open, &tid, o, BPF_ANY)) {
		gw_count(GW_CNT_OFFCPU_FULL);
		return;
	}
	/* Counted only once the record that uncounts it at switch-in is stored. */
	if (o->preempted)
		gw_cpu_wait__add(cpu, 1);
}

static __always_inline void gw_switch_in(struct task_struct *prev, struct task_struct *next,
					 __u64 now)
{
	__u32 tid = next->pid;
	struct gw_offcpu_open *o = bpf_map_lookup_elem(&gw_offcpu_open, &tid);
	struct gw_offcpu *rec;
	__u64 dur;

	if (!o)
		return;
	if (o->wait_cpu != GW_NO_CPU)
		gw_cpu_wait__add(o->wait_cpu, -1);
	dur = now - o->ts;
	if (dur < gw_cfg.min_offcpu_ns)
		goto done;
	rec = gw_reserve_event(sizeof(*rec));
	if (!rec)
		goto done;
	gw_fill_header(&rec->hdr, GW_EV_OFFCPU, sizeof(*rec), o->ts, next->tgid, tid);
	rec->duration_ns = dur;
	if (o->wake_ts)
		rec->runq_ns = now - o->wake_ts;
	else
		rec->runq_ns = o->preempted ? dur : 0;
	rec->prev_state = o->prev_state;
	rec->next_pid = o->next_pid;
	rec->next_tid = o->next_tid;
	rec->waker_pid = o->waker_pid;
	rec->waker_tid = o->waker_tid;
	__builtin_memcpy(rec->next_comm, o->next_comm, GW_COMM_LEN);
	__builtin_memcpy(rec->waker_comm, o->waker_comm, GW_COMM_LEN);
	rec->preempted = o->preempted;
	rec->throttled = o->throttled;
	rec->syscall = o->syscall;
	rec->pad2 = 0;
	/* prev is the task this one takes the CPU from: the last holder of the CPU it waited for. */
	rec->holder_pid = prev->tgid;
	rec->holder_tid = prev->pid;
	__builtin_memcpy(rec->holder_comm, prev->comm, GW_COMM_LEN);
	rec->wait_cpu = o->first_cpu;
	rec->migrations = o->migrations;
	rec->cpus_allowed = next->nr_cpus_allowed;
	rec->pad3 = 0;
	rec->arg0 = o->arg0;
	gw_submit_event(rec, sizeof(*rec));
done:
	bpf_map_delete_elem(&gw_offcpu_open, &tid);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(gw_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();

	gw_cpu_runs__switch(prev, now); /* before this switch's waits begin or end */
	if (gw_is_tracked(prev->tgid)) {
		/* before its interval: a batch never waits on a sleeper */
		gw_flush_launches_of(prev, prev->pid);
		gw_switch_out(prev, next, preempt, prev_state, now);
	}
	if (gw_is_tracked(next->tgid))
		gw_switch_in(prev, next, now);
	return 0;
}

/*
 * Interrupt context per CPU. A wake-up from a timer expiry (a timed-out futex, nanosleep, a poll
 * timeout), a softirq (a network receive, a timer-wheel timeout) or a device interrupt (a block
 * I/O completion) runs in whatever task the interrupt found on the CPU: naming that task as the
 * waker blamed a busy neighbour for a thread's own timeout. While a CPU is inside such a handler,
 * the waker is recorded as the kernel (pid 0) under the handler's name. Depth counts nesting; an
 * exit seen without its entry (attached mid-handler) is ignored. (The preempt count would say the
 * same without these hooks, but its per-CPU symbol is not resolvable on every kernel.)
 */
enum gw_irq_kind { GW_IRQ_TIMER = 1, GW_IRQ_SOFT = 2, GW_IRQ_HARD = 3 };

struct gw_irq_state {
	__u32 depth;
	__u32 kind; /* the innermost handler's gw_irq_kind */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gw_irq_state);
} gw_irq_ctx SEC(".maps");

static __always_inline void gw_irq_enter(__u32 kind)
{
	__u32 zero = 0;
	struct gw_irq_state *s = bpf_map_lookup_elem(&gw_irq_ctx, &zero);

	if (!s)
		return;
	s->depth++;
	s->kind = kind;
}

static __always_inline void gw_irq_leave(void)
{
	__u32 zero = 0;
	struct gw_irq_state *s = bpf_map_lookup_elem(&gw_irq_ctx, &zero);

	if (s && s->depth)
		s->depth--;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(gw_hrtimer_entry, struct hrtimer *t, ktime_t *now)
{
	gw_irq_enter(GW_IRQ_TIMER);
	return 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(gw_hrtimer_exit, struct hrtimer *t)
{
	gw_irq_leave();
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(gw_softirq_entry, unsigned int vec)
{
	gw_irq_enter(GW_IRQ_SOFT);
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(gw_softirq_exit, unsigned int vec)
{
	gw_irq_leave();
	return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(gw_hardirq_entry, int irq, struct irqaction *action)
{
	gw_irq_enter(GW_IRQ_HARD);
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(gw_hardirq_exit, int irq, struct irqaction *action, int ret)
{
	gw_irq_leave();
	return 0;
}

/* The interrupt handler the CPU is in, 0 when none. */
static __always_inline __u32 gw_irq_kind_now(void)
{
	__u32 zero = 0;
	struct gw_irq_state *s = bpf_map_lookup_elem(&gw_irq_ctx, &zero);

	return s && s->depth ? s->kind : 0;
}

static __always_inline void gw_note_wakeup(struct task_struct *p)
{
	__u32 tid, irq;
	struct gw_offcpu_open *o;
	__u64 waker;

	if (!gw_is_tracked(p->tgid))
		return;
	tid = p->pid;
	o = bpf_map_lookup_elem(&gw_offcpu_open, &tid);
	if (!o || o->wake_ts)
		return;
	o->wake_ts = bpf_ktime_get_ns();
	irq = gw_irq_kind_now();
	if (irq) {
		/* The kernel woke it; "irq/" names read as kernel tasks in user space. */
		o->waker_pid = 0;
		o->waker_tid = 0;
		__builtin_memset(o->waker_comm, 0, GW_COMM_LEN);
		if (irq == GW_IRQ_TIMER)
			__builtin_memcpy(o->waker_comm, "irq/timer", 10);
		else if (irq == GW_IRQ_SOFT)
			__builtin_memcpy(o->waker_comm, "irq/softirq", 12);
		else
			__builtin_memcpy(o->waker_comm, "irq/device", 11);
		return;
	}
	waker = bpf_get_current_pid_tgid();
	o->waker_pid = waker >> 32;
	o->waker_tid = (__u32)waker;
	bpf_get_current_comm(o->waker_comm, sizeof(o->waker_comm));
}

/*
 * sched_waking, not sched_wakeup: it fires in the waker's own context. A wake-up of a task whose
 * CPU is idle is queued to that CPU (TTWU_QUEUE) and sched_wakeup then fires there in the idle
 * task, which would name "swapper/N" as the waker of a thread a sibling's futex_wake released.
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(gw_sched_waking, struct task_struct *p)
{
	gw_note_wakeup(p);
	return 0;
}

/*
 * sched_wakeup, not sched_waking, starts a blocked thread's wait: it fires once the thread is
 * queued, with task_cpu() the CPU it was queued on (sched_waking fires before the CPU is chosen).
 * It runs under that CPU's run-queue lock, so it comes before the thread's switch-in there.
 */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(gw_sched_wakeup, struct task_struct *p)
{
	struct gw_offcpu_open *o;
	__u32 tid, cpu;

	if (!gw_is_tracked(p->tgid))
		return 0;
	tid = p->pid;
	o = bpf_map_lookup_elem(&gw_offcpu_open, &tid);
	/* Already waiting (a wake-up of a preempted thread changes nothing) or not off the CPU. */
	if (!o || o->wait_cpu != GW_NO_CPU)
		return 0;
	cpu = p->thread_info.cpu;
	if (!gw_cpu_wait__add(cpu, 1))
		return 0;
	/* Woken into a throttled group (before 6.18: the group's queue is off the CPU until the
	 * next period); since 6.18 it runs on to its return to user mode and is throttled there,
	 * a switch-out of its own. */
	if (!bpf_core_field_exists(p->throttled))
		o->throttled = gw_task_throttled(p);
	o->wait_cpu = cpu;
	o->first_cpu = cpu;
	return 0;
}

/*
 * A waiting thread moved to another CPU's queue (load balancing, an affinity change): its count
 * moves with it, and user space learns when, to clip the right CPU's runs. The migration that
 * places a thread being woken comes before sched_wakeup and finds it not yet waiting.
 */
SEC("tp_btf/sched_migrate_task")
int BPF_PROG(gw_sched_migrate, struct task_struct *p, int dest_cpu)
{
	struct gw_offcpu_open *o;
	__u32 tid;
	__u16 from;

	if (!gw_is_tracked(p->tgid))
		return 0;
	tid = p->pid;
	o = bpf_map_lookup_elem(&gw_offcpu_open, &tid);
	if (!o || o->wait_cpu == GW_NO_CPU || o->wait_cpu == (__u16)dest_cpu)
		return 0;
	from = o->wait_cpu;
	gw_cpu_wait__add(from, -1);
	o->wait_cpu = gw_cpu_wait__add(dest_cpu, 1) ? dest_cpu : GW_NO_CPU;
	o->migrations++;
	gw_emit_wait_migrate(p, from, dest_cpu);
	return 0;
}

#endif /* GPUWHY_SCHED_BPF_H */
