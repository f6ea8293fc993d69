/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Shared layer of the gpuwhy BPF programs: configuration, maps, and the emit/count helpers.
 * Maps and the license are defined once, here; probe families (api.bpf.h, sched.bpf.h,
 * proc.bpf.h, host.bpf.h) build on these helpers and gpuwhy.bpf.c includes them all.
 */
#ifndef GPUWHY_BPF_H
#define GPUWHY_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "gpuwhy/abi/events.h"

/* Tunables (read-only data, set by user space before load). */
const volatile struct gw_config gw_cfg = {};

/* Bulk events: API calls, off-CPU intervals, syscalls, I/O. Size set by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} gw_events SEC(".maps");

/* Process lifecycle and discovery hints: low rate, its own ring so bulk pressure never drops them. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} gw_lifecycle SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GW_CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} gw_counters SEC(".maps");

/* Thread groups being traced: added by user space (discovery, --pid), by the first probed API call
 * of a process, and by fork from a traced parent; removed when the process ends. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} gw_tracked SEC(".maps");

static __always_inline void gw_count_n(__u32 counter, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&gw_counters, &counter);

	if (v)
		*v += n;
}

static __always_inline void gw_count(__u32 counter)
{
	gw_count_n(counter, 1);
}

static __always_inline bool gw_is_tracked(__u32 tgid)
{
	return tgid != 0 && tgid != gw_cfg.self_pid && bpf_map_lookup_elem(&gw_tracked, &tgid);
}

/*
 * The system call `task` is in, read from the user registers its kernel entry saved; -1 when it
 * is in none. orig_ax alone cannot say: an exception saves its error code there (a user page
 * fault's is 4-7, stat to poll as syscall numbers). The SYSCALL instruction leaves the return
 * address in rcx and the flags in r11, and the entry code saves both beside ip and flags, so
 * their equality marks a syscall entry; an interrupted or faulting thread matching both is
 * vanishingly unlikely.
 */
static __always_inline __s16 gw_task_syscall(struct task_struct *task)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	long nr;

	if (!regs)
		return -1;
	nr = regs->orig_ax; /* a BTF pointer: plain loads, no helper calls */
	if (nr < 0 || nr >= 1024 || regs->cx != regs->ip || regs->r11 != regs->flags)
		return -1;
	return nr;
}

/* The first argument of the system call the task is in (its saved rdi), as gw_task_syscall() reads
 * the number: a futex's address, a descriptor. Only meaningful when that says it is in one. */
static __always_inline __u64 gw_task_syscall_arg0(struct task_struct *task)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	return regs ? regs->di : 0;
}

static __always_inline void gw_fill_header(struct gw_event_header *h, __u16 kind, __u16 size,
					   __u64 ts, __u32 pid, __u32 tid)
{
	h->ts_ns = ts;
	h->pid = pid;
	h->tid = tid;
	h->kind = kind;
	h->size = size;
	h->cpu = (__u16)bpf_get_smp_processor_id();
	h->flags = 0;
}

/* Reserve in the bulk ring; a failure is a counted loss. */
static __always_inline void *gw_reserve_event(__u32 size)
{
	void *rec = bpf_ringbuf_reserve(&gw_events, size, 0);

	if (!rec)
		gw_count(GW_CNT_EVENTS_RING_FULL);
	return rec;
}

/* Submit without waking the reader (it polls every 5 ms) unless this record is the one that
 * fills the ring past the wake-up mark: one wakeup per event would cost more than the event, and
 * forcing one on every record once the reader is behind made each traced call 4x dearer.
 * A caller on the hottest path looks at the ring (a helper call, ~12 ns) only on one in `stride`
 * of its records (`look`), and the mark's window widens to match; a mark crossed unseen only
 * leaves the reader to its 5 ms poll. */
static __always_inline __u64 gw_submit_flags_strided(__u32 size, bool look, __u32 stride)
{
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (look) {
		__u64 avail = bpf_ringbuf_query(&gw_events, BPF_RB_AVAIL_DATA);

		if (avail >= gw_cfg.wakeup_bytes &&
		    avail < (__u64)gw_cfg.wakeup_bytes + 2 * (__u64)stride * size)
			flags = BPF_RB_FORCE_WAKEUP;
	}
	return flags;
}

static __always_inline void gw_submit_event_strided(void *rec, __u32 size, bool look, __u32 stride)
{
	bpf_ringbuf_submit(rec, gw_submit_flags_strided(size, look, stride));
}

/* The wake-up flags for a record of `size` bytes written with bpf_ringbuf_output (the same mark
 * as gw_submit_event, looked at on every such record). */
static __always_inline __u64 gw_wakeup_flags(__u32 size)
{
	__u64 avail = bpf_ringbuf_query(&gw_events, BPF_RB_AVAIL_DATA);

	return avail >= gw_cfg.wakeup_bytes && avail < (__u64)gw_cfg.wakeup_bytes + 2 * (__u64)size
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

static __always_inline void gw_submit_event(void *rec, __u32 size)
{
	gw_submit_event_strided(rec, size, true, 1);
}

static __always_inline void *gw_reserve_lifecycle(__u32 size)
{
	void *rec = bpf_ringbuf_reserve(&gw_lifecycle, size, 0);

	if (!rec)
		gw_count(GW_CNT_LIFECYCLE_RING_FULL);
	return rec;
}

#endif /* GPUWHY_BPF_H */
