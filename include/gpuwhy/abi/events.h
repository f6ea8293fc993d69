/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The one kernel <-> user-space ABI of gpuwhy.
 *
 * Included by the BPF programs (bpf/) and by the C++ agent (src/). Rules:
 *  - fixed-width fields only, explicit padding, explicit enum values;
 *  - fields are appended, never reordered or resized; bump GW_ABI_VERSION on any change;
 *  - include/gpuwhy/abi/abi.hpp holds static_asserts on every size and offset.
 */
#ifndef GPUWHY_ABI_EVENTS_H
#define GPUWHY_ABI_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define GW_ABI_VERSION 10
/* The window a thread's launch rate is counted over (config launch_untimed_min): 2^26 ns, 67 ms. */
#define GW_LAUNCH_RATE_SHIFT 26
#define GW_COMM_LEN 16
#define GW_PATH_LEN 128
#define GW_LIB_NAME_LEN 32
#define GW_MAX_API 512 /* size of the api spec array; api ids are < this */

/* Every record in a ring buffer starts with this header. */
enum gw_event_kind {
	GW_EV_API_CALL = 1,    /* a completed GPU runtime/driver/collective call */
	GW_EV_OFFCPU = 2,      /* one off-CPU interval of a traced thread */
	GW_EV_PROC_EXEC = 3,   /* any process exec'd (discovery hint + lifecycle) */
	GW_EV_PROC_FORK = 4,   /* a traced process created a thread or a process */
	GW_EV_PROC_EXIT = 5,   /* a traced thread exited */
	GW_EV_SYSCALL = 6,     /* a slow syscall of a traced thread */
	GW_EV_BLOCK_IO = 7,    /* a block request issued by a traced thread */
	GW_EV_TCP_RETRANS = 8, /* a TCP retransmission (host-wide) */
	GW_EV_RECLAIM = 9,     /* direct reclaim stall of a traced thread */
	GW_EV_LIB_MAP = 10,    /* a GPU runtime library was mapped executable */
	GW_EV_CPU_SAMPLE = 11, /* a traced thread found running by the CPU sampling timer (ABI 3) */
	GW_EV_LAUNCH_BATCH = 12, /* kernel launches of one thread, 32 bytes each (ABI 4) */
	GW_EV_CPU_RUN = 13,      /* who held a CPU a traced thread waited for, switch to switch (ABI 5) */
	GW_EV_WAIT_MIGRATE = 14, /* a waiting traced thread moved to another CPU's run queue (ABI 5) */
	GW_EV_TASK_RENAME = 15,  /* a traced thread renamed itself (prctl PR_SET_NAME) (ABI 5) */
};

struct gw_event_header {
	__u64 ts_ns; /* CLOCK_MONOTONIC; start of the interval for interval events */
	__u32 pid;   /* thread group id */
	__u32 tid;
	__u16 kind;  /* enum gw_event_kind */
	__u16 size;  /* bytes of the whole record */
	__u16 cpu;
	__u16 flags; /* GW_FLAG_* */
};

#define GW_FLAG_READ_FAULT 0x1 /* a user-memory read for an argument failed; value left 0 */
/* A launch whose in-memory arguments (stack words, launch-config fields: the stream among them)
 * were not read on this call: gw_config.launch_read_mask samples them; their fields are unknown. */
#define GW_FLAG_ARGS_SAMPLED_OUT 0x2
/* A call of an entry-only API (gw_api_spec.entry_only): recorded at entry, no return probe, so
 * no duration, return value or out-pointer value. */
#define GW_FLAG_NO_RETURN 0x4
/* A launch kept compactly (gw_launch_item, or an API call record made from one): its time,
 * duration, return value and kernel (addr) are known, its other arguments were not captured. */
#define GW_FLAG_COMPACT 0x8
/* A GW_EV_SYSCALL record of an ioctl on a GPU driver's device file (gw_config.driver_dir and
 * driver_name: /dev/nvidia*), recorded whatever its length; gw_syscall.request is its request
 * (ABI 7). */
#define GW_FLAG_DRIVER_IOCTL 0x10

/* ---- GPU API calls ------------------------------------------------------------------------ */

/*
 * How the entry probe captures each of the eight argument slots of an API call. One generic
 * entry/return program pair serves every probed function; the per-function meaning lives in
 * this spec (filled by user space) and in the user-space decoder.
 */
enum gw_arg_src {
	GW_ARG_NONE = 0,
	GW_ARG_REG = 1,   /* index: 0..5 = rdi rsi rdx rcx r8 r9 (SysV integer argument order) */
	GW_ARG_STACK = 2, /* index n >= 1: the u64 at rsp + 8*n at entry (7th arg is n = 1) */
	GW_ARG_DEREF = 3, /* the u64 at (argument register index) + offset, read at entry */
};

struct gw_arg_slot {
	__u8 src;    /* enum gw_arg_src */
	__u8 index;
	__u16 offset;
};

struct gw_api_spec {
	struct gw_arg_slot args[8];
	__s8 out_reg; /* argument register holding an out-pointer whose u64 is read at return; -1 */
	__u8 enabled;
	__u8 launch;  /* 1: a kernel launch, whose in-memory arguments are sampled (launch_read_mask) */
	__u8 entry_only; /* 1: no return probe; the entry writes the record (GW_FLAG_NO_RETURN) */
	/* The API's in-memory words lie in one span, read with one user-memory read (a read costs
	 * ~100 ns: cuLaunchKernel's two stack words, a launch config's four fields): span_len bytes
	 * (8..64) from span_lo bytes past the stack pointer (span_src GW_ARG_STACK) or past argument
	 * register span_reg (GW_ARG_DEREF). span_src 0: each memory word is read on its own. */
	__u8 span_src;
	__u8 span_reg;
	__u8 span_lo;
	__u8 span_len;
};

struct gw_api_call {
	struct gw_event_header hdr; /* ts = entry */
	__u64 duration_ns;
	__u64 args[8];   /* per gw_api_spec */
	__u64 ret;       /* return register */
	__u64 out;       /* value behind out_reg at return (allocated pointer), else 0 */
	__u16 api;       /* api id (see src/probes/api_table.cpp) */
	__u16 lib;       /* attached library id (user-space table) */
	__s32 stack_id;  /* user stack id in the stacks map, -1 when not captured */
	/* The Python stack of the call in gw_py_stacks (its key), 0 when none was taken: not a
	 * Python process, a launch whose arguments were not sampled, or trace --no-python. ABI 5. */
	__u64 py_stack;
};

/* The attach cookie of an API probe: api id in the low 16 bits, library id above, and above
 * those what a batched launch's entry needs to know without reading the API's spec (its
 * hottest path: one launch in 64 or more takes it). */
#define GW_COOKIE(api, lib) ((((__u64)(lib)) << 16) | (__u64)(api))
#define GW_COOKIE_API(c) ((__u16)((c)&0xffff))
#define GW_COOKIE_LIB(c) ((__u16)(((c) >> 16) & 0xffff))
#define GW_COOKIE_BATCHED (1ull << 32)     /* a launch that is batched unless sampled */
#define GW_COOKIE_KERNEL_ARG2 (1ull << 33) /* its kernel is the second argument register */
#define GW_COOKIE_ENTRY_ONLY (1ull << 34)  /* no return probe (gw_api_spec.entry_only) */
/* A runtime library's launch (libcudart, HIP): a driver launch made inside it while it is open is
 * nested in it, and the driver launch's session probe records nothing (bpf/api.bpf.h). ABI 8. */
#define GW_COOKIE_RUNTIME_LAUNCH (1ull << 35)

/* ---- scheduler ----------------------------------------------------------------------------- */

struct gw_offcpu {
	struct gw_event_header hdr; /* ts = switched out; pid/tid = the traced thread */
	__u64 duration_ns;          /* switched out -> switched back in */
	__u64 runq_ns;              /* runnable but waiting for a CPU (after wakeup, or preempted) */
	__s64 prev_state;           /* task state when switched out (0 = still runnable) */
	__u32 next_pid;             /* the task that took the CPU when this one left */
	__u32 next_tid;
	__u32 waker_pid;            /* who woke it (0 when it was preempted, not blocked) */
	__u32 waker_tid;
	char next_comm[GW_COMM_LEN];
	char waker_comm[GW_COMM_LEN];
	__u8 preempted;             /* 1: involuntary (runnable when switched out) */
	/* 1: held off the CPU by its cgroup's CPU quota (CFS bandwidth), runnable all the while:
	 * throttled when it left the CPU, or woken into a throttled group. ABI 9. */
	__u8 throttled;
	/* The system call the thread was in when it left the CPU, -1 when none: what it blocked in
	 * (futex, read, ioctl...), known without the syscall tracepoints and their host-wide cost.
	 * ABI 3. */
	__s16 syscall;
	__u32 pad2;
	/* The task that had the CPU when this one got it back (0: the idle task): who held the CPU
	 * at the end of a run-queue wait, which the wake-up alone does not say. ABI 2. */
	__u32 holder_pid;
	__u32 holder_tid;
	char holder_comm[GW_COMM_LEN];
	/* The CPU whose run queue the thread first waited in (where it was preempted, or where its
	 * wake-up queued it); GW_NO_CPU when it was not counted waiting (see gw_cpu_run). ABI 5. */
	__u16 wait_cpu;
	/* How often it moved to another run queue while waiting (one gw_wait_migrate each). */
	__u16 migrations;
	/* task->nr_cpus_allowed at switch-in: how many CPUs it may run on. */
	__u16 cpus_allowed;
	__u16 pad3;
	/* The first argument of the system call it left the CPU in (`syscall`), from its saved user
	 * registers: a futex's address, a descriptor; 0 when in none. What a sleep waited on: the
	 * futex of a Python interpreter's GIL lies inside the interpreter's state. ABI 9. */
	__u64 arg0;
};

#define GW_NO_CPU 0xffff

/*
 * Who held a CPU while a traced thread waited in its run queue (ABI 5). While at least one traced
 * thread waits on a CPU (or one came or left since that CPU's last switch), every sched_switch on
 * it emits the task it switches away from with the time since the CPU's previous switch: that
 * task's whole run there. User space clips the runs to each thread's waits (offcpu's runnable
 * tail on wait_cpu, then on the CPU of each gw_wait_migrate) to know by time who held the CPU.
 */
struct gw_cpu_run {
	struct gw_event_header hdr; /* ts = the run began; pid/tid = the task that ran (0: idle) */
	__u64 duration_ns;          /* until the switch away from it */
	char comm[GW_COMM_LEN];
};

/* A traced thread waiting for a CPU was moved to another CPU's run queue (load balancing). */
struct gw_wait_migrate {
	struct gw_event_header hdr; /* ts = the move; pid/tid = the thread */
	__u32 from_cpu;
	__u32 to_cpu;
};

/* A thread of a traced process renamed itself (prctl PR_SET_NAME, pthread_setname_np); on the
 * lifecycle ring. */
struct gw_task_rename {
	struct gw_event_header hdr; /* pid/tid = the thread */
	char comm[GW_COMM_LEN];     /* its new name */
};

/* ---- process lifecycle --------------------------------------------------------------------- */

struct gw_proc_exec {
	struct gw_event_header hdr;
	__u32 ppid;
	__u32 pad;
	char comm[GW_COMM_LEN];
	char filename[GW_PATH_LEN];
};

struct gw_proc_fork {
	struct gw_event_header hdr; /* pid/tid = parent */
	__u32 child_pid;            /* == hdr.pid for a new thread */
	__u32 child_tid;
	char child_comm[GW_COMM_LEN];
};

struct gw_proc_exit {
	struct gw_event_header hdr;
	__s32 exit_code;
	__u32 group_dead; /* 1 when the whole process ended */
	char comm[GW_COMM_LEN];
};

/* inode 0 (with dev 0, no name): a dlopen returned, the file is not known. */
struct gw_lib_map {
	struct gw_event_header hdr;
	__u64 inode;
	__u32 dev;
	__u32 pad;
	char name[GW_LIB_NAME_LEN]; /* file name (last path component) */
};

/* gw_lib_map hdr.flags, from the dynamic linker's hook (gw_rtld_debug_state): a GPU runtime file
 * user space has not looked at is mapped, before the process runs on. HELD: the thread was sent
 * SIGSTOP, and the agent continues the process (SIGCONT) once the file is probed. NOT_HELD: it
 * could not be held (traced by a debugger, or the signal failed): its first calls may be missed. */
#define GW_LIB_HELD 0x10
#define GW_LIB_NOT_HELD 0x20

/* ---- host I/O, network, memory --------------------------------------------------------------- */

struct gw_syscall {
	struct gw_event_header hdr;
	__u64 duration_ns;
	__s64 ret;
	__u64 arg0;
	__u32 nr;
	__u32 request; /* GW_FLAG_DRIVER_IOCTL: the ioctl's request; else 0 (ABI 7; pad before) */
};

struct gw_block_io {
	struct gw_event_header hdr; /* pid/tid = issuer; ts = issue */
	__u64 duration_ns;          /* issue -> complete */
	__u64 sector;
	__u32 bytes;
	__u32 dev;
	__u32 op;     /* REQ_OP_* (low 8 bits of cmd_flags) */
	__s32 error;
};

struct gw_tcp_retrans {
	struct gw_event_header hdr;
	__u8 saddr[16]; /* IPv4 in the first 4 bytes when family == AF_INET */
	__u8 daddr[16];
	__u16 sport;
	__u16 dport;
	__u16 family;
	__u8 state;
	__u8 pad;
};

struct gw_reclaim {
	struct gw_event_header hdr;
	__u64 duration_ns;
	__u64 nr_reclaimed;
};

/* ---- CPU samples ---------------------------------------------------------------------------- */

/* What a traced thread was doing when the sampling timer (gw_config.sample_period_ns) found it on
 * a CPU: the on-CPU side of the off-CPU intervals, and the CPU time a syscall spends, which the
 * scheduler does not see. ABI 3. */
struct gw_cpu_sample {
	struct gw_event_header hdr; /* ts = the sample; pid/tid = the thread on the CPU */
	__u64 period_ns;            /* CPU time one sample stands for */
	__s16 syscall;              /* the system call it was in, -1: none */
	__u8 kernel;                /* 1: the timer interrupted kernel code */
	__u8 pad;
	__s32 stack_id;             /* user stack in the stacks map (--stacks), -1 when not captured */
	/* The thread's Python stack in gw_py_stacks (its key), 0 when none was taken: not a Python
	 * process whose layout is known, a thread that runs no Python, or trace --no-python. What a
	 * thread that is not the one waiting (a data loader, a lock holder) was doing in Python. ABI 6. */
	__u64 py_stack;
	/* The thread's page faults so far (task_struct min_flt / maj_flt): the difference between
	 * two samples of a thread is the faults it took between them. ABI 9. */
	__u64 min_flt;
	__u64 maj_flt;
};

/* ---- loss and health counters (per-CPU array map "gw_counters") ------------------------------ */

enum gw_counter {
	GW_CNT_EVENTS_RING_FULL = 0,    /* bulk ring had no room: event lost */
	GW_CNT_LIFECYCLE_RING_FULL = 1, /* lifecycle ring had no room: event lost */
	GW_CNT_PENDING_FULL = 2,        /* no room to remember a call entry: a call lost */
	GW_CNT_RETURN_UNMATCHED = 3,    /* a return with no recorded entry (entry lost or mid-call attach) */
	GW_CNT_OFFCPU_FULL = 4,         /* no room to remember a switch-out: interval lost */
	GW_CNT_READ_FAULT = 5,          /* argument read from user memory failed (not a loss) */
	GW_CNT_STACK_FAIL = 6,          /* a user stack could not be captured (not a loss) */
	GW_CNT_ENTRY_UNMATCHED = 7,     /* a call entry whose return never came (unwound past) */
	GW_CNT_PY_STACK_FAIL = 8,       /* a Python process's call whose Python stack could not be
					 * read (memory read failed, thread state not found) (ABI 5) */
	/* A driver launch made inside an open runtime launch (cudaLaunchKernel -> cuLaunchKernel),
	 * not recorded: its time is inside the runtime call's (not a loss; uprobe sessions) (ABI 8) */
	GW_CNT_LAUNCH_NESTED_SKIPPED = 9,
	GW_CNT__MAX = 10,
};

/* Tunables, in the BPF object's read-only data; set by user space before load. */
/* ---- kernel launches, batched ------------------------------------------------------------------ */

/*
 * A launch costs one ring record of 120 bytes; most of a launch probe's own cost is that record's
 * stores, and explain reads only a launch's time, duration, return value, kernel and stack. So
 * the launches whose in-memory arguments are not sampled (gw_config.launch_read_mask) are
 * appended, 32 bytes each, to a batch in the thread's task storage, and a batch is one ring record
 * (GW_EV_LAUNCH_BATCH, hdr.size = 32 + 32 * n): written when full, when another API call of the
 * thread begins, when the thread leaves the CPU, and when it exits. At stop, user space reads the
 * batches still open through the task-storage map (its value starts with the batch) by pidfd.
 * A launch that failed or ran longer than 2^32 ns gets an API call record of its own (with
 * GW_FLAG_COMPACT: the same fields known).
 */
#define GW_LAUNCH_BATCH 32

struct gw_launch_item {
	__u64 func;        /* the kernel: the launch's first argument */
	__s32 start;       /* ns from the batch's hdr.ts_ns (negative: an outer launch, returned after
			    * the inner one it made) */
	__u32 duration_ns; /* 0 with GW_FLAG_NO_RETURN */
	__u16 api;
	__u16 lib;
	__u16 flags;       /* GW_FLAG_*: GW_FLAG_COMPACT and GW_FLAG_ARGS_SAMPLED_OUT are implied */
	__u16 pad;
	__s32 stack_id;    /* as gw_api_call.stack_id: -1 without stacks */
	__u32 pad2;
};

struct gw_launch_batch {
	struct gw_event_header hdr; /* ts_ns: the first item's start; pid, tid: the thread */
	__u32 n;                    /* items[0, n) are launches */
	__u32 busy;                 /* BPF only: set while the thread's probe changes the batch */
	struct gw_launch_item items[GW_LAUNCH_BATCH];
};

struct gw_config {
	__u64 min_offcpu_ns;   /* off-CPU intervals shorter than this are not emitted */
	__u64 min_syscall_ns;  /* syscalls shorter than this are not emitted */
	__u32 filter_pids;     /* 1: only already-tracked processes emit API calls (--pid) */
	__u32 capture_stacks;  /* 1: user stacks on API call entry */
	__u32 wakeup_bytes;    /* force a reader wakeup once this much data waits in the bulk ring */
	__u32 self_pid;        /* the agent itself, never traced */
	/* A thread's launches read their in-memory arguments when (launch count & mask) == 0: 0 reads
	 * on every launch, 63 on one in 64. A user-memory read is the dearest part of a probe. */
	__u32 launch_read_mask;
	/* ABI 10 (was padding): a thread that made at least this many launches in the previous
	 * 2^GW_LAUNCH_RATE_SHIFT ns window records the launches it does not sample (above) at entry
	 * only, through a session probe that skips their return trap; 0: every launch is timed
	 * (trace --full). (Launch batching is a probe's cookie: GW_COOKIE_BATCHED.) */
	__u32 launch_untimed_min;
	__u64 sample_period_ns; /* the CPU sampling timer's period (0: not sampling) */
	__u32 python_stacks;    /* 1: Python stacks at the calls of Python processes (ABI 5) */
	/* 1: user stacks in the CPU samples of threads without a Python stack (the default: where a
	 * native program's time goes); capture_stacks gives them every sample a stack */
	__u32 sample_stacks;
	/* ABI 7: the syscall tracepoints serve two families. `syscalls`: every slow syscall of a
	 * traced thread; `driver_ioctls`: every ioctl of a traced thread on a file named
	 * driver_name* (a prefix) in a directory named driver_dir (NUL-padded): "nvidia" in "dev". */
	__u32 syscalls;
	__u32 driver_ioctls;
	char driver_dir[16];
	char driver_name[16];
};

/* ---- Python stacks (ABI 5) ----------------------------------------------------------------------
 *
 * At the GPU API calls of a Python process (every call but the launches whose arguments are not
 * sampled) the entry probe walks the calling thread's CPython frames and copies, per frame, only
 * the code object's address and the instruction position; user space reads the code object once
 * per (process, address) and decodes the line. The stack is kept once in gw_py_stacks, keyed by a
 * hash of (tgid, frames) that the call record carries (gw_api_call.py_stack).
 *
 * Where the thread's state is: the "current thread state" is empty while the thread is in a C call
 * with the GIL released (what PyTorch and ctypes do), so the probe walks the interpreter's thread
 * list for the thread state whose thread id is the caller's (once per thread; then cached).
 */
#define GW_PY_MAX_FRAMES 48
#define GW_PY_READ_TSTATE 192 /* bytes of a thread state read at once: every field used is below */
#define GW_PY_READ_FRAME 104  /* bytes of a frame read at once (3.10's f_lasti ends at 100) */

/* Per process, filled by user space at discovery (src/discover/python_layout.cpp), keyed by tgid.
 * Offsets are in bytes; GW_PY_NONE marks a field a version does not have. */
#define GW_PY_NONE 0xffff
struct gw_py_layout {
	__u64 runtime;        /* address of _PyRuntime in the process */
	__u16 version;        /* 0x030a = 3.10 ... */
	__u16 interp_head;    /* _PyRuntime: interpreters.head */
	__u16 threads_head;   /* PyInterpreterState: threads.head (3.10: tstate_head) */
	__u16 tstate_next;    /* PyThreadState: next */
	__u16 tstate_id;      /* PyThreadState: native_thread_id, or (3.10) thread_id == fs base */
	__u16 tstate_frame;   /* PyThreadState: the top frame, or (3.11, 3.12) the cframe pointer */
	__u16 cframe_frame;   /* _PyCFrame: current_frame (3.11, 3.12); GW_PY_NONE: no cframe */
	__u16 frame_code;     /* frame: code object (3.13: f_executable) */
	__u16 frame_prev;     /* frame: the caller's frame */
	__u16 frame_instr;    /* frame: instruction pointer, or (3.10) the int f_lasti */
	__u16 frame_owner;    /* frame: owner byte (3.12+: 3 and above are no Python code of their
			       * own, shims and incomplete frames); GW_PY_NONE */
	__u16 code_adaptive;  /* code object: co_code_adaptive (3.11+); instr index = (ptr - code -
			       * this) / 2; GW_PY_NONE: frame_instr is 3.10's f_lasti (an index) */
	__u8 id_is_fsbase;    /* 1: tstate_id holds pthread_self(), the thread's fs base (3.10) */
	__u8 frame_read;      /* bytes of a frame read at once, 8..GW_PY_READ_FRAME: the fields used
			       * lie below (a generator's frame ends its object: read no further) */
	__u8 code_tag;        /* low bits of frame_code's word that are a tag (3.14+: f_executable
			       * is a _PyStackRef): masked off before it is a code object's address */
	__u8 pad;
	__u16 frame_tlbc;     /* frame: int32 tlbc_index, the thread's bytecode copy (3.14t);
			       * GW_PY_NONE: the bytecode is the code object's co_code_adaptive */
	__u16 code_tlbc;      /* code object: co_tlbc, a _PyCodeArray {size, entries[]} (3.14t) */
};

struct gw_py_frame {
	__u64 code;  /* PyCodeObject address */
	__s32 instr; /* instruction index in code units (3.10: f_lasti); -1: not started */
	__u32 pad;
};

struct gw_py_stack {
	__u32 pid;       /* tgid: code addresses are the process's */
	__u16 n;         /* frames[0, n), 0 the innermost */
	__u16 truncated; /* 1: deeper than GW_PY_MAX_FRAMES; the outermost frames are missing */
	struct gw_py_frame frames[GW_PY_MAX_FRAMES];
};

#endif /* GPUWHY_ABI_EVENTS_H */
