/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What else the host did to traced threads: slow syscalls, block I/O they issued, direct reclaim
 * stalls; and TCP retransmissions host-wide (they happen in softirq context, not in the thread).
 */
#ifndef GPUWHY_HOST_BPF_H
#define GPUWHY_HOST_BPF_H

#include "gpuwhy.bpf.h"
#include "proc.bpf.h"

/*
 * A traced thread's system call in progress, in task-local storage. sys_exit runs for every
 * system call on the host, and for every traced API call too (a uretprobe returns through the
 * uretprobe syscall): a lookup here costs no hash, and a thread with no storage (any untraced
 * thread) is answered at once, without a gw_tracked lookup.
 */
struct gw_sys_open {
	__u64 ts;
	__u64 arg0;
	__u32 nr;
	__u32 open; /* 1 from a recorded sys_enter to its sys_exit */
	__u32 request; /* an ioctl's request */
	__u32 driver;  /* 1: an ioctl on a GPU driver's device file (gw_is_driver_file) */
};

/* Does the component `name` (a kernel dentry name, NUL-terminated) begin with `prefix`
 * (NUL-padded to 16; all of it when `whole`)? */
static __always_inline bool gw_name_matches(const unsigned char *name, const volatile char *prefix,
					    bool whole)
{
	char buf[16];

	if (bpf_probe_read_kernel_str(buf, sizeof(buf), name) < 0)
		return false;
#pragma unroll
	for (int i = 0; i < 16; i++) {
		if (prefix[i] == 0)
			return !whole || buf[i] == 0;
		if (buf[i] != prefix[i])
			return false;
	}
	return !whole;
}

/*
 * Is the calling thread's descriptor `fd` a GPU driver's device file: a file named
 * gw_cfg.driver_name* in a directory named gw_cfg.driver_dir (/dev/nvidiactl, /dev/nvidia0,
 * /dev/nvidia-uvm)? Read from the task's own file table, so a descriptor opened before the trace
 * began, dup()ed or inherited is known too, and no open/close needs tracking. Only the
 * component names are compared (a bind-mounted /dev in a container still reads "dev").
 */
static __always_inline bool gw_is_driver_file(__u64 fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds;
	struct file *f = NULL;
	struct dentry *d;

	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return false;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return false;
	d = BPF_CORE_READ(f, f_path.dentry);
	if (!d || !gw_name_matches(BPF_CORE_READ(d, d_name.name), gw_cfg.driver_name, false))
		return false;
	return gw_name_matches(BPF_CORE_READ(d, d_parent, d_name.name), gw_cfg.driver_dir, true);
}

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct gw_sys_open);
} gw_sys_open SEC(".maps");

SEC("tp_btf/sys_enter")
int BPF_PROG(gw_sys_enter, struct pt_regs *regs, long id)
{
	struct gw_sys_open *o;
	bool driver;

	if (id == 9 /* mmap */)
		gw_check_lib_mmap(regs);
	/* Since Linux 6.11 every probed function's return goes through the uretprobe syscall (335;
	 * 336 is uprobe): counting those would cost ~0.45 us per traced GPU call for nothing. */
	if (id == 335 || id == 336)
		return 0;
	/* Attached for the driver's ioctls alone: every other syscall of the host leaves here,
	 * before the tracked-process lookup. */
	if (!gw_cfg.syscalls && id != 16 /* ioctl */)
		return 0;
	if (!gw_is_tracked(bpf_get_current_pid_tgid() >> 32))
		return 0;
	driver = id == 16 && gw_cfg.driver_ioctls && gw_is_driver_file(regs->di);
	if (!gw_cfg.syscalls && !driver)
		return 0;
	o = bpf_task_storage_get(&gw_sys_open, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!o)
		return 0;
	o->ts = bpf_ktime_get_ns();
	o->nr = id;
	o->arg0 = regs->di; /* regs is a BTF pointer: a plain load, not a helper call */
	o->request = (__u32)regs->si;
	o->driver = driver;
	o->open = 1;
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(gw_sys_exit, struct pt_regs *regs, long ret)
{
	struct gw_sys_open *o;
	struct gw_syscall *rec;
	__u64 pid_tgid, now, dur;

	/* No open syscall: an untraced thread, or the uretprobe syscall of a probed call's return
	 * (sys_enter skipped it; its orig_ax reads -1 here, not 335). */
	o = bpf_task_storage_get(&gw_sys_open, bpf_get_current_task_btf(), 0, 0);
	if (!o || !o->open)
		return 0;
	o->open = 0;
	now = bpf_ktime_get_ns();
	dur = now - o->ts;
	/* A driver ioctl is kept whatever its length: the short ones are the driver boundary's
	 * volume (a copy or sync made through them), the long ones its waits. */
	if (!o->driver && dur < gw_cfg.min_syscall_ns)
		return 0;
	rec = gw_reserve_event(sizeof(*rec));
	if (!rec)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	gw_fill_header(&rec->hdr, GW_EV_SYSCALL, sizeof(*rec), o->ts, pid_tgid >> 32, (__u32)pid_tgid);
	rec->duration_ns = dur;
	rec->ret = ret;
	rec->arg0 = o->arg0;
	rec->nr = o->nr;
	rec->request = o->driver ? o->request : 0;
	if (o->driver)
		rec->hdr.flags = GW_FLAG_DRIVER_IOCTL;
	gw_submit_event(rec, sizeof(*rec));
	return 0;
}

struct gw_blk_open {
	__u64 ts;
	__u64 sector;
	__u32 pid;
	__u32 tid;
	__u32 bytes;
	__u32 dev;
	__u32 op;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* struct request * */
	__type(value, struct gw_blk_open);
} gw_blk_open SEC(".maps");

SEC("tp_btf/block_rq_issue")
int BPF_PROG(gw_block_issue, struct request *rq)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 key = (__u64)rq;
	struct gw_blk_open o = {};

	if (!gw_is_tracked(pid_tgid >> 32))
		return 0;
	o.ts = bpf_ktime_get_ns();
	o.sector = BPF_CORE_READ(rq, __sector);
	o.bytes = BPF_CORE_READ(rq, __data_len);
	o.op = BPF_CORE_READ(rq, cmd_flags) & 0xff;
	o.dev = BPF_CORE_READ(rq, part, bd_dev);
	o.pid = pid_tgid >> 32;
	o.tid = (__u32)pid_tgid;
	bpf_map_update_elem(&gw_blk_open, &key, &o, BPF_ANY);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(gw_block_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	struct gw_blk_open *o = bpf_map_lookup_elem(&gw_blk_open, &key);
	struct gw_block_io *rec;

	if (!o)
		return 0;
	rec = gw_reserve_event(sizeof(*rec));
	if (rec) {
		gw_fill_header(&rec->hdr, GW_EV_BLOCK_IO, sizeof(*rec), o->ts, o->pid, o->tid);
		rec->duration_ns = bpf_ktime_get_ns() - o->ts;
		rec->sector = o->sector;
		rec->bytes = o->bytes;
		rec->dev = o->dev;
		rec->op = o->op;
		rec->error = error;
		gw_submit_event(rec, sizeof(*rec));
	}
	bpf_map_delete_elem(&gw_blk_open, &key);
	return 0;
}

/*
 * Whose retransmission it is. TCP retransmits from the timer and from receive processing in
 * softirq context, where the current task is whatever the interrupt found running: no task of its
 * own. A task retransmits itself only while it owns the socket (lock_sock): the work the timer or
 * the receive path deferred to it runs at its release_sock, and softirq code never retransmits on
 * a socket a user owns (it defers instead). So: the current task when the socket is owned, else
 * none. (Reading the preempt count would need the __preempt_count symbol, which kernels without
 * CONFIG_KALLSYMS_ALL do not resolve for BPF.)
 */
static __always_inline __u64 gw_retransmit_owner(const struct sock *sk)
{
	return BPF_CORE_READ(sk, sk_lock.owned) ? bpf_get_current_pid_tgid() : 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(gw_tcp_retransmit, const struct sock *sk, const struct sk_buff *skb)
{
	__u64 pid_tgid = gw_retransmit_owner(sk);
	struct gw_tcp_retrans *rec = gw_reserve_event(sizeof(*rec));
	__u16 family;

	if (!rec)
		return 0;
	gw_fill_header(&rec->hdr, GW_EV_TCP_RETRANS, sizeof(*rec), bpf_ktime_get_ns(),
		       pid_tgid >> 32, (__u32)pid_tgid);
	__builtin_memset(rec->saddr, 0, sizeof(rec->saddr));
	__builtin_memset(rec->daddr, 0, sizeof(rec->daddr));
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	rec->family = family;
	rec->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	rec->dport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	rec->state = BPF_CORE_READ(sk, __sk_common.skc_state);
	rec->pad = 0;
	/* Whole addresses: BPF_CORE_READ_INTO into a byte array copies sizeof(element), one byte. */
	if (family == 2 /* AF_INET */) {
		bpf_core_read(rec->saddr, 4, &sk->__sk_common.skc_rcv_saddr);
		bpf_core_read(rec->daddr, 4, &sk->__sk_common.skc_daddr);
	} else {
		bpf_core_read(rec->saddr, 16, &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_core_read(rec->daddr, 16, &sk->__sk_common.skc_v6_daddr);
	}
	gw_submit_event(rec, sizeof(*rec));
	return 0;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, __u64);
} gw_reclaim_open SEC(".maps");

SEC("tp_btf/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(gw_reclaim_begin, int order)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	__u64 now = bpf_ktime_get_ns();

	if (gw_is_tracked(pid_tgid >> 32))
		bpf_map_update_elem(&gw_reclaim_open, &tid, &now, BPF_ANY);
	return 0;
}

SEC("tp_btf/mm_vmscan_direct_reclaim_end")
int BPF_PROG(gw_reclaim_end, unsigned long nr_reclaimed)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	__u64 *start = bpf_map_lookup_elem(&gw_reclaim_open, &tid);
	struct gw_reclaim *rec;

	if (!start)
		return 0;
	rec = gw_reserve_event(sizeof(*rec));
	if (rec) {
		gw_fill_header(&rec->hdr, GW_EV_RECLAIM, sizeof(*rec), *start, pid_tgid >> 32, tid);
		rec->duration_ns = bpf_ktime_get_ns() - *start;
		rec->nr_reclaimed = nr_reclaimed;
		gw_submit_event(rec, sizeof(*rec));
	}
	bpf_map_delete_elem(&gw_reclaim_open, &tid);
	return 0;
}

#endif /* GPUWHY_HOST_BPF_H */
