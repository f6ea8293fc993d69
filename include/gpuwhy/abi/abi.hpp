// SPDX-License-Identifier: Apache-2.0
// C++ companion of events.h: the layout the BPF programs write is the layout we read. Any change
// to events.h that moves a field breaks the build here, not a trace in the field.
#pragma once

#include <cstddef>

#include "gpuwhy/abi/events.h"

static_assert(GW_ABI_VERSION == 10);
static_assert(sizeof(gw_event_header) == 24);
static_assert(offsetof(gw_event_header, kind) == 16);
static_assert(offsetof(gw_event_header, size) == 18);
static_assert(offsetof(gw_event_header, flags) == 22);
static_assert(sizeof(gw_arg_slot) == 4);
static_assert(sizeof(gw_api_spec) == 40);
static_assert(offsetof(gw_api_spec, out_reg) == 32);
static_assert(offsetof(gw_api_spec, launch) == 34);
static_assert(offsetof(gw_api_spec, entry_only) == 35);
static_assert(offsetof(gw_api_spec, span_len) == 39);
static_assert(sizeof(gw_api_call) == 128);
static_assert(offsetof(gw_api_call, py_stack) == 120);
static_assert(offsetof(gw_api_call, duration_ns) == 24);
static_assert(offsetof(gw_api_call, args) == 32);
static_assert(offsetof(gw_api_call, ret) == 96);
static_assert(offsetof(gw_api_call, out) == 104);
static_assert(offsetof(gw_api_call, api) == 112);
static_assert(offsetof(gw_api_call, stack_id) == 116);
static_assert(sizeof(gw_offcpu) == 144);
static_assert(offsetof(gw_offcpu, arg0) == 136);
static_assert(offsetof(gw_offcpu, wait_cpu) == 128);
static_assert(offsetof(gw_offcpu, cpus_allowed) == 132);
static_assert(offsetof(gw_offcpu, syscall) == 98);
static_assert(offsetof(gw_offcpu, holder_pid) == 104);
static_assert(offsetof(gw_offcpu, prev_state) == 40);
static_assert(offsetof(gw_offcpu, next_comm) == 64);
static_assert(offsetof(gw_offcpu, preempted) == 96);
static_assert(sizeof(gw_proc_exec) == 24 + 8 + 16 + 128);
static_assert(sizeof(gw_proc_fork) == 24 + 8 + 16);
static_assert(sizeof(gw_proc_exit) == 24 + 8 + 16);
static_assert(sizeof(gw_lib_map) == 24 + 16 + 32);
static_assert(sizeof(gw_syscall) == 24 + 32);
static_assert(sizeof(gw_block_io) == 24 + 32);
static_assert(sizeof(gw_tcp_retrans) == 24 + 40);
static_assert(sizeof(gw_reclaim) == 24 + 16);
static_assert(sizeof(gw_cpu_sample) == 24 + 40);
static_assert(offsetof(gw_cpu_sample, min_flt) == 48);
static_assert(offsetof(gw_offcpu, throttled) == 97);
static_assert(offsetof(gw_cpu_sample, py_stack) == 40);
static_assert(offsetof(gw_cpu_sample, syscall) == 32);
static_assert(offsetof(gw_cpu_sample, stack_id) == 36);
static_assert(sizeof(gw_config) == 96);
static_assert(offsetof(gw_config, launch_read_mask) == 32);
// Counter ids are stored by name in traces (losses, event_counts); user space sums them into
// std::array<uint64_t, GW_CNT__MAX> (probes::Probes::read_counters, cli::TraceCounts).
static_assert(GW_CNT_ENTRY_UNMATCHED == 7);
static_assert(GW_CNT_PY_STACK_FAIL == 8);
static_assert(GW_CNT_LAUNCH_NESTED_SKIPPED == 9);
static_assert(GW_CNT__MAX == 10);
static_assert(sizeof(gw_launch_item) == 32);
static_assert(offsetof(gw_launch_item, stack_id) == 24);
static_assert(offsetof(gw_launch_item, start) == 8);
static_assert(offsetof(gw_launch_item, api) == 16);
static_assert(offsetof(gw_launch_item, flags) == 20);
// bpf/api.bpf.h writes an item as four u64 words: api and lib are the attach cookie's low half.
static_assert(offsetof(gw_launch_item, lib) == 18);
static_assert(GW_COOKIE(0x1234, 0x5678) == 0x56781234);
static_assert(offsetof(gw_launch_batch, n) == 24);
static_assert(offsetof(gw_launch_batch, items) == 32);
static_assert(sizeof(gw_launch_batch) == 32 + 32 * GW_LAUNCH_BATCH);
static_assert(offsetof(gw_config, sample_period_ns) == 40);
static_assert(sizeof(gw_cpu_run) == 24 + 8 + 16);
static_assert(offsetof(gw_cpu_run, comm) == 32);
static_assert(sizeof(gw_wait_migrate) == 24 + 8);
static_assert(sizeof(gw_task_rename) == 24 + 16);
static_assert(sizeof(gw_py_layout) == 40);
static_assert(offsetof(gw_py_layout, id_is_fsbase) == 32);
static_assert(offsetof(gw_py_layout, frame_tlbc) == 36);
static_assert(offsetof(gw_py_layout, code_tlbc) == 38);
static_assert(sizeof(gw_py_frame) == 16);
static_assert(sizeof(gw_py_stack) == 8 + 16 * GW_PY_MAX_FRAMES);
