// SPDX-License-Identifier: Apache-2.0
// The metrics endpoint's HTTP/1.1 server: one thread ("gpuwhy-metrics") polling the listening
// socket and up to kMaxClients connections at once, each answered once and closed. A client that
// has not sent its request, or not taken its response, within kClientTimeout is dropped. It
// shares nothing with the ring reader but the registry's atomics, so a slow or hostile scraper
// can never hold the reader back.
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
  static constexpr size_t kMaxClients = 16;
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
