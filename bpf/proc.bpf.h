/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Process lifecycle (exec, fork/thread, exit) and discovery hints (a GPU runtime library mapped
 * executable). All go to the lifecycle ring, which bulk events never fill.
 */
#ifndef GPUWHY_PROC_BPF_H
#define GPUWHY_PROC_BPF_H

#include "gpuwhy.bpf.h"
#include "api.bpf.h" /* gw_flush_launches_of */

SEC("tp_btf/sched_process_exec")
int BPF_PROG(gw_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct gw_proc_exec *rec;

	/* Every exec is reported: a new process may be about to load a GPU runtime. With --pid, only
	 * the traced processes' (and their children's): no other process is looked at. */
	if (p->tgid == gw_cfg.self_pid || (gw_cfg.filter_pids && !gw_is_tracked(p->tgid)))
		return 0;
	/* The old image's launches, under the thread id that made them; its Python layout is not
	 * the new program's (user space looks at the new one). */
	if (gw_is_tracked(p->tgid)) {
		__u32 tgid = p->tgid;

		gw_flush_launches_of(p, old_pid);
		bpf_map_delete_elem(&gw_py_procs, &tgid);
	}
	rec = gw_reserve_lifecycle(sizeof(*rec));
	if (!rec)
		return 0;
	gw_fill_header(&rec->hdr, GW_EV_PROC_EXEC, sizeof(*rec), bpf_ktime_get_ns(), p->tgid,
		       p->pid);
	rec->ppid = BPF_CORE_READ(p, real_parent, tgid);
	rec->pad = 0;
	__builtin_memcpy(rec->comm, p->comm, GW_COMM_LEN);
	bpf_probe_read_kernel_str(rec->filename, sizeof(rec->filename), BPF_CORE_READ(bprm, filename));
	bpf_ringbuf_submit(rec, 0);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(gw_fork, struct task_struct *parent, struct task_struct *child)
{
	struct gw_proc_fork *rec;
	__u32 child_tgid = child->tgid, one = 1;

	if (!gw_is_tracked(parent->tgid))
		return 0;
	/* Children of a traced process (data-loader workers, ranks) are traced too. */
	if (child_tgid != parent->tgid)
		bpf_map_update_elem(&gw_tracked, &child_tgid, &one, BPF_NOEXIST);
	rec = gw_reserve_lifecycle(sizeof(*rec));
	if (!rec)
		return 0;
	gw_fill_header(&rec->hdr, GW_EV_PROC_FORK, sizeof(*rec), bpf_ktime_get_ns(), parent->tgid,
		       parent->pid);
	rec->child_pid = child_tgid;
	rec->child_tid = child->pid;
	__builtin_memcpy(rec->child_comm, child->comm, GW_COMM_LEN);
	bpf_ringbuf_submit(rec, 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(gw_exit, struct task_struct *p, bool group_dead)
{
	struct gw_proc_exit *rec;
	__u32 tgid = p->tgid;

	if (!gw_is_tracked(tgid))
		return 0;
	gw_flush_launches_of(p, p->pid); /* its task storage goes with it */
	rec = gw_reserve_lifecycle(sizeof(*rec));
	if (rec) {
		gw_fill_header(&rec->hdr, GW_EV_PROC_EXIT, sizeof(*rec), bpf_ktime_get_ns(), tgid,
			       p->pid);
		rec->exit_code = p->exit_code;
		rec->group_dead = group_dead;
		__builtin_memcpy(rec->comm, p->comm, GW_COMM_LEN);
		bpf_ringbuf_submit(rec, 0);
	}
	if (group_dead) {
		bpf_map_delete_elem(&gw_tracked, &tgid);
		bpf_map_delete_elem(&gw_py_procs, &tgid); /* the pid may next be another program */
	}
	return 0;
}

/*
 * A thread of a traced process renamed itself (prctl PR_SET_NAME, pthread_setname_np, or a
 * write to /proc/.../comm): the stored threads and processes rows follow the new name. The
 * tracepoint fires before the name is copied into the task: the new name is the argument.
 */
SEC("tp_btf/task_rename")
int BPF_PROG(gw_task_rename, struct task_struct *task, const char *comm)
{
	struct gw_task_rename *rec;

	if (!gw_is_tracked(task->tgid))
		return 0;
	rec = gw_reserve_lifecycle(sizeof(*rec));
	if (!rec)
		return 0;
	gw_fill_header(&rec->hdr, GW_EV_TASK_RENAME, sizeof(*rec), bpf_ktime_get_ns(), task->tgid,
		       task->pid);
	__builtin_memset(rec->comm, 0, GW_COMM_LEN);
	bpf_probe_read_kernel_str(rec->comm, sizeof(rec->comm), comm);
	bpf_ringbuf_submit(rec, 0);
	return 0;
}

/* Does a file name start with one of the GPU runtime prefixes? (Bounded, verifier-friendly.) */
static __always_inline bool gw_prefix(const char *name, const char *prefix, int len)
{
	for (int i = 0; i < len; i++)
		if (name[i] != prefix[i])
			return false;
	return true;
}

static __always_inline bool gw_is_gpu_runtime(const char *n)
{
	return gw_prefix(n, "libcudart", 9) || gw_prefix(n, "libcuda.", 8) ||
	       gw_prefix(n, "libnccl", 7) || gw_prefix(n, "libamdhip64", 11);
}

/*
 * One library hint on the lifecycle ring for the current process. `name` is the file name
 * (GW_LIB_NAME_LEN bytes), or NULL with inode and dev 0 when the file is not known.
 */
static __always_inline void gw_emit_lib_hint(__u64 pid_tgid, __u64 inode, __u32 dev,
					     const char *name)
{
	struct gw_lib_map *rec = gw_reserve_lifecycle(sizeof(*rec));

	if (!rec)
		return;
	gw_fill_header(&rec->hdr, GW_EV_LIB_MAP, sizeof(*rec), bpf_ktime_get_ns(), pid_tgid >> 32,
		       (__u32)pid_tgid);
	rec->inode = inode;
	rec->dev = dev;
	rec->pad = 0;
	if (name)
		__builtin_memcpy(rec->name, name, GW_LIB_NAME_LEN);
	else
		__builtin_memset(rec->name, 0, GW_LIB_NAME_LEN);
	bpf_ringbuf_submit(rec, 0);
}

/*
 * A GPU runtime mapped executable (dlopen, or a library copy at a new path): tell user space to
 * look at this process now rather than at its next periodic scan. Called from sys_enter for
 * mmap(2): fentry and LSM programs are refused on locked-down kernels, BTF tracepoints are not.
 */
static __always_inline void gw_check_lib_mmap(struct pt_regs *regs)
{
	struct task_struct *task = bpf_get_current_task_btf();
	unsigned long prot = BPF_CORE_READ(regs, dx);
	long fd = (long)BPF_CORE_READ(regs, r8);
	struct file **fds, *file = NULL;
	char name[GW_LIB_NAME_LEN] = {};
	__u64 pid_tgid;
	unsigned int max_fds;

	if (!(prot & 0x4 /* PROT_EXEC */) || fd < 0)
		return;
	max_fds = BPF_CORE_READ(task, files, fdt, max_fds);
	if ((unsigned long)fd >= max_fds)
		return;
	fds = BPF_CORE_READ(task, files, fdt, fd);
	if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) || !file)
		return;
	bpf_probe_read_kernel_str(name, sizeof(name), BPF_CORE_READ(file, f_path.dentry, d_name.name));
	if (!gw_is_gpu_runtime(name))
		return;
	pid_tgid = bpf_get_current_pid_tgid();
	if ((pid_tgid >> 32) == gw_cfg.self_pid)
		return;
	gw_emit_lib_hint(pid_tgid, BPF_CORE_READ(file, f_inode, i_ino),
			 BPF_CORE_READ(file, f_inode, i_sb, s_dev), name);
}

/*
 * The same hint without the syscall tracepoints (`trace --without syscalls`): a return probe on
 * libc's dlopen. It fires only for successful dlopens, after the libraries (and everything they
 * pulled in) are mapped, but it cannot say which file: inode 0 means "look at this process".
 * Runtimes linked at start-up (DT_NEEDED) are found through the exec hint instead.
 */
SEC("uretprobe")
int gw_dlopen_return(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	if (PT_REGS_RC(ctx) && (pid_tgid >> 32) != gw_cfg.self_pid)
		gw_emit_lib_hint(pid_tgid, 0, 0, NULL);
	return 0;
}

/*
 * Nothing lost at start-up. The dynamic linker calls _dl_debug_state (the debugger's r_brk) after
 * it maps the initial libraries and around every dlopen, before any of the new code runs
 * (constructors come later). A uprobe there looks through the process's executable mappings for
 * a GPU runtime file user space does not know yet (gw_known_libs); if there is one, it holds the
 * process (SIGSTOP to this thread stops the whole group before it returns to user space) and
 * tells user space, which attaches to the file, marks it known and continues the process. Each
 * new file holds one process for a few milliseconds; files already known cost the walk only.
 */
struct gw_file_key {
	__u64 inode;
	__u32 dev; /* the kernel's dev_t of the mapped inode (major << 20 | minor) */
	__u32 pad;
};

/* GPU runtime files user space has attached to or looked at: (dev, inode) of the mapped inode. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct gw_file_key);
	__type(value, __u32);
} gw_known_libs SEC(".maps");

/* Processes stopped for a new runtime file and not yet continued by user space (tgid -> when).
 * The agent's guardian keeps this map's fd and, when the agent dies (SIGKILL, a crash) before it
 * read the ring record of a stop, continues every process listed here that is still stopped:
 * no process is left stopped by a trace that is gone. User space deletes a pid as it continues it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} gw_held_pids SEC(".maps");

/* Set by user space: 0 tells user space about a new file without holding the process. */
const volatile __u32 gw_hold_new_libs = 1;

/* Open-coded VMA iterator (Linux 6.7); weak, so the object loads where it is missing and user
 * space leaves this program out (the dlopen hint and the scans remain). */
extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task,
				 __u64 addr) __weak __ksym;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __weak __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __weak __ksym;

#define GW_VM_EXEC 0x4
#define GW_SIGSTOP 19
#define GW_W8(a, b, c, d, e, f, g, h)                                                          \
	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16 | (__u64)(d) << 24 | (__u64)(e) << 32 | \
	 (__u64)(f) << 40 | (__u64)(g) << 48 | (__u64)(h) << 56)

/*
 * gw_is_gpu_runtime on whole words, without a branch: the walk runs once per mapping inside an
 * iterator loop, and a branch per character made the verifier give up on it.
 */
static __always_inline bool gw_is_gpu_runtime_words(__u64 w0, __u64 w1)
{
	const __u64 m7 = 0x00ffffffffffffffull, m3 = 0xffffff;

	return ((w0 == GW_W8('l', 'i', 'b', 'c', 'u', 'd', 'a', 'r')) & ((w1 & 0xff) == 't')) |
	       (w0 == GW_W8('l', 'i', 'b', 'c', 'u', 'd', 'a', '.')) |
	       ((w0 & m7) == GW_W8('l', 'i', 'b', 'n', 'c', 'c', 'l', 0)) |
	       ((w0 == GW_W8('l', 'i', 'b', 'a', 'm', 'd', 'h', 'i')) &
		((w1 & m3) == GW_W8('p', '6', '4', 0, 0, 0, 0, 0)));
}

SEC("uprobe")
int gw_rtld_debug_state(struct pt_regs *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	char found_name[GW_LIB_NAME_LEN] = {};
	struct gw_file_key key = {}, found = {};
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;
	struct gw_lib_map *rec;
	__u32 tgid = task->tgid, flags;
	bool known = false;
	__u64 w[2];

	if (tgid == gw_cfg.self_pid || (gw_cfg.filter_pids && !gw_is_tracked(tgid)))
		return 0;
	bpf_iter_task_vma_new(&it, task, 0);
	while ((vma = bpf_iter_task_vma_next(&it))) {
		struct file *file;

		if (!(vma->vm_flags & GW_VM_EXEC))
			continue;
		file = vma->vm_file;
		if (!file)
			continue;
		w[0] = w[1] = 0;
		bpf_probe_read_kernel_str(w, sizeof(w), BPF_CORE_READ(file, f_path.dentry, d_name.name));
		if (!gw_is_gpu_runtime_words(w[0], w[1]))
			continue;
		key.inode = BPF_CORE_READ(file, f_inode, i_ino);
		key.dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
		if (bpf_map_lookup_elem(&gw_known_libs, &key)) {
			known = true;
			continue;
		}
		found = key;
		bpf_probe_read_kernel_str(found_name, sizeof(found_name),
					  BPF_CORE_READ(file, f_path.dentry, d_name.name));
		break;
	}
	bpf_iter_task_vma_destroy(&it);
	if (!found.inode) {
		/* Only runtimes already known: nothing to attach, but a process user space has not
		 * looked at yet is worth a look (its Python layout; a late dlopen is out of the exec
		 * hint's reach). Until the look tracks it, every dlopen of it says so again. */
		if (known && !gw_is_tracked(tgid))
			gw_emit_lib_hint(bpf_get_current_pid_tgid(), 0, 0, NULL);
		return 0;
	}
	/* The record first: a process is never stopped without user space being told to continue
	 * it. No room: not held; a later scan finds the file (and counts the process as late). */
	rec = gw_reserve_lifecycle(sizeof(*rec));
	if (!rec)
		return 0;
	gw_fill_header(&rec->hdr, GW_EV_LIB_MAP, sizeof(*rec), bpf_ktime_get_ns(), tgid, task->pid);
	rec->inode = found.inode;
	rec->dev = found.dev;
	rec->pad = 0;
	__builtin_memcpy(rec->name, found_name, GW_LIB_NAME_LEN);
	/*
	 * A debugger's tracee is not stopped behind its back (the debugger would see our SIGSTOP),
	 * nor is a process with a controlling terminal: its shell's job control would see it stop,
	 * report it "Stopped" and take the terminal back, leaving it in the background once we
	 * continue it. Those are told about without a hold (counted not_held).
	 */
	flags = GW_LIB_NOT_HELD;
	if (gw_hold_new_libs && !task->ptrace && !BPF_CORE_READ(task, signal, tty)) {
		/* Listed before it is stopped (a full list: not held), unlisted if the stop failed. */
		__u64 now = bpf_ktime_get_ns();

		if (bpf_map_update_elem(&gw_held_pids, &tgid, &now, BPF_ANY) == 0) {
			if (bpf_send_signal_thread(GW_SIGSTOP) == 0)
				flags = GW_LIB_HELD;
			else
				bpf_map_delete_elem(&gw_held_pids, &tgid);
		}
	}
	rec->hdr.flags = flags;
	bpf_ringbuf_submit(rec, 0);
	return 0;
}

#endif /* GPUWHY_PROC_BPF_H */
