/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * GPU API calls (CUDA runtime, CUDA driver, NCCL, HIP): one generic entry program and one generic
 * return program serve every probed function. The attach cookie names the API and the library; the
 * API's spec (gw_api_specs, filled by user space from the catalogue) says which argument words to
 * capture. Entry and return are paired per thread and emitted as one record at return; an
 * entry-only API (no return probe attached) is emitted by its entry. Where the kernel has uprobe
 * sessions (6.13), the driver library's launches are probed by a third program, run at entry and
 * at return, that records nothing for a launch made inside an open runtime launch (below).
 */
#ifndef GPUWHY_API_BPF_H
#define GPUWHY_API_BPF_H

#include "gpuwhy.bpf.h"
#include "python.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GW_MAX_API);
	__type(key, __u32);
	__type(value, struct gw_api_spec);
} gw_api_specs SEC(".maps");

/* Calls one thread can have open at once. Probed calls nest (cudaMemcpy -> cuMemcpyDtoH, an NCCL
 * collective -> runtime and driver calls) but not deeply; a power of two, slots are head & mask. */
#define GW_OPEN_CALLS 8
#define GW_OPEN_MASK (GW_OPEN_CALLS - 1)
#define GW_RING_LOOK_STRIDE 8 /* power of two */

struct gw_open_call {
	__u64 ts;
	__u64 args[8];
	__u64 out_ptr;
	__s32 stack_id;
	__u16 flags; /* GW_FLAG_*, and GW_OPEN_RUNTIME_LAUNCH */
	__u16 api;
	__u64 py_stack; /* gw_py_stacks key, 0: none */
};

/* An open call's flag, never written to a record: the call is a runtime library's launch
 * (GW_COOKIE_RUNTIME_LAUNCH), so a driver launch that begins while it is the thread's innermost
 * open call is made by it. A bit no GW_FLAG_* uses. */
#define GW_OPEN_RUNTIME_LAUNCH 0x8000
/* The flag from the cookie without a branch: cookie bit 35 moved to flag bit 15. */
#define gw_open_kind(cookie) ((__u16)(((cookie) & GW_COOKIE_RUNTIME_LAUNCH) >> 20))
_Static_assert(GW_COOKIE_RUNTIME_LAUNCH >> 20 == GW_OPEN_RUNTIME_LAUNCH, "flag bit");

/*
 * What the API probes keep per thread, in task-local storage: the calls it has open, as a stack.
 * A hash keyed by (tid, api) cost a bucket lock and an element allocation at every entry and a
 * second lock and a free at every return; task storage is one pointer away from the task, needs
 * no lock for its own thread, and goes away with the thread (a hash kept dead threads' entries).
 */
struct gw_thread_calls {
	/* First: user space reads the open batch of a live thread at stop (events.h). */
	struct gw_launch_batch pending;
	__u32 head;     /* slot of the next entry, wrapping (& GW_OPEN_MASK) */
	__u32 depth;    /* open calls held, <= GW_OPEN_CALLS; the innermost is at head - 1 */
	__u32 launches; /* kernel launches seen: samples their in-memory arguments */
	__u32 emitted;  /* records written: one in GW_RING_LOOK_STRIDE looks at the ring's fill */
	struct gw_open_call calls[GW_OPEN_CALLS];
	/* The thread's launch rate (gw_launch_untimed): launches counted in window `rate_window`
	 * (ns >> GW_LAUNCH_RATE_SHIFT), and whether the one before it had launch_untimed_min. */
	__u64 rate_window;
	__u32 rate_count;
	__u32 untimed;
	/* The entry address of the thread's last runtime launch recorded at entry only, while no
	 * other API entry followed it (0: none): a driver launch it makes is nested in it. */
	__u64 untimed_launch_ip;
	struct gw_py_thread_cache py; /* its Python thread state and last stack (python.bpf.h) */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct gw_thread_calls);
} gw_thread_calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 1); /* resized by user space when stacks are on */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 127 * sizeof(__u64));
} gw_stacks SEC(".maps");

/* The user stack of the current task in gw_stacks (--stacks), for an API call or a CPU sample
 * (`ctx`: the program's context); -1 when not captured, and a counted failure when the map
 * refused it (its slot taken by another stack). */
static __always_inline __s32 gw_walk_user_stack(void *ctx)
{
	__s32 id = bpf_get_stackid(ctx, &gw_stacks, BPF_F_USER_STACK);

	if (id < 0)
		gw_count(GW_CNT_STACK_FAIL);
	return id < 0 ? -1 : id;
}

/* The user stack of an API call: with --stacks only. */
static __always_inline __s32 gw_user_stack(void *ctx)
{
	return gw_cfg.capture_stacks ? gw_walk_user_stack(ctx) : -1;
}

/* bpf_rdonly_cast (Linux 6.2) turns a pointer into a read-only typed one: the verifier makes the
 * call a register move and the loads through the result plain loads. Weak: a kernel without it
 * has no uprobe_multi either (6.6), and only the uprobe_multi programs call it. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/*
 * The attach cookie of the probe running on `task`. A uprobe_multi program reads it from the run
 * context the kernel set for it (task->bpf_ctx -> the probe's bpf_uprobe), with plain loads: the
 * helper, bpf_get_attach_cookie, is a call, and a call's return costs ~10 ns on a CPU whose
 * kernel mitigates return-address attacks with a return thunk (SRSO's "Safe RET" on the AMD
 * machines measured here), about a sixth of a batched launch's whole entry program. A kernel
 * whose types differ (CO-RE says) gets the helper.
 */
static __always_inline __u64 gw_attach_cookie(struct pt_regs *ctx, struct task_struct *task,
					      bool multi)
{
	struct bpf_uprobe_multi_run_ctx *rc;

	if (!multi || !bpf_core_field_exists(struct bpf_uprobe_multi_run_ctx, uprobe) ||
	    !bpf_core_field_exists(struct bpf_uprobe, cookie))
		return bpf_get_attach_cookie(ctx);
	rc = bpf_rdonly_cast(task->bpf_ctx, bpf_core_type_id_kernel(struct bpf_uprobe_multi_run_ctx));
	return rc->uprobe->cookie;
}

/* The six integer argument registers, copied once with constant offsets (the verifier refuses a
 * computed offset into the context). Slots 6 and 7 stay zero so an index masked with 7 is safe. */
static __always_inline void gw_load_args(struct pt_regs *ctx, __u64 *r)
{
	r[0] = PT_REGS_PARM1(ctx);
	r[1] = PT_REGS_PARM2(ctx);
	r[2] = PT_REGS_PARM3(ctx);
	r[3] = PT_REGS_PARM4(ctx);
	r[4] = PT_REGS_PARM5(ctx);
	r[5] = ctx->r9; /* libbpf 1.1 has no PT_REGS_PARM6 */
	r[6] = 0;
	r[7] = 0;
}

/* A batched launch's kernel: its first argument slot, which the catalogue keeps in the first or
 * second argument register (tested; the cookie says which). Two loads at constant offsets, each
 * kept in its own branch (clang would otherwise select between the offsets, and the verifier
 * refuses a computed offset into the context), instead of gw_load_args' copy of all six. */
static __always_inline __u64 gw_kernel_arg(struct pt_regs *ctx, __u64 cookie)
{
	__u64 v;

	if (!(cookie & GW_COOKIE_KERNEL_ARG2)) {
		v = PT_REGS_PARM1(ctx);
		asm volatile("" : "+r"(v));
	} else {
		v = PT_REGS_PARM2(ctx);
		asm volatile("" : "+r"(v));
	}
	return v;
}

static __always_inline int gw_read_user_u64(__u64 *dst, __u64 addr)
{
	if (bpf_probe_read_user(dst, sizeof(*dst), (void *)addr)) {
		*dst = 0;
		gw_count(GW_CNT_READ_FAULT);
		return -1;
	}
	return 0;
}

/*
 * The calling thread's open-call stack when its calls are to be recorded, else NULL. A thread gets
 * one only once its process is tracked, and a process stays tracked until it ends: so only a
 * thread's first call looks its process up in gw_tracked (and adds it: the first probed call of a
 * process starts tracing its threads' scheduling too).
 */
static __always_inline struct gw_thread_calls *gw_traced_thread(struct task_struct *task)
{
	struct gw_thread_calls *tc = bpf_task_storage_get(&gw_thread_calls, task, 0, 0);
	__u32 tgid, one = 1;

	if (tc)
		return tc;
	tgid = bpf_get_current_pid_tgid() >> 32;
	if (tgid == gw_cfg.self_pid)
		return NULL;
	if (!bpf_map_lookup_elem(&gw_tracked, &tgid)) {
		if (gw_cfg.filter_pids)
			return NULL;
		bpf_map_update_elem(&gw_tracked, &tgid, &one, BPF_NOEXIST);
	}
	tc = bpf_task_storage_get(&gw_thread_calls, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tc)
		gw_count(GW_CNT_PENDING_FULL); /* no memory for the thread's state: this call is lost */
	return tc;
}

/* A program on this thread's switch-out (it may preempt a probe) writes the batch only while no
 * probe is changing it: a probe marks the batch busy around its changes, and the compiler must not
 * move the batch's stores across the mark. */
#define gw_barrier() asm volatile("" ::: "memory")

static __always_inline void gw_batch_busy(struct gw_launch_batch *b)
{
	b->busy = 1;
	gw_barrier();
}

static __always_inline void gw_batch_idle(struct gw_launch_batch *b)
{
	gw_barrier();
	b->busy = 0;
}

/* The record size of a batch holding n launches. */
#define gw_batch_bytes(n) (offsetof(struct gw_launch_batch, items) + (n) * sizeof(struct gw_launch_item))

/* Make the batch a record of thread (tgid, tid): its header, sized to the launches it holds.
 * Returns how many those are (at most GW_LAUNCH_BATCH). */
static __always_inline __u32 gw_seal_launches(struct gw_launch_batch *b, __u32 tgid, __u32 tid)
{
	__u32 n = b->n > GW_LAUNCH_BATCH ? GW_LAUNCH_BATCH : b->n;

	gw_fill_header(&b->hdr, GW_EV_LAUNCH_BATCH, gw_batch_bytes(n), b->hdr.ts_ns, tgid, tid);
	return n;
}

/* Write the batch of launches of thread (tgid, tid), if it holds any, as one record. */
static __always_inline void gw_flush_launches(struct gw_launch_batch *b, __u32 tgid, __u32 tid)
{
	__u32 n, size;

	if (b->n == 0)
		return;
	n = gw_seal_launches(b, tgid, tid);
	size = gw_batch_bytes(n);
	if (bpf_ringbuf_output(&gw_events, b, size, gw_wakeup_flags(size)))
		gw_count_n(GW_CNT_EVENTS_RING_FULL, n);
	b->n = 0;
}

/* A switch-out, an exit or an exec: write what the thread's probes left in its batch, unless one
 * of them is in the middle of changing it (it was preempted; the batch is written later). `tid`:
 * the thread's id when it made those launches (an exec by another thread than the leader
 * changes it). */
static __always_inline void gw_flush_launches_of(struct task_struct *task, __u32 tid)
{
	struct gw_thread_calls *tc = bpf_task_storage_get(&gw_thread_calls, task, 0, 0);

	if (tc && tc->pending.n && !tc->pending.busy)
		gw_flush_launches(&tc->pending, task->tgid, tid);
}

/* Append a launch to the thread's batch, written out when full. */
static __always_inline void gw_batch_launch(struct task_struct *task, struct gw_thread_calls *tc,
					    __u64 start, __u64 dur, __u64 func, __u64 cookie,
					    __u16 flags, __s32 stack_id)
{
	struct gw_launch_batch *b = &tc->pending;
	__u64 *w;
	__s64 off;
	__u32 n;

	gw_batch_busy(b);
	n = b->n;
	off = (__s64)(start - b->hdr.ts_ns);
	if (n && (off > 0x7fffffffLL || off < -0x7fffffffLL)) {
		gw_flush_launches(b, task->tgid, task->pid);
		n = 0;
	}
	if (n >= GW_LAUNCH_BATCH)
		n = 0; /* cannot happen (a full batch is written at once); bounds the index */
	if (n == 0) {
		b->hdr.ts_ns = start;
		off = 0;
	}
	/* Four 8-byte stores instead of ten (events.h's layout, little-endian; abi.hpp checks it):
	 * func | start, duration | api, lib (the cookie's low half), flags | stack_id. */
	w = (__u64 *)&b->items[n];
	w[0] = func;
	w[1] = (__u64)(__u32)off | (__u64)(__u32)dur << 32;
	w[2] = (cookie & 0xffffffffull) | (__u64)flags << 32;
	w[3] = (__u64)(__u32)stack_id;
	b->n = ++n;
	if (n == GW_LAUNCH_BATCH)
		gw_flush_launches(b, task->tgid, task->pid);
	gw_batch_idle(b);
}

/*
 * Write the record of call p, which ended at `end` returning `ret`; a call recorded at entry
 * (GW_FLAG_NO_RETURN) passes end = its start and has no return value or out-pointer value.
 */
static __always_inline void gw_emit_call(struct task_struct *task, struct gw_thread_calls *tc,
					 struct gw_open_call *p, __u64 cookie, __u64 end, __u64 ret)
{
	struct gw_api_call *rec = gw_reserve_event(sizeof(*rec));
	__u64 flags;

	if (!rec)
		return;
	/* Two loads from the task both probes already hold, instead of a helper call. */
	gw_fill_header(&rec->hdr, GW_EV_API_CALL, sizeof(*rec), p->ts, task->tgid, task->pid);
	rec->hdr.flags = p->flags & ~GW_OPEN_RUNTIME_LAUNCH;
	rec->duration_ns = end - p->ts;
	__builtin_memcpy(rec->args, p->args, sizeof(rec->args));
	rec->ret = ret;
	rec->out = 0;
	/* Only read the out-pointer of a successful call: on failure it may hold garbage. */
	if (p->out_ptr && !(p->flags & GW_FLAG_NO_RETURN) && (__u32)ret == 0 &&
	    gw_read_user_u64(&rec->out, p->out_ptr))
		rec->hdr.flags |= GW_FLAG_READ_FAULT;
	rec->api = GW_COOKIE_API(cookie);
	rec->lib = GW_COOKIE_LIB(cookie);
	rec->stack_id = p->stack_id;
	rec->py_stack = p->py_stack;
	flags = gw_submit_flags_strided(sizeof(*rec),
					(tc->emitted++ & (GW_RING_LOOK_STRIDE - 1)) == 0,
					GW_RING_LOOK_STRIDE);
	bpf_ringbuf_submit(rec, gw_py_submit_flags(&tc->py, p->py_stack, flags));
}

/* Push the call just captured at the head. A full stack loses its oldest call, not this one: the
 * oldest is the likelier to be an entry whose return never came (a longjmp or exception unwound
 * past it). */
static __always_inline void gw_push_call(struct gw_thread_calls *tc)
{
	tc->head++;
	if (tc->depth < GW_OPEN_CALLS)
		tc->depth++;
	else
		gw_count(GW_CNT_PENDING_FULL);
}

/*
 * The entry of a batched launch whose in-memory arguments are not sampled: the hottest path there
 * is (63 launches in 64 per thread by default), so it reads no spec; the cookie says what it
 * needs. Its start, kernel and stack go into the thread's launch batch (entry-only), or onto the
 * open-call stack as a compact call that the return probe batches.
 */
static __always_inline void gw_launch_entry(struct pt_regs *ctx, struct task_struct *task,
					    struct gw_thread_calls *tc, __u64 cookie, __u64 start,
					    bool untimed)
{
	__u64 func = gw_kernel_arg(ctx, cookie);
	__s32 stack_id = gw_user_stack(ctx);
	struct gw_open_call *p;

	if (untimed || (cookie & GW_COOKIE_ENTRY_ONLY)) {
		gw_batch_launch(task, tc, start, 0, func, cookie, GW_FLAG_NO_RETURN, stack_id);
		return;
	}
	p = &tc->calls[tc->head & GW_OPEN_MASK];
	p->ts = start;
	p->api = GW_COOKIE_API(cookie);
	p->flags = GW_FLAG_COMPACT | GW_FLAG_ARGS_SAMPLED_OUT | gw_open_kind(cookie);
	p->args[0] = func;
	p->out_ptr = 0;
	p->stack_id = stack_id;
	p->py_stack = 0;
	gw_push_call(tc);
}

/* The entry of any other call, and of a launch whose arguments are sampled or that is not
 * batched: captured per the API's spec. `counted`: a batched launch, already counted (and
 * sampled) by gw_api_entry_impl. */
static __always_inline void gw_call_entry(struct pt_regs *ctx, struct task_struct *task,
					  struct gw_thread_calls *tc, __u64 cookie, bool counted)
{
	__u32 api = GW_COOKIE_API(cookie);
	struct gw_api_spec *spec;
	struct gw_open_call *p;
	__u64 regs[8], span[8] = {};
	bool read_mem = true, span_ok = false;
	int i;

	spec = bpf_map_lookup_elem(&gw_api_specs, &api);
	if (!spec || !spec->enabled)
		return;
	/* A user-memory read costs more than the rest of this program: a launch reads its stack
	 * words and launch-config fields only on the sampled calls (all of them with mask 0). */
	if (spec->launch && !counted)
		read_mem = (tc->launches++ & gw_cfg.launch_read_mask) == 0;
	/* Any other call: the launches before it are written first (records of a thread in order,
	 * and a batch never waits on a thread that stopped launching). */
	if (tc->pending.n) {
		gw_batch_busy(&tc->pending);
		gw_flush_launches(&tc->pending, task->tgid, task->pid);
		gw_batch_idle(&tc->pending);
	}

	/* The call is captured into the next free slot; an entry-only API writes its record from
	 * there at once and leaves the slot free, any other is pushed. */
	p = &tc->calls[tc->head & GW_OPEN_MASK];
	p->ts = bpf_ktime_get_ns();
	p->api = api;
	p->flags = gw_open_kind(cookie);
	gw_load_args(ctx, regs);
	/* The memory words in one read where the spec has a span (all catalogued APIs). */
	if (read_mem && spec->span_src) {
		/* Loaded on its own: clang would otherwise pick between the context and the stack
		 * array by pointer, and the verifier refuses a load through a moved context pointer. */
		__u64 sp = PT_REGS_SP(ctx), base;
		__u32 len = spec->span_len;

		asm volatile("" : "+r"(sp));
		base = spec->span_src == GW_ARG_STACK ? sp : regs[spec->span_reg & 7];

		if (base && len >= 8 && len <= sizeof(span)) {
			span_ok = !bpf_probe_read_user(span, len, (void *)(base + spec->span_lo));
			if (!span_ok) {
				p->flags |= GW_FLAG_READ_FAULT;
				gw_count(GW_CNT_READ_FAULT);
			}
		}
	}
	for (i = 0; i < 8; i++) {
		struct gw_arg_slot s = spec->args[i];
		__u64 v = 0;

		if (s.src == GW_ARG_REG) {
			v = regs[s.index & 7];
		} else if (!read_mem && s.src != GW_ARG_NONE) {
			p->flags |= GW_FLAG_ARGS_SAMPLED_OUT;
		} else if (spec->span_src && s.src != GW_ARG_NONE) {
			__u32 off = s.src == GW_ARG_STACK ? 8 * (__u32)s.index : s.offset;

			if (span_ok)
				v = span[((off - spec->span_lo) >> 3) & 7];
		} else if (s.src == GW_ARG_STACK) {
			if (gw_read_user_u64(&v, PT_REGS_SP(ctx) + 8 * (__u64)s.index))
				p->flags |= GW_FLAG_READ_FAULT;
		} else if (s.src == GW_ARG_DEREF) {
			__u64 base = regs[s.index & 7];

			if (base && gw_read_user_u64(&v, base + s.offset))
				p->flags |= GW_FLAG_READ_FAULT;
		}
		p->args[i] = v;
	}
	p->out_ptr = 0;
	if (spec->out_reg >= 0 && spec->out_reg < 6)
		p->out_ptr = regs[spec->out_reg & 7];
	p->stack_id = gw_user_stack(ctx);
	/* The Python line behind the call; not on a launch whose memory words are sampled out (the
	 * same sampling: a launch's cost stays where it was). */
	p->py_stack = gw_cfg.python_stacks && read_mem ? gw_py_stack(task, &tc->py, GW_PY_SLOT_API) : 0;
	if (spec->entry_only) {
		/* With the stack full, the slot was its oldest call's: that call is lost, as a push
		 * would have lost it. */
		if (tc->depth == GW_OPEN_CALLS) {
			tc->depth--;
			gw_count(GW_CNT_PENDING_FULL);
		}
		p->flags |= GW_FLAG_NO_RETURN;
		gw_emit_call(task, tc, p, cookie, p->ts, 0);
		return;
	}
	gw_push_call(tc);
}

/*
 * Is the thread's innermost open call a runtime library's launch? Then a driver launch beginning
 * now is made by it (libcudart's cudaLaunchKernel calls libcuda's launch), and its time is inside
 * that call's. Two loads of the thread's state and one of the slot; a pop leaves the slot intact,
 * so the depth says whether it is still open.
 */
static __always_inline bool gw_in_runtime_launch(struct gw_thread_calls *tc)
{
	return tc->depth && (tc->calls[(tc->head - 1) & GW_OPEN_MASK].flags & GW_OPEN_RUNTIME_LAUNCH);
}

/*
 * Adaptive launch timing (issue 33): is the thread launching fast enough that its unsampled
 * launches are recorded at entry only? A launch's return trap is about 40% of what a probed launch
 * costs, and a thread launching tens of thousands of times a second pays it on every one. The
 * previous window (2^GW_LAUNCH_RATE_SHIFT ns) decides for the current one, so a thread goes
 * untimed only after a whole window at the rate, and back to timed after one below it. Counts
 * and start times stay exact; the sampled launches (launch_read_mask) keep their durations.
 */
static __always_inline bool gw_launch_untimed(struct gw_thread_calls *tc, __u64 now)
{
	__u64 window = now >> GW_LAUNCH_RATE_SHIFT;

	if (window != tc->rate_window) {
		tc->untimed =
		    window == tc->rate_window + 1 && tc->rate_count >= gw_cfg.launch_untimed_min;
		tc->rate_window = window;
		tc->rate_count = 0;
	}
	tc->rate_count++;
	return tc->untimed;
}

/* vm_start and vm_end of the mapping a driver launch returns into, for gw_in_untimed_launch. */
struct gw_vma_span {
	__u64 start, end;
};

static long gw_vma_span_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct gw_vma_span *span = data;

	span->start = vma->vm_start;
	span->end = vma->vm_end;
	return 0;
}

/*
 * Is this driver launch made by the runtime launch the thread just recorded at entry only? That
 * launch is not open (no return probe), so gw_in_runtime_launch cannot see it: the driver launch
 * is nested when no other API call began since and it returns into the same mapping of code as
 * the runtime launch's entry (libcudart calls libcuda from its own text; Triton or JAX call it
 * from theirs). One user read and one VMA lookup, on a nested launch only.
 */
static __always_inline bool gw_in_untimed_launch(struct pt_regs *ctx, struct task_struct *task,
						 struct gw_thread_calls *tc)
{
	struct gw_vma_span span = {};
	__u64 ret_addr = 0, ip = tc->untimed_launch_ip;

	if (!ip || bpf_probe_read_user(&ret_addr, sizeof(ret_addr), (void *)PT_REGS_SP(ctx)))
		return false;
	if (bpf_find_vma(task, ret_addr, gw_vma_span_cb, &span, 0))
		return false;
	return ip >= span.start && ip < span.end;
}

/* Every API entry: a batched launch that is not sampled takes the fast path, all else the spec's.
 * `session`: the entry of a driver launch's session probe, which returns 1 (the kernel then skips
 * the return) for a launch nested in a runtime launch and records nothing; 0 otherwise. */
static __always_inline int gw_api_entry_impl(struct pt_regs *ctx, bool multi, bool session)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 cookie = gw_attach_cookie(ctx, task, multi);
	struct gw_thread_calls *tc = gw_traced_thread(task);

	bool counted = false;

	/* A thread not traced (this process, one outside --pid) records nothing at entry, so a
	 * session skips its return too: one trap instead of two. */
	if (!tc)
		return session ? 1 : 0;
	if (session && (gw_in_runtime_launch(tc) ||
			(tc->untimed_launch_ip && !(cookie & GW_COOKIE_RUNTIME_LAUNCH) &&
			 gw_in_untimed_launch(ctx, task, tc)))) {
		gw_count(GW_CNT_LAUNCH_NESTED_SKIPPED);
		return 1;
	}
	tc->untimed_launch_ip = 0;
	if (cookie & GW_COOKIE_BATCHED) {
		__u64 start = bpf_ktime_get_ns();
		/* Only a session can skip the return; launch_untimed_min 0 is trace --full. */
		bool untimed = session && gw_cfg.launch_untimed_min && gw_launch_untimed(tc, start);

		if (tc->launches++ & gw_cfg.launch_read_mask) {
			gw_launch_entry(ctx, task, tc, cookie, start, untimed);
			if (!untimed)
				return 0;
			if (cookie & GW_COOKIE_RUNTIME_LAUNCH)
				tc->untimed_launch_ip = PT_REGS_IP(ctx);
			return 1;
		}
		counted = true;
	}
	gw_call_entry(ctx, task, tc, cookie, counted);
	return 0;
}

/*
 * Pop the innermost open call of this api. Normally it is the top of the stack; entries above it
 * are calls whose return was never seen (unwound past, or attached between entry and return
 * probes) and are dropped with it. NULL when no open call matches.
 */
static __always_inline struct gw_open_call *gw_pop_call(struct gw_thread_calls *tc, __u32 api)
{
	__u32 depth = tc->depth, head = tc->head;
	int k;

	for (k = 0; k < GW_OPEN_CALLS; k++) {
		struct gw_open_call *p;

		if (k >= depth)
			return NULL;
		p = &tc->calls[(head - 1 - k) & GW_OPEN_MASK];
		if (p->api != api)
			continue;
		if (k)
			gw_count_n(GW_CNT_ENTRY_UNMATCHED, k);
		tc->head = head - 1 - k;
		tc->depth = depth - 1 - k;
		return p; /* still intact: only the next entry of this thread reuses the slot */
	}
	return NULL;
}

static __always_inline int gw_api_return_impl(struct pt_regs *ctx, bool multi)
{
	__u64 now = bpf_ktime_get_ns();
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 cookie = gw_attach_cookie(ctx, task, multi);
	struct gw_thread_calls *tc;
	struct gw_open_call *p = NULL;
	__u64 ret;

	tc = bpf_task_storage_get(&gw_thread_calls, task, 0, 0);
	if (tc)
		p = gw_pop_call(tc, GW_COOKIE_API(cookie));
	if (!p) {
		gw_count(GW_CNT_RETURN_UNMATCHED);
		return 0;
	}
	ret = PT_REGS_RC(ctx);
	/* A batched launch that failed or ran past the item's 32 bits gets a record of its own. */
	if ((p->flags & GW_FLAG_COMPACT) && (__u32)ret == 0 && now - p->ts <= 0xffffffffull) {
		gw_batch_launch(task, tc, p->ts, now - p->ts, p->args[0], cookie, 0, p->stack_id);
		return 0;
	}
	gw_emit_call(task, tc, p, cookie, now, ret);
	return 0;
}

/*
 * Two attachment styles share the bodies above. uprobe_multi (kernel >= 6.6) attaches every
 * function of a library in one link and removes them with one RCU grace period: removing 120
 * single uprobes one by one took 12 s here. The single-probe programs are the fallback for older
 * kernels. User space loads one pair or the other (the expected attach type differs).
 */
SEC("uprobe")
int gw_api_entry(struct pt_regs *ctx)
{
	return gw_api_entry_impl(ctx, false, false);
}

SEC("uretprobe")
int gw_api_return(struct pt_regs *ctx)
{
	return gw_api_return_impl(ctx, false);
}

SEC("uprobe")
int gw_api_entry_multi(struct pt_regs *ctx)
{
	return gw_api_entry_impl(ctx, true, false);
}

SEC("uprobe")
int gw_api_return_multi(struct pt_regs *ctx)
{
	return gw_api_return_impl(ctx, true);
}

/* Linux 6.13+: in a uprobe session program, whether this run is the return's. Weak, and the
 * program using it is loaded only where the kernel has uprobe sessions (user space looks in its
 * BTF), so older kernels load exactly the programs above. */
extern bool bpf_session_is_return(void) __ksym __weak;

/*
 * The driver library's launches (libcuda's cuLaunchKernel and kin), where the kernel has uprobe
 * sessions: one program, attached by a session link (user space sets the expected attach type,
 * BPF_TRACE_UPROBE_SESSION, which libbpf 1.1 has no section name for), runs at entry and at
 * return. Real libcudart launches through libcuda: under a probed runtime launch each kernel
 * launch was two probed calls, four uprobe traps, and explain sets the inner one aside as nested.
 * Its entry returns 1 for a launch made inside an open runtime launch, so the kernel neither
 * hijacks its return address nor traps at its return: one trap instead of two, and no record. A
 * direct driver launch (Triton, JAX) is recorded as before. An entry-only launch is not probed
 * here (nor pushed, so nesting could not be seen).
 * With adaptive launch timing (the default; trace --full turns it off) the runtime libraries'
 * launches are probed here too: the entry of a launch a fast thread does not sample records it
 * and returns 1 (gw_launch_untimed), so the launch costs one trap instead of two.
 */
SEC("uprobe")
int gw_launch_session(struct pt_regs *ctx)
{
	if (bpf_session_is_return())
		return gw_api_return_impl(ctx, true);
	return gw_api_entry_impl(ctx, true, true);
}

/*
 * The launch batches threads of traced processes still hold when tracing stops (a thread that
 * kept its CPU without calling another API, exiting or execing since its last launches). User
 * space runs this task iterator once every probe is detached, so nothing changes the batches any
 * more: each one is written, its header filled, to the iterator's output. (Reading them through
 * each thread's pidfd needed PIDFD_THREAD, Linux 6.9; task iterators have been there since 5.8,
 * so launches are batched on every kernel gpuwhy runs on.)
 */
SEC("iter/task")
int gw_open_launches(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct gw_thread_calls *tc;
	struct gw_launch_batch *b;

	if (!task || !gw_is_tracked(task->tgid))
		return 0;
	tc = bpf_task_storage_get(&gw_thread_calls, task, 0, 0);
	if (!tc || tc->pending.n == 0)
		return 0;
	b = &tc->pending;
	gw_seal_launches(b, task->tgid, task->pid);
	/* Cleared only once written: when the output buffer is full, the iterator runs this task
	 * again after user space has read what is there. */
	if (bpf_seq_write(ctx->meta->seq, b, sizeof(*b)) == 0)
		b->n = 0;
	return 0;
}

#endif /* GPUWHY_API_BPF_H */
