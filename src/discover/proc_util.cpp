// SPDX-License-Identifier: Apache-2.0
#include "discover/proc_util.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace gpuwhy::discover {

Result<std::string> read_small_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error("cannot open " + path);
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return errno_error("cannot read " + path, err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::optional<std::string> read_link(const std::string& path) {
  std::string buf(256, '\0');
  for (;;) {
    const ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size());
    if (n < 0) return std::nullopt;
    if (static_cast<size_t>(n) < buf.size()) {
      buf.resize(static_cast<size_t>(n));
      return buf;
    }
    if (buf.size() >= 65536) return std::nullopt;
    buf.resize(buf.size() * 2);  // may have been truncated: retry larger
  }
}

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view proc_root_prefix(std::string_view path) {
  constexpr std::string_view kProc = "/proc/";
  if (!path.starts_with(kProc)) return {};
  size_t i = kProc.size();
  while (i < path.size() && path[i] >= '0' && path[i] <= '9') ++i;
  constexpr std::string_view kRoot = "/root";
  if (i == kProc.size() || path.substr(i, kRoot.size()) != kRoot) return {};
  const size_t end = i + kRoot.size();
  if (end != path.size() && path[end] != '/') return {};
  return path.substr(0, end);
}

}  // namespace gpuwhy::discover
