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
 *
 * What a walk costs is its user-memory reads (~90 ns each on the machines measured, nearly all of
 * it the helper's fixed price: a 4 KiB read costs about what a 72-byte one does), so it makes few.
 * From 3.11 on, the frames of a thread live one after the other in its data stack, each caller
 * below its callee: one read of the page-bounded window below the innermost frame holds the
 * frames of a typical stack, and a frame outside it (a generator's, the next page's) starts a new
 * window. 3.10's frames are separate heap objects: one read per frame of the bytes it needs.
 */
#ifndef GPUWHY_PYTHON_BPF_H
#define GPUWHY_PYTHON_BPF_H

#include "gpuwhy.bpf.h"

#define GW_PY_MAX_THREADS 64 /* thread states looked at when looking for the caller's */
#define GW_PY_MAX_STEPS 64   /* frames walked, shims included; GW_PY_MAX_FRAMES kept */
#define GW_PY_NO_TSTATE 1    /* the cached "thread state": this thread has none (yet) */
#define GW_PY_RETRY_MASK 63  /* a thread without one looks again on one call in 64 */
/* Frame owners from this value on run no Python code of their own: 3.12/3.13's
 * FRAME_OWNED_BY_CSTACK = 3 (a shim), 3.14's FRAME_OWNED_BY_INTERPRETER = 3 and
 * FRAME_OWNED_BY_CSTACK = 4 (Include/internal/pycore_interpframe_structs.h, checked on
 * 3.14.10's). */
#define GW_PY_OWNER_NOT_CODE 3
#define GW_PY_MAX_TLBC 4096 /* 3.14t: a tlbc_index beyond this is no thread's bytecode copy */
#define GW_PY_WINDOW 4096       /* bytes of frames read at once (3.11+), within one page */

/* What a thread remembers between walks, in its task storage (gw_thread_calls, gw_py_threads). */
struct gw_py_thread_cache {
	__u64 tstate;   /* its PyThreadState; GW_PY_NO_TSTATE: none (yet) */
	__u64 last_key; /* the key of its last stack, known to be in gw_py_stacks */
	__u32 misses;   /* walks without a thread state: it is looked for again now and then */
	__u32 fresh;    /* 1: last_key was new to gw_py_stacks, its record not yet submitted */
};

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

/* Room for a stack being built, the raw bytes of a thread state and a window of frames: more
 * than the 512 bytes of a BPF stack. One per CPU and walker: the sampling timer's interrupt can
 * come in the middle of an API probe's walk on the same CPU, and must not overwrite its scratch.
 * The window has 8 bytes of slack: a u64 at any offset masked with GW_PY_WINDOW - 1 is in it. */
struct gw_py_scratch {
	struct gw_py_stack stack;
	__u8 tstate[GW_PY_READ_TSTATE];
	__u8 win[GW_PY_WINDOW + 8];
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
	__u64 win_lo;          /* user address of s->win[0]; win_len bytes of it are valid */
	__u64 hash;
	__u32 n;               /* frames kept */
	__u32 found;           /* the thread walk found the caller's state */
	__u32 fail;            /* a frame could not be read */
	__u32 tgid;
	__u32 slot;            /* GW_PY_SLOT_*: whose scratch */
	__u32 win_len;
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

/* A u64 at `off` in the window (the caller checked the range; the mask is the verifier's). */
static __always_inline __u64 gw_py_win_u64(const struct gw_py_scratch *s, __u32 off)
{
	return *(const __u64 *)(s->win + (off & (GW_PY_WINDOW - 1)));
}

/* 3.14t: where the bytecode of the thread's copy starts, the one the frame's tlbc_index selects
 * in the code object's co_tlbc array (_PyCodeArray {Py_ssize_t size; char *entries[]} in
 * Include/internal/pycore_code.h); entries[0] is co_code_adaptive itself. 0: unreadable. */
static __always_inline __u64 gw_py_tlbc_bytecode(const struct gw_py_walk *w, __u64 code, __s32 idx)
{
	__u64 arr = 0, size = 0, entry = 0;

	if (idx < 0 || idx >= GW_PY_MAX_TLBC || w->l.code_tlbc == GW_PY_NONE ||
	    bpf_probe_read_user(&arr, sizeof(arr), (void *)(code + w->l.code_tlbc)) || !arr ||
	    bpf_probe_read_user(&size, sizeof(size), (void *)arr) || (__u64)idx >= size ||
	    bpf_probe_read_user(&entry, sizeof(entry), (void *)(arr + 8 + 8 * (__u64)idx)))
		return 0;
	return entry;
}

/* One frame: copied as {code, instruction index} unless it runs no code of its own (a shim, an
 * incomplete frame); on to the caller.
 * Its bytes come from the window when it lies there, else from a new window ending at it. */
static long gw_py_frame_step(__u32 i, void *arg)
{
	struct gw_py_walk *w = arg;
	struct gw_py_scratch *s = gw_py_scratch_get(w->slot);
	__u32 len = w->l.frame_read, n = w->n, base, off;
	__u64 fp = w->fp, code, lo, bytecode;
	__s64 instr;
	__s32 tlbc;

	if (!s || !fp)
		return 1;
	if (n >= GW_PY_MAX_FRAMES) {
		s->stack.truncated = 1;
		return 1;
	}
	if (len < 8 || len > GW_PY_READ_FRAME) {
		w->fail = 1;
		return 1;
	}
	if (fp < w->win_lo || fp + len > w->win_lo + w->win_len) {
		/* 3.11+: down to GW_PY_WINDOW bytes below the frame's end, not below its page (the
		 * page is mapped, the one before may not be); 3.10: the frame alone. */
		lo = fp;
		if (w->l.code_adaptive != GW_PY_NONE) {
			lo = fp & ~(__u64)(GW_PY_WINDOW - 1);
			if (fp + len - lo > GW_PY_WINDOW)
				lo = fp + len - GW_PY_WINDOW;
		}
		off = fp + len - lo;
		if (off > GW_PY_WINDOW || bpf_probe_read_user(s->win, off, (void *)lo)) {
			w->fail = 1;
			return 1;
		}
		w->win_lo = lo;
		w->win_len = off;
	}
	base = fp - w->win_lo; /* the frame's bytes: win[base, base + len) */
	/* 3.14: f_executable is a _PyStackRef whose low bits are a tag (Py_TAG_BITS). */
	code = gw_py_win_u64(s, base + w->l.frame_code) & ~(__u64)w->l.code_tag;
	w->fp = gw_py_win_u64(s, base + w->l.frame_prev);
	off = w->l.frame_owner;
	if (off < len && s->win[(base + off) & (GW_PY_WINDOW - 1)] >= GW_PY_OWNER_NOT_CODE)
		return 0; /* a shim or the interpreter's own frame: no Python code of its own */
	off = w->l.frame_instr;
	if (w->l.code_adaptive == GW_PY_NONE) {
		instr = (__s32)gw_py_win_u64(s, base + off); /* 3.10's int f_lasti */
	} else {
		bytecode = code + w->l.code_adaptive;
		/* 3.14t: the instruction pointer points into the thread's own bytecode copy */
		if (w->l.frame_tlbc < len) {
			tlbc = (__s32)gw_py_win_u64(s, base + w->l.frame_tlbc);
			if (tlbc != 0) {
				bytecode = gw_py_tlbc_bytecode(w, code, tlbc);
				if (!bytecode) {
					w->fail = 1;
					return 1;
				}
			}
		}
		instr = (__s64)(gw_py_win_u64(s, base + off) - bytecode) >> 1;
	}
	s->stack.frames[n].code = code;
	s->stack.frames[n].instr = (__s32)instr;
	w->hash = (w->hash ^ code) * 0x100000001b3ull;
	w->hash = (w->hash ^ (__u64)(__u32)instr) * 0x100000001b3ull;
	w->n = n + 1;
	return 0;
}

/*
 * The key of the calling thread's Python stack in gw_py_stacks, 0 when the process is not a
 * supported Python or the thread runs no Python. `c`: what the thread remembers between walks;
 * `slot`: the caller's scratch (GW_PY_SLOT_*).
 */
static __always_inline __u64 gw_py_stack(struct task_struct *task, struct gw_py_thread_cache *c,
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
	w.ts = c->tstate;
	if (w.ts == GW_PY_NO_TSTATE) {
		if ((++c->misses & GW_PY_RETRY_MASK) != 0)
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
			c->tstate = GW_PY_NO_TSTATE;
			return 0;
		}
		c->tstate = w.ts;
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
	w.hash |= 1; /* never 0, which means "none" */
	/* A loop calls from one stack again and again: the thread's last key is in the map already
	 * (user space reads a new key within milliseconds, and a lookup keeps it recent). */
	if (w.hash == c->last_key)
		return w.hash;
	s->stack.pid = tgid;
	s->stack.n = w.n;
	if (!bpf_map_lookup_elem(&gw_py_stacks, &w.hash)) {
		bpf_map_update_elem(&gw_py_stacks, &w.hash, &s->stack, BPF_ANY);
		c->fresh = 1;
	}
	c->last_key = w.hash;
	return w.hash;
}

/*
 * The ring's submit flags for a record carrying Python stack `key` of the thread whose cache is
 * `c`: a stack new to gw_py_stacks wakes the reader now rather than at its next poll (5 ms), so
 * user space names its frames while their code objects surely live: the body of a module or
 * class run once at import, or code made by exec, is freed soon after (in a PyTorch start-up
 * most such frames were freed before they were named). A loop calls from the stacks it has
 * seen: the wakeups are paid at start-up, not per step. `flags`: what the record gets otherwise.
 */
static __always_inline __u64 gw_py_submit_flags(struct gw_py_thread_cache *c, __u64 key,
						__u64 flags)
{
	if (!key || !c->fresh || key != c->last_key)
		return flags;
	c->fresh = 0;
	return BPF_RB_FORCE_WAKEUP;
}

#endif /* GPUWHY_PYTHON_BPF_H */
