// SPDX-License-Identifier: Apache-2.0
#include "metrics/http_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "metrics/http_request.hpp"

namespace gpuwhy::metrics {
namespace {

using Clock = std::chrono::steady_clock;

struct Client {
  int fd = -1;
  Clock::time_point deadline;  // its request within the timeout, its response within another
  Clock::time_point accepted;
  std::string in, out;
  size_t sent = 0;
  bool answered = false;  // the response is built: writing, then draining until the peer closes
};

Error listen_error(const ListenAddress& where, const std::string& why) {
  return Error{"cannot listen on " + where.text() + " for --metrics: " + why,
               "pick a free port or another address (--metrics 127.0.0.1:PORT)"};
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::listen(const ListenAddress& where, Render render,
                                                       std::chrono::milliseconds client_timeout) {
  // Numeric addresses only (and "localhost"): the binary is static, and glibc's resolver
  // (getaddrinfo, NSS) would need the shared libraries of the glibc it was built with.
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  const std::string host = where.host == "localhost" ? "127.0.0.1" : where.host;
  if (auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
      inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(where.port);
    addr_len = sizeof(sockaddr_in);
  } else if (auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
             inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(where.port);
    addr_len = sizeof(sockaddr_in6);
  } else {
    return listen_error(where, "not a numeric IPv4 or IPv6 address (host names are not resolved)");
  }
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return listen_error(where, std::strerror(errno));
  // A restarted trace may rebind at once (old connections in TIME_WAIT); a live listener on the
  // port still refuses it.
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), addr_len) != 0 || ::listen(fd, 64) != 0) {
    const int err = errno;
    close(fd);
    return listen_error(where, std::strerror(err));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const uint16_t p =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  std::unique_ptr<HttpServer> s(new HttpServer(fd, p, std::move(render), client_timeout));
  if (pipe2(s->wake_, O_CLOEXEC | O_NONBLOCK) != 0)
    return listen_error(where, std::strerror(errno));
  return s;
}

HttpServer::HttpServer(int listen_fd, uint16_t port, Render render,
                       std::chrono::milliseconds timeout)
    : listen_fd_(listen_fd), port_(port), render_(std::move(render)), timeout_(timeout) {}

HttpServer::~HttpServer() {
  if (thread_.joinable()) {
    const char b = 1;
    (void)!write(wake_[1], &b, 1);
    thread_.join();
  }
  for (int fd : {listen_fd_, wake_[0], wake_[1]})
    if (fd >= 0) close(fd);
}

void HttpServer::start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "gpuwhy-metrics");
    serve();
  });
}

namespace {

// Reads a client's request, answers it and drains it, as far as it can without blocking; `ev`
// are the poll events seen on it (POLLIN right after accept: the request may be there already).
// True when the client is done with: answered and closed, failed, or past its deadline.
bool step(Client& c, short ev, Clock::time_point now, const HttpServer::Render& render,
          std::chrono::milliseconds timeout) {
  if (now >= c.deadline) return true;  // too slow: dropped
  if (ev && !c.answered) {
    char buf[4096];
    const ssize_t n = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      const HttpRequest req = parse_request(c.in);
      if (req.state != HttpRequest::State::Incomplete) {
        c.out = respond(req, render);
        c.answered = true;
        c.deadline = now + timeout;             // a window of its own to take the response
        ev = static_cast<short>(ev | POLLOUT);  // at once: a scrape's response fits the buffer
      }
    }
  }
  if (c.answered && c.sent < c.out.size() && (ev & (POLLOUT | POLLERR | POLLHUP))) {
    const ssize_t n =
        send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0)
      c.sent += static_cast<size_t>(n);
    else if (errno != EAGAIN && errno != EINTR)
      return true;
    // All sent: half-close, then read until the client closes, so that unread request bytes
    // do not turn our close into a reset that could cut the response short.
    if (c.sent == c.out.size()) {
      shutdown(c.fd, SHUT_WR);
      c.deadline = std::min(c.deadline, now + std::chrono::seconds(1));
    }
  } else if (c.answered && c.sent == c.out.size() && ev) {
    char buf[4096];
    const ssize_t n = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
  return false;
}

// The client to drop for a new connection when every slot is taken: the oldest that has not
// sent a whole request (a slow or silent client), else the oldest that has its whole response
// and is only being drained. Null when every client is still taking its response: the new
// connection is the one refused.
Client* to_evict(std::vector<Client>& clients) {
  Client* silent = nullptr;
  Client* drained = nullptr;
  for (Client& c : clients) {
    if (c.fd < 0) continue;
    if (!c.answered && (!silent || c.accepted < silent->accepted)) silent = &c;
    if (c.answered && c.sent == c.out.size() && (!drained || c.accepted < drained->accepted))
      drained = &c;
  }
  return silent ? silent : drained;
}

}  // namespace

void HttpServer::serve() {
  std::vector<Client> clients;
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({wake_[0], POLLIN, 0});
    // Always polled: at the limit a new connection takes the slot of a slow one (to_evict), so
    // that clients which hold connections open cannot keep a scrape waiting.
    fds.push_back({listen_fd_, POLLIN, 0});
    auto now = Clock::now();
    int timeout_ms = 1000;
    for (const Client& c : clients) {
      const bool writing = c.answered && c.sent < c.out.size();
      fds.push_back({c.fd, static_cast<short>(writing ? POLLOUT : POLLIN), 0});
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - now);
      timeout_ms = std::max(0, std::min<int>(timeout_ms, static_cast<int>(left.count()) + 1));
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (fds[0].revents) break;  // the destructor asks us to stop
    now = Clock::now();
    for (size_t i = 0; i < clients.size(); ++i) {
      Client& c = clients[i];
      if (c.fd >= 0 && step(c, fds[i + 2].revents, now, render_, timeout_)) {
        close(c.fd);
        c.fd = -1;
      }
    }
    if (fds[1].revents & POLLIN) {
      for (;;) {
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
          // Out of descriptors: the connection stays in the backlog; do not spin on it.
          if (errno == EMFILE || errno == ENFILE) poll(nullptr, 0, 100);
          break;  // EAGAIN: no more waiting; ECONNABORTED and the like: that client is gone
        }
        now = Clock::now();
        Client fresh{fd, now + timeout_, now, {}, {}, 0, false};
        // Its request is often there already: answered before any slot is given up for it.
        if (step(fresh, POLLIN, now, render_, timeout_)) {
          close(fd);
          continue;
        }
        size_t live = 0;
        for (const Client& c : clients) live += c.fd >= 0;
        if (live >= kMaxClients) {
          Client* old = to_evict(clients);
          if (!old) {
            close(fd);  // every slot is sending a response: this one waits its turn elsewhere
            continue;
          }
          close(old->fd);
          old->fd = -1;
        }
        clients.push_back(std::move(fresh));
      }
    }
    std::erase_if(clients, [](const Client& c) { return c.fd < 0; });
  }
  for (Client& c : clients) close(c.fd);
}

}  // namespace gpuwhy::metrics
