// SPDX-License-Identifier: Apache-2.0
// Where `trace --metrics` listens: "9464" and ":9464" mean loopback (no listener is ever exposed
// unless asked for), "0.0.0.0:9464", "192.0.2.7:9464", "localhost:9464" and "[::1]:9464" are
// honoured as given.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.hpp"

namespace gpuwhy::metrics {

struct ListenAddress {
  std::string host;  // numeric IPv4/IPv6 literal (no brackets) or a host name
  uint16_t port = 0;
  // How the address reads in messages and docs: "127.0.0.1:9464", "[::1]:9464".
  std::string text() const;
};

// The --metrics value; an Error naming the value and the accepted forms when it is not one.
Result<ListenAddress> parse_listen_address(const std::string& value);

}  // namespace gpuwhy::metrics
