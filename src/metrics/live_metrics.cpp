// SPDX-License-Identifier: Apache-2.0
#include "metrics/live_metrics.hpp"

namespace gpuwhy::metrics {

Result<std::unique_ptr<LiveMetrics>> LiveMetrics::start(const ListenAddress& where) {
  std::unique_ptr<LiveMetrics> m(new LiveMetrics());
  const Registry* reg = &m->registry_;
  auto server = HttpServer::listen(where, [reg](Format f) {
    std::string out;
    write_exposition(out, reg->collect(), f);
    return out;
  });
  if (!server) return server.error();
  m->server_ = std::move(server.value());
  m->server_->start();
  return m;
}

}  // namespace gpuwhy::metrics
