/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Python stack of a GPU API call: the calling thread's CPython frames, each copied as {code
 * object address, instruction index} only; user space names them (src/discover/python_*.cpp).
 * Included by api.bpf.h; runs at the entry of every recorded call but the launches whose
 * arguments are not sampled (their hot path never comes here).
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
 * 512 bytes of a BPF stack. */
struct gw_py_scratch {
	struct gw_py_stack stack;
	__u8 tstate[GW_PY_READ_TSTATE];
	__u8 frame[GW_PY_READ_FRAME + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gw_py_scratch);
} gw_py_scratch SEC(".maps");

/* A u64 at a layout offset in a buffer of `size` bytes; 0 when the offset is out of range. */
#define gw_py_u64(buf, size, off) \
	((off) <= (size) - 8 ? *(__u64 *)((buf) + ((off) & 0xff)) : 0)

/* Is the thread state whose bytes are in s->tstate the calling thread's? */
static __always_inline bool gw_py_tstate_mine(struct gw_py_scratch *s, const struct gw_py_layout *l,
					      __u64 my_id)
{
	__u32 off = l->tstate_id;

	return off <= GW_PY_READ_TSTATE - 8 && *(__u64 *)(s->tstate + (off & 0xff)) == my_id;
}

/* The calling thread's PyThreadState (its bytes left in s->tstate), 0 when it has none. */
static __always_inline __u64 gw_py_find_tstate(struct task_struct *task, const struct gw_py_layout *l,
					       struct gw_py_scratch *s, __u64 *cache, __u32 *misses)
{
	__u64 my_id = l->id_is_fsbase ? BPF_CORE_READ(task, thread.fsbase) : (__u64)task->pid;
	__u64 ts = *cache, interp = 0;
	int i;

	if (ts == GW_PY_NO_TSTATE) {
		if ((++*misses & GW_PY_RETRY_MASK) != 0)
			return 0;
		ts = 0;
	}
	if (ts && !bpf_probe_read_user(s->tstate, GW_PY_READ_TSTATE, (void *)ts) &&
	    gw_py_tstate_mine(s, l, my_id))
		return ts;
	/* Not cached, or the state there is no longer this thread's: look through the list. */
	if (bpf_probe_read_user(&interp, sizeof(interp), (void *)(l->runtime + l->interp_head)) ||
	    !interp ||
	    bpf_probe_read_user(&ts, sizeof(ts), (void *)(interp + l->threads_head)))
		return 0;
	for (i = 0; i < GW_PY_MAX_THREADS && ts; i++) {
		if (bpf_probe_read_user(s->tstate, GW_PY_READ_TSTATE, (void *)ts))
			break;
		if (gw_py_tstate_mine(s, l, my_id)) {
			*cache = ts;
			return ts;
		}
		ts = gw_py_u64(s->tstate, GW_PY_READ_TSTATE, l->tstate_next);
	}
	*cache = GW_PY_NO_TSTATE;
	return 0;
}

/*
 * The key of the calling thread's Python stack in gw_py_stacks, 0 when the process is not a
 * supported Python or the thread runs no Python. `cache`, `misses`: the thread's remembered state
 * address and how often it had none.
 */
static __always_inline __u64 gw_py_stack(struct task_struct *task, __u64 *cache, __u32 *misses)
{
	__u32 tgid = task->tgid, zero = 0, n = 0;
	const struct gw_py_layout *l = bpf_map_lookup_elem(&gw_py_procs, &tgid);
	struct gw_py_scratch *s;
	__u64 ts, fp, hash;
	__u32 len;
	int i;

	if (!l)
		return 0;
	s = bpf_map_lookup_elem(&gw_py_scratch, &zero);
	if (!s)
		return 0;
	ts = gw_py_find_tstate(task, l, s, cache, misses);
	if (!ts)
		return 0;
	fp = gw_py_u64(s->tstate, GW_PY_READ_TSTATE, l->tstate_frame);
	if (fp && l->cframe_frame != GW_PY_NONE &&
	    bpf_probe_read_user(&fp, sizeof(fp), (void *)(fp + l->cframe_frame))) {
		gw_count(GW_CNT_PY_STACK_FAIL);
		return 0;
	}
	s->stack.truncated = 0;
	len = l->frame_read;
	if (len < 8 || len > GW_PY_READ_FRAME)
		return 0;
	hash = 0xcbf29ce484222325ull ^ tgid; /* FNV-1a's offset basis, then one round per frame */
	for (i = 0; i < GW_PY_MAX_STEPS && fp; i++) {
		__u64 code, prev;
		__s64 instr;

		if (n >= GW_PY_MAX_FRAMES) {
			s->stack.truncated = 1;
			break;
		}
		if (bpf_probe_read_user(s->frame, len, (void *)fp)) {
			gw_count(GW_CNT_PY_STACK_FAIL);
			return 0;
		}
		code = gw_py_u64(s->frame, GW_PY_READ_FRAME, l->frame_code);
		prev = gw_py_u64(s->frame, GW_PY_READ_FRAME, l->frame_prev);
		if (l->frame_owner < GW_PY_READ_FRAME &&
		    s->frame[l->frame_owner & 0x7f] == GW_PY_OWNED_BY_CSTACK) {
			fp = prev; /* a shim the C stack owns: no Python code of its own */
			continue;
		}
		if (l->code_adaptive == GW_PY_NONE) {
			__u32 off = l->frame_instr;

			instr = off <= GW_PY_READ_FRAME - 4 ? *(__s32 *)(s->frame + (off & 0x7f)) : -1;
		} else {
			instr = (__s64)(gw_py_u64(s->frame, GW_PY_READ_FRAME, l->frame_instr) - code -
					l->code_adaptive) >> 1;
		}
		if (n < GW_PY_MAX_FRAMES) {
			s->stack.frames[n].code = code;
			s->stack.frames[n].instr = (__s32)instr;
		}
		hash = (hash ^ code) * 0x100000001b3ull;
		hash = (hash ^ (__u64)(__u32)instr) * 0x100000001b3ull;
		n++;
		fp = prev;
	}
	if (n == 0)
		return 0;
	s->stack.pid = tgid;
	s->stack.n = n;
	hash |= 1; /* never 0, which means "none" */
	if (!bpf_map_lookup_elem(&gw_py_stacks, &hash))
		bpf_map_update_elem(&gw_py_stacks, &hash, &s->stack, BPF_ANY);
	return hash;
}

#endif /* GPUWHY_PYTHON_BPF_H */
