// SPDX-License-Identifier: Apache-2.0
#include "reader/decode.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "gpuwhy/abi/abi.hpp"

namespace gpuwhy::reader {
namespace {

template <class T>
bool load(const void* data, size_t size, T& out) {
  if (size < sizeof(T)) return false;
  std::memcpy(&out, data, sizeof(T));
  return true;
}

Comm to_comm(const char (&c)[GW_COMM_LEN]) {
  Comm out{};
  std::memcpy(out.data(), c, GW_COMM_LEN);
  out[GW_COMM_LEN - 1] = '\0';
  return out;
}

std::string bounded_string(const char* s, size_t cap) {
  return std::string(s, strnlen(s, cap));
}

std::string format_addr(uint16_t family, const uint8_t (&a)[16]) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (family == AF_INET) inet_ntop(AF_INET, a, buf, sizeof(buf));
  else if (family == AF_INET6) inet_ntop(AF_INET6, a, buf, sizeof(buf));  // else unknown: NULL
  return buf;
}

}  // namespace

std::string_view kind_name(uint16_t kind) {
  switch (kind) {
    case GW_EV_API_CALL: return "api_call";
    case GW_EV_OFFCPU: return "offcpu";
    case GW_EV_PROC_EXEC: return "exec";
    case GW_EV_PROC_FORK: return "fork";
    case GW_EV_PROC_EXIT: return "exit";
    case GW_EV_SYSCALL: return "syscall";
    case GW_EV_BLOCK_IO: return "block_io";
    case GW_EV_TCP_RETRANS: return "tcp_retrans";
    case GW_EV_RECLAIM: return "reclaim";
    case GW_EV_LIB_MAP: return "lib_map";
    case GW_EV_CPU_SAMPLE: return "cpu_sample";
    case GW_EV_LAUNCH_BATCH: return "launch_batch";
    case GW_EV_CPU_RUN: return "cpu_run";
    case GW_EV_WAIT_MIGRATE: return "wait_migrate";
    case GW_EV_TASK_RENAME: return "task_rename";
  }
  return "unknown";
}

DecodeStatus decode_launch_batch(const void* data, size_t size, const ClockConverter& clock,
                                 std::vector<Event>& out) {
  gw_launch_batch b{};
  constexpr size_t kHead = offsetof(gw_launch_batch, items);
  if (size < kHead) return DecodeStatus::TooShort;
  std::memcpy(&b, data, std::min(size, sizeof(b)));
  if (b.hdr.kind != GW_EV_LAUNCH_BATCH) return DecodeStatus::UnknownKind;
  if (b.n > GW_LAUNCH_BATCH || b.hdr.size != kHead + b.n * sizeof(gw_launch_item) ||
      b.hdr.size > size)
    return DecodeStatus::SizeMismatch;
  for (uint32_t i = 0; i < b.n; ++i) {
    const gw_launch_item& it = b.items[i];
    ApiCall e;
    e.ts = clock.to_wall(b.hdr.ts_ns + static_cast<uint64_t>(static_cast<int64_t>(it.start)));
    e.dur = it.duration_ns;
    e.pid = b.hdr.pid;
    e.tid = b.hdr.tid;
    e.api = it.api;
    e.lib = it.lib;
    e.flags = static_cast<uint16_t>(it.flags | GW_FLAG_COMPACT | GW_FLAG_ARGS_SAMPLED_OUT);
    e.stack_id = it.stack_id;
    const uint64_t args[8] = {it.func};
    if (const ApiInfo* info = find_api(it.api)) e.f = decode_api_args(*info, args, 0);
    out.emplace_back(std::move(e));
  }
  return DecodeStatus::Ok;
}

DecodeStatus decode_record(const void* data, size_t size, const ClockConverter& clock, Event& out) {
  gw_event_header h{};
  if (!load(data, size, h)) return DecodeStatus::TooShort;
  if (h.size > size) return DecodeStatus::SizeMismatch;
  const int64_t ts = clock.to_wall(h.ts_ns);

  switch (h.kind) {
    case GW_EV_API_CALL: {
      gw_api_call r{};
      if (!load(data, size, r)) return DecodeStatus::TooShort;
      ApiCall e;
      e.ts = ts;
      e.dur = static_cast<int64_t>(r.duration_ns);
      e.pid = h.pid;
      e.tid = h.tid;
      e.api = r.api;
      e.lib = r.lib;
      e.ret = static_cast<int32_t>(r.ret);  // every GPU runtime returns a 32-bit enum
      e.stack_id = r.stack_id;
      e.py_key = r.py_stack;
      e.flags = h.flags;
      uint64_t args[8];
      for (int i = 0; i < 8; ++i) args[i] = r.args[i];
      if (const ApiInfo* info = find_api(r.api)) e.f = decode_api_args(*info, args, r.out);
      out = std::move(e);
      return DecodeStatus::Ok;
    }
    case GW_EV_OFFCPU: {
      gw_offcpu r{};
      if (!load(data, size, r)) return DecodeStatus::TooShort;
      OffCpu e;
      e.ts = ts;
      e.dur = static_cast<int64_t>(r.duration_ns);
      e.runq = static_cast<int64_t>(r.runq_ns);
      e.pid = h.pid;
      e.tid = h.tid;
      e.cpu = h.cpu;
      e.preempted = r.preempted != 0;
      e.prev_state = r.prev_state;
      e.next_pid = r.next_pid;
      e.next_tid = r.next_tid;
      e.next_comm = to_comm(r.next_comm);
      e.waker_pid = r.waker_pid;
      e.waker_tid = r.waker_tid;
      e.waker_comm = to_comm(r.waker_comm);
      e.holder_pid = r.holder_pid;
      e.holder_tid = r.holder_tid;
      e.holder_comm = to_comm(r.holder_comm);
      e.syscall = r.syscall;
      e.wait_cpu = r.wait_cpu == GW_NO_CPU ? -1 : r.wait_cpu;
      e.migrations = r.migrations;
      e.cpus_allowed = r.cpus_allowed;
      e.throttled = r.throttled != 0;
      e.arg0 = r.arg0;
      out = std::move(e);
      return DecodeStatus::Ok;
    }
    case GW_EV_PROC_EXEC: {
      gw_proc_exec r{};
      if (!load(data, size, r)) return DecodeStatus::TooShort;
      ProcEvent e;
      e.ts = ts;
      e.kind = ProcEventKind::Exec;
      e.pid = h.pid;
      e.tid = h.tid;
      e.other_pid = r.ppid;
      e.comm = to_comm(r.comm);
      e.filename = bounded_string(r.filename, sizeof(r.filename));
      out = std::move(e);
      return DecodeStatus::Ok;
    }
    case GW_EV_PROC_FORK: {
      gw_proc_fork r{};
      if (!load(data, size, r)) return DecodeStatus::TooShort;
      ProcEvent e;
      e.ts = ts;
      e.kind = r.child_pid == h.pid ? ProcEventKind::Thread : ProcEventKind::Fork;
      e.pid = h.pid;
      e.tid = h.tid;
      e.other_pid = r.child_pid;
      e.other_tid = r.child_tid;
      e.comm = to_comm(r.child_comm);
      out = std::move(e);
      return DecodeStatus::Ok;
    }
    case GW_EV_PROC_EXIT: {
      gw_proc_exit r{};
      if (!load(data, size, r)) return DecodeStatus::TooShort;
      ProcEvent e;
      e.ts = ts;
      e.kind = r.group_dead ? ProcEventKind::Exit : ProcEventKind::ThreadExit;
      e.pid = h.pid;
      e.tid = h.tid;
      e.exit_code = r.exit_code;
      e.comm = to_comm(r.comm);
      out = std::move(e);
      return DecodeStatus::Ok;
    }
    case GW_EV_SYSCALL: {
      gw_syscall r{};
      if (!load(data, size, r)) return DecodeStatus::TooShort;
      out =
          SyscallEvent{ts,     static_cast<int64_t>(r.duration_ns),   h.pid,    h.tid, r.nr, r.ret,
                       r.arg0, (h.flags & GW_FLAG_DRIVER_IOCTL) != 0, r.request};
      return DecodeStatus::Ok;
    }
    case GW_EV_BLOCK_IO: {
      gw_block_io r{};
      if (!load(data, size, r)) return DecodeStatus::TooShort;
      out = BlockIo{ts, static_cast<int64_t>(r.duration_ns), h.pid, h.tid, r.dev, r.sector, r.bytes,
                    r.op, r.error};
      return DecodeStatus::Ok;
    }
    case GW_EV_TCP_RETRANS: {
      gw_tcp_retrans r{};
      if (!load(data, size, r)) return DecodeStatus::TooShort;
      TcpRetrans e;
      e.ts = ts;
      e.pid = h.pid;
      e.tid = h.tid;
      e.family = r.family;
      e.saddr = format_addr(r.family, r.saddr);
      e.daddr = format_addr(r.family, r.daddr);
      e.sport = r.sport;
      e.dport = r.dport;
      e.state = r.state;
      out = std::move(e);
      return DecodeStatus::Ok;
    }
    case GW_EV_CPU_SAMPLE: {
      gw_cpu_sample r{};
      if (!load(data, size, r)) return DecodeStatus::TooShort;
      out = CpuSample{ts,
                      static_cast<int64_t>(r.period_ns),
                      h.pid,
                      h.tid,
                      h.cpu,
                      r.syscall,
                      r.kernel != 0,
                      r.stack_id,
                      r.py_stack};
      std::get<CpuSample>(out).min_flt = r.min_flt;
      std::get<CpuSample>(out).maj_flt = r.maj_flt;
      return DecodeStatus::Ok;
    }
    case GW_EV_RECLAIM: {
      gw_reclaim r{};
      if (!load(data, size, r)) return DecodeStatus::TooShort;
      out = Reclaim{ts, static_cast<int64_t>(r.duration_ns), h.pid, h.tid, r.nr_reclaimed};
      return DecodeStatus::Ok;
    }
    case GW_EV_CPU_RUN: {
      gw_cpu_run r{};
      if (!load(data, size, r)) return DecodeStatus::TooShort;
      out = CpuRun{ts, static_cast<int64_t>(r.duration_ns), h.cpu, h.pid, h.tid, to_comm(r.comm)};
      return DecodeStatus::Ok;
    }
    case GW_EV_WAIT_MIGRATE: {
      gw_wait_migrate r{};
      if (!load(data, size, r)) return DecodeStatus::TooShort;
      out = WaitMigrate{ts, h.pid, h.tid, r.from_cpu, r.to_cpu};
      return DecodeStatus::Ok;
    }
    case GW_EV_TASK_RENAME: {
      gw_task_rename r{};
      if (!load(data, size, r)) return DecodeStatus::TooShort;
      out = TaskRename{ts, h.pid, h.tid, to_comm(r.comm)};
      return DecodeStatus::Ok;
    }
    case GW_EV_LIB_MAP: {
      gw_lib_map r{};
      if (!load(data, size, r)) return DecodeStatus::TooShort;
      out = LibMapped{ts, h.pid, r.inode, r.dev, bounded_string(r.name, sizeof(r.name)),
                      h.flags};
      return DecodeStatus::Ok;
    }
  }
  return DecodeStatus::UnknownKind;
}

}  // namespace gpuwhy::reader
