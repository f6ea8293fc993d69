/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Python stack of a GPU API call: the calling thread's CPython frames, each copied as {code
 * object address, instruction index} only; user space names them (src/discover/python_*.cpp).
 * Included by api.bpf.h; runs at the entry of every recorded call but the launches whose
 * arguments are not sampled (their hot path never comes here), and in the CPU sampling program
 * (cpu.bpf.h) for the threads of Python processes: what a thread that makes no GPU call (a data
 * loader, a lock holder) was running in Python.
 *
 * The thread's state is found by its thread id in the interpreter's thread list, not through the
 * "current thread state": that is empty while the thread is in a C call with the GIL released,
 * which is how PyTorch and ctypes call the GPU runtime. The probe keeps the address per thread
 * and checks, on every call, that the state there still names the thread.
 */
#ifndef GPUWHY_PYTHON_BPF_H
#define GPUWHY_PYTHON_BPF_H

#include "gpuwhy.bpf.h"

#define GW_PY_MAX_THREADS 64 /* thread states looked at when looking for the caller's */
#define GW_PY_MAX_STEPS 64   /* frames walked, shims included; GW_PY_MAX_FRAMES kept */
#define GW_PY_NO_TSTATE 1    /* the cached "thread state": this thread has none (yet) */
#define GW_PY_RETRY_MASK 63  /* a thread without one looks again on one call in 64 */
#define GW_PY_OWNED_BY_CSTACK 3 /* frame owner of a 3.12+ shim frame: not Python code */

/* Per Python process: its interpreter's layout, written by user space at discovery. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct gw_py_layout);
} gw_py_procs SEC(".maps");

/* Python stacks by key (a hash of tgid and frames). LRU: a stack user space has named is never
 * read again, so the map keeps itself bounded; user space reads a new key within milliseconds. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct gw_py_stack);
} gw_py_stacks SEC(".maps");

/* Room for a stack being built and the raw bytes of a thread state and a frame: more than the
 * 512 bytes of a BPF stack. One per CPU and walker: the sampling timer's interrupt can come in the
 * middle of an API probe's walk on the same CPU, and must not overwrite its scratch. */
struct gw_py_scratch {
	struct gw_py_stack stack;
	__u8 tstate[GW_PY_READ_TSTATE];
	__u8 frame[GW_PY_READ_FRAME + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct gw_py_scratch);
} gw_py_scratch SEC(".maps");

#define GW_PY_SLOT_API 0    /* gw_py_scratch of the API entry probes */
#define GW_PY_SLOT_SAMPLE 1 /* gw_py_scratch of the CPU sampling program */

/* A u64 at a layout offset in a buffer of `size` bytes; 0 when the offset is out of range. */
#define gw_py_u64(buf, size, off) \
	((off) <= (size) - 8 ? *(__u64 *)((buf) + ((off) & 0xff)) : 0)

/* The state of one walk, shared with the bpf_loop callbacks: each loop body is verified once,
 * not once per iteration (two unrolled walks inside the API entry made the program too large
 * for the verifier). */
struct gw_py_walk {
	struct gw_py_layout l; /* a copy: scalars only cross into the callbacks */
	__u64 my_id;           /* the caller's id as its thread state holds it */
	__u64 ts;              /* thread state looked at / found */
	__u64 fp;              /* next frame */
	__u64 hash;
	__u32 n;               /* frames kept */
	__u32 found;           /* the thread walk found the caller's state */
	__u32 fail;            /* a frame could not be read */
	__u32 tgid;
	__u32 slot;            /* GW_PY_SLOT_*: whose scratch */
	__u32 pad;
};

static __always_inline struct gw_py_scratch *gw_py_scratch_get(__u32 slot)
{
	return bpf_map_lookup_elem(&gw_py_scratch, &slot);
}

/* Is the thread state whose bytes are in s->tstate the caller's? */
static __always_inline bool gw_py_tstate_mine(struct gw_py_scratch *s, const struct gw_py_walk *w)
{
	__u32 off = w->l.tstate_id;

	return off <= GW_PY_READ_TSTATE - 8 && *(__u64 *)(s->tstate + (off & 0xff)) == w->my_id;
}

/* One thread state of the interpreter's list: the caller's, or on to the next. */
static long gw_py_thread_step(__u32 i, void *arg)
{
	struct gw_py_walk *w = arg;
	struct gw_py_scratch *s = gw_py_scratch_get(w->slot);

	if (!s || !w->ts || bpf_probe_read_user(s->tstate, GW_PY_READ_TSTATE, (void *)w->ts))
		return 1;
	if (gw_py_tstate_mine(s, w)) {
		w->found = 1;
		return 1;
	}
	w->ts = gw_py_u64(s->tstate, GW_PY_READ_TSTATE, w->l.tstate_next);
	return 0;
}

/* One frame: copied as {code, instruction index} unless it is a C-stack shim; on to the caller. */
static long gw_py_frame_step(__u32 i, void *arg)
{
	struct gw_py_walk *w = arg;
	struct gw_py_scratch *s = gw_py_scratch_get(w->slot);
	__u32 len = w->l.frame_read, n = w->n, off;
	__u64 code, prev;
	__s64 instr;

	if (!s || !w->fp)
		return 1;
	if (n >= GW_PY_MAX_FRAMES) {
		s->stack.truncated = 1;
		return 1;
	}
	if (len < 8 || len > GW_PY_READ_FRAME ||
	    bpf_probe_read_user(s->frame, len, (void *)w->fp)) {
		w->fail = 1;
		return 1;
	}
	code = gw_py_u64(s->frame, GW_PY_READ_FRAME, w->l.frame_code);
	prev = gw_py_u64(s->frame, GW_PY_READ_FRAME, w->l.frame_prev);
	w->fp = prev;
	off = w->l.frame_owner;
	if (off < GW_PY_READ_FRAME && s->frame[off & 0x7f] == GW_PY_OWNED_BY_CSTACK)
		return 0; /* a shim the C stack owns: no Python code of its own */
	off = w->l.frame_instr;
	if (w->l.code_adaptive == GW_PY_NONE)
		instr = off <= GW_PY_READ_FRAME - 4 ? *(__s32 *)(s->frame + (off & 0x7f)) : -1;
	else
		instr = (__s64)(gw_py_u64(s->frame, GW_PY_READ_FRAME, off) - code -
				w->l.code_adaptive) >> 1;
	s->stack.frames[n].code = code;
	s->stack.frames[n].instr = (__s32)instr;
	w->hash = (w->hash ^ code) * 0x100000001b3ull;
	w->hash = (w->hash ^ (__u64)(__u32)instr) * 0x100000001b3ull;
	w->n = n + 1;
	return 0;
}

/*
 * The key of the calling thread's Python stack in gw_py_stacks, 0 when the process is not a
 * supported Python or the thread runs no Python. `cache`, `misses`: the thread's remembered state
 * address and how often it had none; `slot`: the caller's scratch (GW_PY_SLOT_*).
 */
static __always_inline __u64 gw_py_stack(struct task_struct *task, __u64 *cache, __u32 *misses,
					 __u32 slot)
{
	__u32 tgid = task->tgid;
	const struct gw_py_layout *l = bpf_map_lookup_elem(&gw_py_procs, &tgid);
	struct gw_py_scratch *s;
	struct gw_py_walk w = {};
	__u64 interp = 0, head = 0;

	if (!l)
		return 0;
	s = gw_py_scratch_get(slot);
	if (!s)
		return 0;
	w.l = *l;
	w.tgid = tgid;
	w.slot = slot;
	w.my_id = l->id_is_fsbase ? BPF_CORE_READ(task, thread.fsbase) : (__u64)task->pid;
	w.ts = *cache;
	if (w.ts == GW_PY_NO_TSTATE) {
		if ((++*misses & GW_PY_RETRY_MASK) != 0)
			return 0;
		w.ts = 0;
	}
	/* The remembered state, if it still names this thread; else look through the list. */
	if (w.ts)
		gw_py_thread_step(0, &w);
	if (!w.found) {
		if (bpf_probe_read_user(&interp, sizeof(interp), (void *)(l->runtime + l->interp_head)) ||
		    !interp ||
		    bpf_probe_read_user(&head, sizeof(head), (void *)(interp + l->threads_head)))
			return 0;
		w.ts = head;
		bpf_loop(GW_PY_MAX_THREADS, gw_py_thread_step, &w, 0);
		if (!w.found) {
			*cache = GW_PY_NO_TSTATE;
			return 0;
		}
		*cache = w.ts;
	}
	w.fp = gw_py_u64(s->tstate, GW_PY_READ_TSTATE, l->tstate_frame);
	if (w.fp && l->cframe_frame != GW_PY_NONE &&
	    bpf_probe_read_user(&w.fp, sizeof(w.fp), (void *)(w.fp + l->cframe_frame))) {
		gw_count(GW_CNT_PY_STACK_FAIL);
		return 0;
	}
	s->stack.truncated = 0;
	w.hash = 0xcbf29ce484222325ull ^ tgid; /* FNV-1a's offset basis, then one round per frame */
	bpf_loop(GW_PY_MAX_STEPS, gw_py_frame_step, &w, 0);
	if (w.fail) {
		gw_count(GW_CNT_PY_STACK_FAIL);
		return 0;
	}
	if (w.n == 0)
		return 0;
	s->stack.pid = tgid;
	s->stack.n = w.n;
	w.hash |= 1; /* never 0, which means "none" */
	if (!bpf_map_lookup_elem(&gw_py_stacks, &w.hash))
		bpf_map_update_elem(&gw_py_stacks, &w.hash, &s->stack, BPF_ANY);
	return w.hash;
}

#endif /* GPUWHY_PYTHON_BPF_H */
