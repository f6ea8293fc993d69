/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The probe-cost ladder (bench/probe_ladder.sh): entry/return program pairs that each add one piece
 * of what gpuwhy's API probes do, attached the way gpuwhy attaches them (uprobe_multi, same site),
 * so that the step from one rung to the next is what that piece costs per traced call.
 *   empty    nothing                                      (the floor at gpuwhy's own attachment)
 *   storage  entry and return each look up the thread's task storage (created at the first call)
 *   clock    + entry stores the time, return computes the duration (two clock reads)
 *   ring     + return writes a 48-byte record (header, duration, api) to the ring
 *   regs     + entry keeps the six argument registers, return writes them too: a 120-byte
 *            record, gpuwhy's shape
 *   args     + entry also reads one stack word (cudaLaunchKernel's stream: a user-memory read)
 *   args_s   the same read from a sleepable program (bpf_copy_from_user instead of
 *            bpf_probe_read_user)
 *   batch    regs, but the return appends its call to a batch in the thread's task storage and
 *            writes the ring once per LADDER_BATCH calls (bpf_ringbuf_output of the batch)
 *   compact  clock, and the return appends 16 bytes (start as an offset from the batch's first,
 *            duration, the kernel: what explain reads of a launch) to a batch of LADDER_COMPACT,
 *            written to the ring when full
 * Entry only (no return probe; the floor is `eempty`):
 *   eempty   nothing
 *   ecompact the entry appends (start, kernel) to a compact batch: one clock read
 *   ering    the entry writes a 120-byte record per call (gpuwhy's entry-only kind, bare)
 *   eclock   one clock read alone (what ecompact adds besides the lookup and the stores)
 *   ecpu     ecompact with the batch in a per-CPU array owned by the running thread instead of
 *            task storage: no storage helper call, the thread id from the current task
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "gpuwhy/abi/events.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} ladder_ring SEC(".maps");

#define LADDER_BATCH 16

struct ladder_item {
	__u64 ts, duration_ns, args[8], ret, out;
	__u16 api, lib;
	__s32 stack_id;
	__u16 flags, pad[3];
};

struct ladder_batch {
	struct gw_event_header hdr;
	__u32 n, pad;
	struct ladder_item items[LADDER_BATCH];
};

#define LADDER_COMPACT 32

struct compact_item {
	__u32 start; /* ns after the batch's base */
	__u32 duration_ns;
	__u64 func;
};

struct compact_batch {
	struct gw_event_header hdr; /* ts: the base */
	__u32 n, pad;
	struct compact_item items[LADDER_COMPACT];
};

struct open_call {
	__u64 ts;
	__u64 args[8];
	__u64 acc; /* keeps the duration live in the clock rung */
	struct ladder_batch batch; /* the batch rung's, beside its open call: one lookup */
	struct compact_batch compact;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct open_call);
} ladder_calls SEC(".maps");

struct gw_ladder_small {
	struct gw_event_header hdr;
	__u64 duration_ns;
	__u16 api;
	__u16 lib;
	__s32 stack_id;
};

static __always_inline struct open_call *calls(int create)
{
	return bpf_task_storage_get(&ladder_calls, bpf_get_current_task_btf(), 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

static __always_inline void fill_header(struct gw_event_header *h, __u16 size, __u64 ts)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	h->ts_ns = ts;
	h->pid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
	h->kind = GW_EV_API_CALL;
	h->size = size;
	h->cpu = (__u16)bpf_get_smp_processor_id();
	h->flags = 0;
}

SEC("uprobe") int e_empty(struct pt_regs *ctx) { return 0; }
SEC("uprobe") int r_empty(struct pt_regs *ctx) { return 0; }

SEC("uprobe") int e_storage(struct pt_regs *ctx)
{
	struct open_call *c = calls(1);

	if (c)
		c->ts = 1;
	return 0;
}

SEC("uprobe") int r_storage(struct pt_regs *ctx)
{
	struct open_call *c = calls(0);

	if (c)
		c->acc += c->ts;
	return 0;
}

SEC("uprobe") int e_clock(struct pt_regs *ctx)
{
	struct open_call *c = calls(1);

	if (c)
		c->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("uprobe") int r_clock(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct open_call *c = calls(0);

	if (c)
		c->acc += now - c->ts;
	return 0;
}

/* The return rungs' common start: the thread's open call, a reserved record of `size` bytes with
 * its header and duration (both record layouts start header, duration_ns). NULL: nothing to do. */
static __always_inline void *reserve_call(__u32 size, struct open_call **open)
{
	__u64 now = bpf_ktime_get_ns();
	struct open_call *c = calls(0);
	struct gw_ladder_small *r;

	if (!c)
		return 0;
	r = bpf_ringbuf_reserve(&ladder_ring, size, 0);
	if (!r)
		return 0;
	fill_header(&r->hdr, size, c->ts);
	r->duration_ns = now - c->ts;
	*open = c;
	return r;
}

/* A 120-byte record's fields after its arguments (return value, api from the cookie, no stack),
 * then the record submitted without a wake-up. */
static __always_inline void submit_call(struct pt_regs *ctx, struct gw_api_call *r, __u64 ret)
{
	r->ret = ret;
	r->out = 0;
	r->api = (__u16)bpf_get_attach_cookie(ctx);
	r->lib = 0;
	r->stack_id = -1;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

SEC("uprobe") int r_ring(struct pt_regs *ctx)
{
	struct open_call *c;
	struct gw_ladder_small *r = reserve_call(sizeof(*r), &c);

	if (!r)
		return 0;
	r->api = (__u16)bpf_get_attach_cookie(ctx);
	r->lib = 0;
	r->stack_id = -1;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

/* The six argument registers into args[0..5], args[6..7] zero: the shape of gpuwhy's record. */
static __always_inline void copy_regs(struct pt_regs *ctx, __u64 *args)
{
	args[0] = PT_REGS_PARM1(ctx);
	args[1] = PT_REGS_PARM2(ctx);
	args[2] = PT_REGS_PARM3(ctx);
	args[3] = PT_REGS_PARM4(ctx);
	args[4] = PT_REGS_PARM5(ctx);
	args[5] = ctx->r9;
	args[6] = 0;
	args[7] = 0;
}

static __always_inline struct open_call *keep_regs(struct pt_regs *ctx)
{
	struct open_call *c = calls(1);

	if (!c)
		return 0;
	c->ts = bpf_ktime_get_ns();
	copy_regs(ctx, c->args);
	return c;
}

SEC("uprobe") int e_regs(struct pt_regs *ctx)
{
	keep_regs(ctx);
	return 0;
}

SEC("uprobe") int e_args(struct pt_regs *ctx)
{
	struct open_call *c = keep_regs(ctx);

	if (c && bpf_probe_read_user(&c->args[6], 8, (void *)(PT_REGS_SP(ctx) + 16)))
		c->args[6] = 0;
	return 0;
}

SEC("uprobe.s") int e_args_s(struct pt_regs *ctx)
{
	struct open_call *c = keep_regs(ctx);

	if (c && bpf_copy_from_user(&c->args[6], 8, (void *)(PT_REGS_SP(ctx) + 16)))
		c->args[6] = 0;
	return 0;
}

SEC("uprobe") int r_batch(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct open_call *c = calls(0);
	struct ladder_batch *b;
	struct ladder_item *it;
	__u32 n;

	if (!c)
		return 0;
	b = &c->batch;
	n = b->n;
	if (n >= LADDER_BATCH)
		n = 0;
	it = &b->items[n];
	it->ts = c->ts;
	it->duration_ns = now - c->ts;
	__builtin_memcpy(it->args, c->args, sizeof(it->args));
	it->ret = PT_REGS_RC(ctx);
	it->out = 0;
	it->api = (__u16)bpf_get_attach_cookie(ctx);
	it->lib = 0;
	it->stack_id = -1;
	it->flags = 0;
	b->n = ++n;
	if (n == LADDER_BATCH) {
		fill_header(&b->hdr, sizeof(*b), b->items[0].ts);
		bpf_ringbuf_output(&ladder_ring, b, sizeof(*b), BPF_RB_NO_WAKEUP);
		b->n = 0;
	}
	return 0;
}

SEC("uprobe") int r_args(struct pt_regs *ctx)
{
	struct open_call *c;
	struct gw_api_call *r = reserve_call(sizeof(*r), &c);

	if (!r)
		return 0;
	__builtin_memcpy(r->args, c->args, sizeof(r->args));
	submit_call(ctx, r, PT_REGS_RC(ctx));
	return 0;
}

/* Appends (start, duration, func) to the thread's compact batch; writes it out when full or when
 * the start no longer fits 32 bits past the base. */
static __always_inline void compact_add(struct compact_batch *b, __u64 start, __u64 dur, __u64 func)
{
	__u32 n = b->n;

	if (n >= LADDER_COMPACT || start - b->hdr.ts_ns > 0xffffffffull)
		n = 0;
	if (n == 0)
		b->hdr.ts_ns = start;
	b->items[n].start = (__u32)(start - b->hdr.ts_ns);
	b->items[n].duration_ns = (__u32)dur;
	b->items[n].func = func;
	b->n = ++n;
	if (n == LADDER_COMPACT) {
		fill_header(&b->hdr, sizeof(*b), b->hdr.ts_ns);
		bpf_ringbuf_output(&ladder_ring, b, sizeof(*b), BPF_RB_NO_WAKEUP);
		b->n = 0;
	}
}

SEC("uprobe") int e_func(struct pt_regs *ctx)
{
	struct open_call *c = calls(1);

	if (c) {
		c->ts = bpf_ktime_get_ns();
		c->args[0] = PT_REGS_PARM1(ctx);
	}
	return 0;
}

SEC("uprobe") int r_compact(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct open_call *c = calls(0);

	if (c)
		compact_add(&c->compact, c->ts, now - c->ts, c->args[0]);
	return 0;
}

SEC("uprobe") int e_ecompact(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct open_call *c = calls(1);

	if (c)
		compact_add(&c->compact, now, 0, PT_REGS_PARM1(ctx));
	return 0;
}

SEC("uprobe") int e_eclock(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();

	asm volatile("" ::"r"(now));
	return 0;
}

struct cpu_slot {
	__u32 owner;
	__u32 pad;
	struct compact_batch compact;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_slot);
} ladder_cpu SEC(".maps");

SEC("uprobe") int e_ecpu(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0;
	struct cpu_slot *s = bpf_map_lookup_elem(&ladder_cpu, &zero);

	if (!s)
		return 0;
	if (s->owner != task->pid) {
		s->owner = task->pid;
		s->compact.n = 0;
	}
	compact_add(&s->compact, now, 0, PT_REGS_PARM1(ctx));
	return 0;
}

SEC("uprobe") int e_ering(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct open_call *c = calls(1);
	struct gw_api_call *r;

	if (!c)
		return 0;
	r = bpf_ringbuf_reserve(&ladder_ring, sizeof(*r), 0);
	if (!r)
		return 0;
	fill_header(&r->hdr, sizeof(*r), now);
	r->duration_ns = 0;
	copy_regs(ctx, r->args);
	submit_call(ctx, r, 0);
	return 0;
}
