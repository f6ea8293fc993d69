// SPDX-License-Identifier: Apache-2.0
#include "metrics/http_request.hpp"

#include <algorithm>
#include <cctype>

namespace gpuwhy::metrics {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

std::string response(int status, std::string_view reason, std::string_view content_type,
                     const std::string& body, bool head_only, std::string_view extra = {}) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\n";
  out += "Content-Type: ";
  out += content_type;
  out += "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  out += extra;
  out += "Connection: close\r\n\r\n";
  if (!head_only) out += body;
  return out;
}

}  // namespace

HttpRequest parse_request(std::string_view received) {
  HttpRequest r;
  const size_t end = received.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    // Still coming, unless it is already too long or plainly not HTTP.
    if (received.size() >= kMaxRequestHead) r.state = HttpRequest::State::Bad;
    return r;
  }
  if (end + 4 > kMaxRequestHead) {
    r.state = HttpRequest::State::Bad;
    return r;
  }
  r.state = HttpRequest::State::Bad;  // until the head reads whole
  std::string_view head = received.substr(0, end);
  const size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  std::string_view rest = eol == std::string_view::npos ? std::string_view{} : head.substr(eol + 2);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) return r;
  r.method = std::string(line.substr(0, sp1));
  r.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  r.version = std::string(line.substr(sp2 + 1));
  if (!is_token(r.method) || r.target.empty() || r.version.rfind("HTTP/1.", 0) != 0 ||
      r.version.size() != 8)
    return r;
  while (!rest.empty()) {
    const size_t e = rest.find("\r\n");
    std::string_view field = rest.substr(0, e);
    rest = e == std::string_view::npos ? std::string_view{} : rest.substr(e + 2);
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos || !is_token(field.substr(0, colon))) return r;
    if (iequals(field.substr(0, colon), "accept"))
      r.accept = std::string(trim(field.substr(colon + 1)));
  }
  r.state = HttpRequest::State::Complete;
  return r;
}

std::string respond(const HttpRequest& req, const std::function<std::string(Format)>& render) {
  constexpr std::string_view kText = "text/plain; charset=utf-8";
  if (req.state != HttpRequest::State::Complete)
    return response(400, "Bad Request", kText, "bad request\n", false);
  const bool head = req.method == "HEAD";
  const std::string_view path = std::string_view(req.target).substr(0, req.target.find('?'));
  if (path != "/metrics")
    return response(404, "Not Found", kText, "not found; metrics are at /metrics\n", head);
  if (req.method != "GET" && !head)
    return response(405, "Method Not Allowed", kText, "only GET and HEAD\n", false,
                    "Allow: GET, HEAD\r\n");
  const Format format = negotiate(req.accept);
  return response(200, "OK", content_type(format), render(format), head);
}

}  // namespace gpuwhy::metrics
