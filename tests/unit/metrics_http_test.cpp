// SPDX-License-Identifier: Apache-2.0
// The metrics endpoint's HTTP: request parsing and routing, and the real server on a loopback
// port: a scrape, bad requests, a port already taken, and a silent client that does not keep
// other scrapers waiting.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "metrics/http_request.hpp"
#include "metrics/http_server.hpp"

namespace gpuwhy::metrics {
namespace {

std::string render(Format f) { return f == Format::OpenMetrics ? "om\n# EOF\n" : "text\n"; }

TEST(MetricsHttp, RequestParsingAndRouting) {
  EXPECT_EQ(parse_request("GET /metrics HTTP/1.1\r\nHost: x\r\n").state,
            HttpRequest::State::Incomplete);
  HttpRequest r =
      parse_request("GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\nACCEPT: text/plain\r\n\r\n");
  ASSERT_EQ(r.state, HttpRequest::State::Complete);
  EXPECT_EQ(r.accept, "text/plain");
  std::string resp = respond(r, render);
  EXPECT_EQ(resp.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << resp;
  EXPECT_NE(resp.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(resp.substr(resp.size() - 9), "\r\n\r\ntext\n");

  r = parse_request("HEAD /metrics HTTP/1.0\r\nAccept: application/openmetrics-text\r\n\r\n");
  resp = respond(r, render);
  EXPECT_NE(resp.find("application/openmetrics-text"), std::string::npos);
  EXPECT_NE(resp.find("Content-Length: 9\r\n"), std::string::npos);
  EXPECT_EQ(resp.substr(resp.size() - 4), "\r\n\r\n");  // HEAD: no body

  EXPECT_EQ(respond(parse_request("GET / HTTP/1.1\r\n\r\n"), render).substr(0, 12), "HTTP/1.1 404");
  const std::string post = respond(parse_request("POST /metrics HTTP/1.1\r\n\r\n"), render);
  EXPECT_EQ(post.substr(0, 12), "HTTP/1.1 405");
  EXPECT_NE(post.find("Allow: GET, HEAD"), std::string::npos);
  for (const char* bad :
       {"GET /metrics\r\n\r\n", "GET /metrics HTTP/2.0\r\n\r\n", "GET  /metrics HTTP/1.1\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nno colon\r\n\r\n", "\x16\x03\x01 / HTTP/1.1\r\n\r\n"}) {
    const HttpRequest b = parse_request(bad);
    EXPECT_EQ(b.state, HttpRequest::State::Bad) << bad;
    EXPECT_EQ(respond(b, render).substr(0, 12), "HTTP/1.1 400") << bad;
  }
  EXPECT_EQ(parse_request(std::string(kMaxRequestHead, 'a')).state, HttpRequest::State::Bad);
}

int connect_to(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` and reads the response until the server closes.
std::string exchange(uint16_t port, const std::string& request) {
  const int fd = connect_to(port);
  if (fd < 0) return "connect failed";
  (void)!send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

TEST(MetricsHttp, ServerAnswersScrapesAndRefusesABusyPort) {
  // A short client timeout: the silent client below is dropped within the test's seconds.
  auto server =
      HttpServer::listen(ListenAddress{"127.0.0.1", 0}, render, std::chrono::milliseconds(800));
  ASSERT_TRUE(server.ok()) << server.error().line();
  (*server)->start();
  const uint16_t port = (*server)->port();
  ASSERT_NE(port, 0);

  // A client that connects and says nothing holds a slot, not the server.
  const int silent = connect_to(port);
  ASSERT_GE(silent, 0);
  std::vector<std::thread> scrapers;
  std::vector<std::string> got(8);
  for (size_t i = 0; i < got.size(); ++i)
    scrapers.emplace_back(
        [&, i] { got[i] = exchange(port, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n"); });
  for (auto& t : scrapers) t.join();
  for (const std::string& r : got) {
    EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
    EXPECT_EQ(r.substr(r.size() - 5), "text\n");
  }
  EXPECT_EQ(exchange(port, "DELETE /metrics HTTP/1.1\r\n\r\n").substr(0, 12), "HTTP/1.1 405");
  EXPECT_EQ(exchange(port, "GET /nope HTTP/1.1\r\n\r\n").substr(0, 12), "HTTP/1.1 404");
  EXPECT_EQ(exchange(port, "garbage\r\n\r\n").substr(0, 12), "HTTP/1.1 400");
  // The silent client is dropped after the timeout: its read sees the close.
  char c;
  EXPECT_EQ(recv(silent, &c, 1, 0), 0);
  close(silent);

  auto again = HttpServer::listen(ListenAddress{"127.0.0.1", port}, render);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().line().find("cannot listen on 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << again.error().line();
}

// Issue 34, item 7: 16 connections held open made every scrape wait for their timeout, 200 made
// every scrape fail. With 200 held open (half silent, half with a request never finished) and a
// client timeout of a minute, scrapes are answered (a scrape's socket gives up after 10 s), and
// the server keeps at most kMaxClients of them, the oldest slow ones closed first.
TEST(MetricsHttp, SlowClientsHoldingConnectionsDoNotDelayScrapes) {
  auto server = HttpServer::listen(ListenAddress{"127.0.0.1", 0}, render, std::chrono::seconds(60));
  ASSERT_TRUE(server.ok()) << server.error().line();
  (*server)->start();
  const uint16_t port = (*server)->port();
  std::vector<int> slow;
  for (int i = 0; i < 200; ++i) {
    const int fd = connect_to(port);
    ASSERT_GE(fd, 0) << "connection " << i;
    if (i % 2) (void)!send(fd, "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL);  // never ends
    slow.push_back(fd);
  }
  for (int i = 0; i < 5; ++i) {
    const std::string r = exchange(port, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
    EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << "scrape " << i << ": " << r;
  }
  // The server holds at most kMaxClients connections: the others were closed, oldest first.
  size_t closed = 0;
  for (int fd : slow) {
    pollfd p{fd, POLLIN, 0};
    char c;
    if (poll(&p, 1, 5000) == 1 && recv(fd, &c, 1, MSG_DONTWAIT) == 0) ++closed;
    if (closed + HttpServer::kMaxClients >= slow.size()) break;
  }
  EXPECT_GE(closed + HttpServer::kMaxClients, slow.size());
  for (int fd : slow) close(fd);
}

// [::1]:PORT listens on IPv6 loopback (where the host has it) and answers there.
TEST(MetricsHttp, Ipv6Loopback) {
  auto server = HttpServer::listen(ListenAddress{"::1", 0}, render);
  if (!server.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << server.error().line();
  (*server)->start();
  const int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons((*server)->port());
  a.sin6_addr = in6addr_loopback;
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const std::string req = "GET /metrics HTTP/1.1\r\n\r\n";
  (void)!send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << out;
}

}  // namespace
}  // namespace gpuwhy::metrics
