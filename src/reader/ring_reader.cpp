// SPDX-License-Identifier: Apache-2.0
#include "reader/ring_reader.hpp"

#include <bpf/libbpf.h>

#include <cerrno>
#include <chrono>

#include "gpuwhy/abi/events.h"
#include "reader/decode.hpp"

namespace gpuwhy::reader {

RingReader::RingReader(ClockConverter clock, BatchQueue& out, HintQueue& hints, Options opt)
    : clock_(clock), out_(out), hints_(hints), opt_(opt) {
  batch_.reserve(opt_.batch_max);
}

RingReader::~RingReader() {
  if (rb_) ring_buffer__free(rb_);
}

Status RingReader::open(int events_fd, int lifecycle_fd) {
  rb_ = ring_buffer__new(events_fd, &RingReader::on_record, this, nullptr);
  if (!rb_) return errno_error("cannot map the event ring buffer", errno);
  if (ring_buffer__add(rb_, lifecycle_fd, &RingReader::on_record, this) != 0)
    return errno_error("cannot map the lifecycle ring buffer", errno);
  return {};
}

int RingReader::on_record(void* ctx, void* data, size_t size) {
  static_cast<RingReader*>(ctx)->handle(data, size);
  return 0;
}

void RingReader::handle(const void* data, size_t size) {
  uint16_t kind = 0;
  if (size >= sizeof(gw_event_header))
    std::memcpy(&kind, static_cast<const char*>(data) + offsetof(gw_event_header, kind), 2);
  if (kind == GW_EV_LAUNCH_BATCH) return handle_launches(data, size);
  Event ev;
  if (decode_record(data, size, clock_, ev) != DecodeStatus::Ok) {
    stats_.decode_errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (kind < stats_.by_kind.size()) stats_.by_kind[kind].fetch_add(1, std::memory_order_relaxed);
  stats_.total.fetch_add(1, std::memory_order_relaxed);
  add(std::move(ev));
}

// A batch of launches counts as that many API calls (and one launch_batch record).
void RingReader::handle_launches(const void* data, size_t size) {
  launches_.clear();
  if (decode_launch_batch(data, size, clock_, launches_) != DecodeStatus::Ok) {
    stats_.decode_errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  stats_.by_kind[GW_EV_LAUNCH_BATCH].fetch_add(1, std::memory_order_relaxed);
  stats_.by_kind[GW_EV_API_CALL].fetch_add(launches_.size(), std::memory_order_relaxed);
  stats_.total.fetch_add(launches_.size(), std::memory_order_relaxed);
  for (Event& ev : launches_) add(std::move(ev));
}

void RingReader::inject(const void* data, size_t size) {
  handle(data, size);
  flush();
}

void RingReader::add(Event ev) {
  if (opt_.on_stack) {
    if (const auto* c = std::get_if<ApiCall>(&ev); c && c->stack_id >= 0)
      opt_.on_stack(c->pid, c->stack_id);
    else if (const auto* s = std::get_if<CpuSample>(&ev); s && s->stack_id >= 0)
      opt_.on_stack(s->pid, s->stack_id);
  }
  if (opt_.on_python_stack) {
    if (auto* c = std::get_if<ApiCall>(&ev); c && c->py_key)
      c->py_stack_id = opt_.on_python_stack(c->pid, c->py_key);
    else if (auto* s = std::get_if<CpuSample>(&ev); s && s->py_key)
      s->py_stack_id = opt_.on_python_stack(s->pid, s->py_key);
  }
  if (const auto* m = std::get_if<LibMapped>(&ev)) {
    const bool urgent = (m->flags & (GW_LIB_HELD | GW_LIB_NOT_HELD)) != 0;
    hints_.push(std::move(ev), urgent);  // discovery only; not stored
    return;
  }
  // An exec anywhere (a process that may load a GPU runtime), and a new process forked by a
  // traced one (a data-loader worker: its Python is looked at though it maps no runtime).
  if (const auto* p = std::get_if<ProcEvent>(&ev);
      p && (p->kind == ProcEventKind::Exec || p->kind == ProcEventKind::Fork))
    hints_.push(ev);
  batch_.push_back(std::move(ev));
  if (batch_.size() >= opt_.batch_max) flush();
}

void RingReader::flush() {
  if (batch_.empty()) return;
  if (opt_.on_batch) opt_.on_batch(batch_);
  Batch b;
  b.reserve(opt_.batch_max);
  b.swap(batch_);
  out_.push(std::move(b));
}

void RingReader::run(const std::atomic<bool>& stop) {
  using Clock = std::chrono::steady_clock;
  auto last_flush = Clock::now();
  while (!stop.load(std::memory_order_relaxed)) {
    // Wakeups are batched in the kernel: poll returns on a forced wakeup (ring filling up) or
    // after poll_ms; either way consume everything that is there.
    ring_buffer__poll(rb_, opt_.poll_ms);
    ring_buffer__consume(rb_);
    if (Clock::now() - last_flush >= std::chrono::milliseconds(opt_.flush_ms)) {
      flush();
      last_flush = Clock::now();
    }
  }
  drain();
}

void RingReader::drain() {
  while (ring_buffer__consume(rb_) > 0) {
  }
  flush();
}

}  // namespace gpuwhy::reader
