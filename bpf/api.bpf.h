/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * GPU API calls (CUDA runtime, CUDA driver, NCCL, HIP): one generic entry program and one generic
 * return program serve every probed function. The attach cookie names the API and the library; the
 * API's spec (gw_api_specs, filled by user space from the catalogue) says which argument words to
 * capture. Entry and return are paired per (thread, api) and emitted as one record at return.
 */
#ifndef GPUWHY_API_BPF_H
#define GPUWHY_API_BPF_H

#include "gpuwhy.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GW_MAX_API);
	__type(key, __u32);
	__type(value, struct gw_api_spec);
} gw_api_specs SEC(".maps");

struct gw_pending_call {
	__u64 ts;
	__u64 args[8];
	__u64 out_ptr;
	__s32 stack_id;
	__u16 flags;
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64); /* tid << 32 | api */
	__type(value, struct gw_pending_call);
} gw_pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 1); /* resized by user space when stacks are on */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 127 * sizeof(__u64));
} gw_stacks SEC(".maps");

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

static __always_inline int gw_read_user_u64(__u64 *dst, __u64 addr)
{
	if (bpf_probe_read_user(dst, sizeof(*dst), (void *)addr)) {
		*dst = 0;
		gw_count(GW_CNT_READ_FAULT);
		return -1;
	}
	return 0;
}

static __always_inline int gw_api_entry_impl(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 api = GW_COOKIE_API(cookie);
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct gw_pending_call p = {};
	struct gw_api_spec *spec;
	__u64 regs[8];
	__u64 key;
	int i;

	if (tgid == gw_cfg.self_pid)
		return 0;
	if (!bpf_map_lookup_elem(&gw_tracked, &tgid)) {
		__u32 one = 1;

		if (gw_cfg.filter_pids)
			return 0;
		/* The first probed call of a process starts tracing its threads' scheduling too. */
		bpf_map_update_elem(&gw_tracked, &tgid, &one, BPF_NOEXIST);
	}
	spec = bpf_map_lookup_elem(&gw_api_specs, &api);
	if (!spec || !spec->enabled)
		return 0;

	p.ts = bpf_ktime_get_ns();
	gw_load_args(ctx, regs);
	for (i = 0; i < 8; i++) {
		struct gw_arg_slot s = spec->args[i];

		if (s.src == GW_ARG_REG) {
			p.args[i] = regs[s.index & 7];
		} else if (s.src == GW_ARG_STACK) {
			if (gw_read_user_u64(&p.args[i], PT_REGS_SP(ctx) + 8 * (__u64)s.index))
				p.flags |= GW_FLAG_READ_FAULT;
		} else if (s.src == GW_ARG_DEREF) {
			__u64 base = regs[s.index & 7];

			if (base && gw_read_user_u64(&p.args[i], base + s.offset))
				p.flags |= GW_FLAG_READ_FAULT;
		}
	}
	if (spec->out_reg >= 0 && spec->out_reg < 6)
		p.out_ptr = regs[spec->out_reg & 7];
	p.stack_id = -1;
	if (gw_cfg.capture_stacks) {
		p.stack_id = bpf_get_stackid(ctx, &gw_stacks, BPF_F_USER_STACK);
		if (p.stack_id < 0)
			gw_count(GW_CNT_STACK_FAIL);
	}

	key = ((__u64)tid << 32) | api;
	if (bpf_map_update_elem(&gw_pending, &key, &p, BPF_ANY))
		gw_count(GW_CNT_PENDING_FULL);
	return 0;
}

static __always_inline int gw_api_return_impl(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 api = GW_COOKIE_API(cookie);
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	__u64 key = ((__u64)tid << 32) | api;
	struct gw_pending_call *p;
	struct gw_api_call *rec;
	__u64 now = bpf_ktime_get_ns();

	p = bpf_map_lookup_elem(&gw_pending, &key);
	if (!p) {
		gw_count(GW_CNT_RETURN_UNMATCHED);
		return 0;
	}
	rec = gw_reserve_event(sizeof(*rec));
	if (!rec) {
		bpf_map_delete_elem(&gw_pending, &key);
		return 0;
	}
	gw_fill_header(&rec->hdr, GW_EV_API_CALL, sizeof(*rec), p->ts, pid_tgid >> 32, tid);
	rec->hdr.flags = p->flags;
	rec->duration_ns = now - p->ts;
	__builtin_memcpy(rec->args, p->args, sizeof(rec->args));
	rec->ret = PT_REGS_RC(ctx);
	rec->out = 0;
	/* Only read the out-pointer of a successful call: on failure it may hold garbage. */
	if (p->out_ptr && (__u32)rec->ret == 0 &&
	    gw_read_user_u64(&rec->out, p->out_ptr))
		rec->hdr.flags |= GW_FLAG_READ_FAULT;
	rec->api = api;
	rec->lib = GW_COOKIE_LIB(cookie);
	rec->stack_id = p->stack_id;
	bpf_map_delete_elem(&gw_pending, &key);
	gw_submit_event(rec, sizeof(*rec));
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
	return gw_api_entry_impl(ctx);
}

SEC("uretprobe")
int gw_api_return(struct pt_regs *ctx)
{
	return gw_api_return_impl(ctx);
}

SEC("uprobe")
int gw_api_entry_multi(struct pt_regs *ctx)
{
	return gw_api_entry_impl(ctx);
}

SEC("uprobe")
int gw_api_return_multi(struct pt_regs *ctx)
{
	return gw_api_return_impl(ctx);
}

#endif /* GPUWHY_API_BPF_H */
