// SPDX-License-Identifier: Apache-2.0
#include "metrics/listen_address.hpp"

#include <charconv>

namespace gpuwhy::metrics {
namespace {

Error bad(const std::string& value, const std::string& why) {
  return Error{"--metrics '" + value + "' is not a listen address (" + why + ")",
               "give a port (9464, meaning 127.0.0.1:9464), HOST:PORT or [IPV6]:PORT", 2};
}

}  // namespace

std::string ListenAddress::text() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenAddress> parse_listen_address(const std::string& value) {
  ListenAddress a;
  std::string port;
  if (!value.empty() && value.front() == '[') {
    const size_t close = value.find(']');
    if (close == std::string::npos) return bad(value, "no ']' after the IPv6 address");
    a.host = value.substr(1, close - 1);
    if (a.host.empty()) return bad(value, "empty IPv6 address");
    if (close + 1 >= value.size() || value[close + 1] != ':')
      return bad(value, "no ':PORT' after ']'");
    port = value.substr(close + 2);
  } else if (const size_t colon = value.rfind(':'); colon == std::string::npos) {
    port = value;  // a bare port: loopback
  } else {
    a.host = value.substr(0, colon);
    if (a.host.find(':') != std::string::npos)
      return bad(value, "an IPv6 address needs brackets: [::1]:9464");
    port = value.substr(colon + 1);
  }
  if (a.host.empty()) a.host = "127.0.0.1";
  unsigned p = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size())
    return bad(value, "the port is not a number");
  if (p == 0 || p > 65535) return bad(value, "the port must be from 1 to 65535");
  a.port = static_cast<uint16_t>(p);
  return a;
}

}  // namespace gpuwhy::metrics
