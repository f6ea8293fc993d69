// SPDX-License-Identifier: GPL-2.0-only
/*
 * Benchmark only: writes synthetic GPU API call records into a running gpuwhy agent's event ring
 * (user space hands this object the agent's ring fd), so that the agent's reader and store can be
 * driven at rates no traced process on this machine can produce. Each record is what the real
 * return probe writes (same layout, same wake-up rule); run with BPF_PROG_TEST_RUN.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "gpuwhy/abi/events.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* replaced: user space reuses the agent's ring */
} gw_events SEC(".maps");

struct synth_args {
	__u32 count;        /* records to write in this run */
	__u32 pid;
	__u32 tid;
	__u32 api;
	__u32 wakeup_bytes; /* the agent's wake-up mark (its ring size / 4) */
	__u32 pad;
	__u64 written;      /* out */
	__u64 dropped;      /* out: the ring was full */
};

static long write_one(__u64 i, struct synth_args *a)
{
	struct gw_api_call *r = bpf_ringbuf_reserve(&gw_events, sizeof(*r), 0);
	__u64 flags = BPF_RB_NO_WAKEUP, avail;

	if (!r) {
		a->dropped++;
		return 0;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->hdr.ts_ns = bpf_ktime_get_ns() - 3000;
	r->hdr.pid = a->pid;
	r->hdr.tid = a->tid;
	r->hdr.kind = GW_EV_API_CALL;
	r->hdr.size = sizeof(*r);
	r->hdr.cpu = (__u16)bpf_get_smp_processor_id();
	r->duration_ns = 2000 + (i & 1023);
	r->args[0] = 0x7f0000001000ull + (i & 7) * 64; /* kernel function pointer */
	r->args[5] = 0x5; /* stream */
	r->api = a->api;
	r->stack_id = -1;
	/* gw_submit_event_strided as the API records use it: a look on one record in 8, the mark's
	 * window 8 records wide. */
	if ((i & 7) == 0) {
		avail = bpf_ringbuf_query(&gw_events, BPF_RB_AVAIL_DATA);
		if (avail >= a->wakeup_bytes && avail < (__u64)a->wakeup_bytes + 16 * sizeof(*r))
			flags = BPF_RB_FORCE_WAKEUP;
	}
	bpf_ringbuf_submit(r, flags);
	a->written++;
	return 0;
}

SEC("syscall")
int synth_write(struct synth_args *ctx)
{
	/* Read on its own: taken from the copy below, clang passed the 64-bit word holding count
	 * and pid, and bpf_loop refused that many iterations (-E2BIG). */
	__u32 count = ctx->count;
	struct synth_args a = *ctx; /* bpf_loop's context must live on the stack */

	a.written = 0;
	a.dropped = 0;
	bpf_loop(count, write_one, &a, 0);
	ctx->written = a.written;
	ctx->dropped = a.dropped;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
