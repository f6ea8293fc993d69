// SPDX-License-Identifier: Apache-2.0
// The CUPTI client carried in this binary (libgpuwhy_cupti.so, built from src/cupti_client and
// embedded at build time by cmake/EmbedBinary.cmake), written out for CUDA_INJECTION64_PATH.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "gpu_activity/receiver.hpp"

extern "C" const unsigned char gw_cupti_client_so[];
extern "C" const unsigned long gw_cupti_client_so_size;

namespace gpuwhy::gpu_activity {

bool client_library_built() { return gw_cupti_client_so_size > 0; }

Result<std::string> write_client_library() {
  if (!client_library_built())
    return Error{"this gpuwhy was built without the CUPTI client (no cupti.h at build time)",
                 "build it where the CUDA toolkit's CUPTI headers are installed"};
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/gpuwhy-cupti-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr)
    return errno_error("cannot make a private directory for the CUPTI client", errno);
  // The command may run as another user (sudo -u): it must be able to map the file, and no one
  // else may replace it. The directory is ours and 0711 (others may pass, not list or write);
  // the file 0555, made here with O_EXCL.
  ::chmod(dir.c_str(), 0711);
  const std::string path = dir + "/libgpuwhy_cupti.so";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0555);
  if (fd < 0) return errno_error("cannot write " + path, errno);
  const unsigned char* p = gw_cupti_client_so;
  const unsigned char* const end = gw_cupti_client_so + gw_cupti_client_so_size;
  while (p < end) {
    const ssize_t n = ::write(fd, p, static_cast<size_t>(end - p));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      return errno_error("cannot write " + path, e);
    }
    p += n;
  }
  ::close(fd);
  return path;
}

void remove_client_library(const std::string& path) {
  if (path.empty()) return;
  ::unlink(path.c_str());
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos) ::rmdir(path.substr(0, slash).c_str());
}

}  // namespace gpuwhy::gpu_activity
