// SPDX-License-Identifier: Apache-2.0
// The little HTTP/1.1 the metrics endpoint speaks: parse a request head, route it (GET or HEAD
// /metrics; anything else 400, 404 or 405), write the response. Pure functions: the server
// (http_server.cpp) does the sockets.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "metrics/exposition.hpp"

namespace gpuwhy::metrics {

constexpr size_t kMaxRequestHead = 8192;  // bytes up to and including the blank line

struct HttpRequest {
  enum class State { Incomplete, Complete, Bad };
  State state = State::Incomplete;
  std::string method, target, version;
  std::string accept;  // the Accept header, if any
};

// Parses what has arrived so far of a request. Bad: not HTTP/1.x, a malformed line, a head
// longer than kMaxRequestHead.
HttpRequest parse_request(std::string_view received);

// The whole response (status line, headers, body unless HEAD) to a complete or bad request.
// `render` writes the metrics in the format asked for.
std::string respond(const HttpRequest& req, const std::function<std::string(Format)>& render);

}  // namespace gpuwhy::metrics
