// SPDX-License-Identifier: Apache-2.0
// Everything `trace --metrics` adds to a trace, behind one object: the registry, the reader
// thread's per-batch update and the HTTP endpoint. trace_session.cpp holds one when asked for.
#pragma once

#include <memory>

#include "metrics/event_metrics.hpp"
#include "metrics/http_server.hpp"
#include "metrics/listen_address.hpp"
#include "metrics/registry.hpp"

namespace gpuwhy::metrics {

class LiveMetrics {
 public:
  // Listens at `where` and serves at once; an Error (one line) when the address cannot be had.
  static Result<std::unique_ptr<LiveMetrics>> start(const ListenAddress& where);

  // Reader thread, once per batch.
  void observe(const std::vector<Event>& batch) { events_.observe(batch); }
  // Main thread: a probed process's name while it lives (EventMetrics::remember_name).
  void remember_name(uint32_t pid, std::string name) {
    events_.remember_name(pid, std::move(name));
  }
  // Main loop, about once a second.
  void set_totals(Registry::Totals t) { registry_.set_totals(std::move(t)); }
  uint16_t port() const { return server_->port(); }

 private:
  LiveMetrics() : events_(registry_) {}
  Registry registry_;
  EventMetrics events_;
  std::unique_ptr<HttpServer> server_;  // last: stopped before what it reads goes
};

}  // namespace gpuwhy::metrics
