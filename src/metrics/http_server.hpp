// SPDX-License-Identifier: Apache-2.0
// The metrics endpoint's HTTP/1.1 server: one thread ("gpuwhy-metrics") polling the listening
// socket and up to kMaxClients connections at once, each answered once and closed. A client that
// has not sent its request within kClientTimeout of connecting, or not taken its response within
// another, is dropped; when every slot is taken, a new connection takes the slot of the oldest
// client that has not sent a whole request, so local users holding connections open (200 of
// them made every scrape fail) cannot keep a scrape waiting. A request already there when the
// connection is accepted is answered at once. It shares nothing with the ring reader but the
// registry's atomics, so a slow or hostile scraper can never hold the reader back.
// (libmicrohttpd's Debian static library is built with GnuTLS: a TLS stack in the static binary
// for a plain-text loopback endpoint; this server is kept instead.)
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/result.hpp"
#include "metrics/exposition.hpp"
#include "metrics/listen_address.hpp"

namespace gpuwhy::metrics {

class HttpServer {
 public:
  static constexpr size_t kMaxClients = 64;
  static constexpr std::chrono::seconds kClientTimeout{5};
  using Render = std::function<std::string(Format)>;

  // Binds and listens (the caller can refuse to start on failure), without serving yet.
  static Result<std::unique_ptr<HttpServer>> listen(
      const ListenAddress& where, Render render,
      std::chrono::milliseconds client_timeout = kClientTimeout);
  ~HttpServer();  // stops serving and closes every socket

  void start();  // serves on a thread of its own until destroyed
  uint16_t port() const { return port_; }

 private:
  HttpServer(int listen_fd, uint16_t port, Render render, std::chrono::milliseconds timeout);
  void serve();

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // a pipe: the destructor's byte ends poll()
  uint16_t port_ = 0;
  Render render_;
  std::chrono::milliseconds timeout_;
  std::thread thread_;
};

}  // namespace gpuwhy::metrics
