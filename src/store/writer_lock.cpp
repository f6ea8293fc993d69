// SPDX-License-Identifier: Apache-2.0
#include "store/writer_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "store/owned_files.hpp"

namespace gpuwhy::store {
namespace {

pid_t read_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  return n > 0 ? static_cast<pid_t>(std::atoi(buf)) : 0;
}

bool same_file(int fd, const std::string& path) {
  struct stat a {
  }, b{};
  return fstat(fd, &a) == 0 && stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

}  // namespace

std::string lock_path_for(const std::string& db_path) { return db_path + ".lock"; }

Result<WriterLock> WriterLock::acquire(const std::string& db_path) {
  const std::string path = lock_path_for(db_path);
  pid_t other = 0;
  // A reader probing the lock holds it shared for a few microseconds, and a writer that is
  // ending unlinks the sidecar under us: retry briefly before calling the file busy.
  for (int attempt = 0; attempt < 20; ++attempt) {
    // Never through a symlink, and never a file that is not ours to truncate: a link or hard
    // link planted in the directory must not make root overwrite its target.
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0) {
      const int err = errno;
      if (err == ELOOP)
        return Error{"the lock file " + path + " is a symbolic link",
                     "remove it (a trace never creates one) and try again"};
      return errno_error("cannot create the lock file " + path, err,
                         "check that the directory of the trace file is writable");
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
      close(fd);
      return Error{"the lock file " + path +
                       " is not a plain file of its own (a device, FIFO or "
                       "hard link)",
                   "remove it (a trace never creates one) and try again"};
    }
    (void)give_to_invoking_user(fd);
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      if (!same_file(fd, path)) {  // the previous owner removed it after we opened it
        close(fd);
        continue;
      }
      char buf[32];
      const int n = std::snprintf(buf, sizeof buf, "%d\n", static_cast<int>(getpid()));
      if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, n, 0) != n) {
        const int err = errno;
        close(fd);
        return errno_error("cannot write the lock file " + path, err);
      }
      return WriterLock(path, fd);
    }
    const int err = errno;
    if (err != EWOULDBLOCK) {
      close(fd);
      return errno_error("cannot lock " + path, err);
    }
    other = read_pid(fd);
    close(fd);
    // A shared (reader) holder has not written a pid: give it time to let go.
    std::this_thread::sleep_for(std::chrono::milliseconds(other > 0 && attempt >= 2 ? 50 : 5));
    if (other > 0 && attempt >= 4) break;
  }
  return Error{
      db_path + " is being written by another gpuwhy trace (pid " + std::to_string(other) + ")",
      "choose another --out or stop that trace"};
}

pid_t WriterLock::holder(const std::string& db_path) {
  const std::string path = lock_path_for(db_path);
  // O_NONBLOCK: a FIFO planted at the sidecar's path must not hang a reader.
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;  // never locked here, or a copied file without its sidecar
  pid_t pid = 0;
  if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
    flock(fd, LOCK_UN);
  } else if (errno == EWOULDBLOCK) {
    pid = read_pid(fd);
    if (pid <= 0) pid = -1;  // held, pid not written yet: still live
  }
  close(fd);
  return pid;
}

int WriterLock::reserve(long bytes) {
  if (fd_ < 0) return EBADF;
  if (fallocate(fd_, 0, 0, bytes) == 0) return 0;
  if (errno != EOPNOTSUPP && errno != ENOSYS) return errno;
  // No fallocate here (some network and FUSE filesystems): zeros, after the pid, take the room.
  static const char zeros[65536] = {};
  for (off_t at = 64; at < bytes;) {
    const ssize_t n = pwrite(fd_, zeros, std::min<off_t>(sizeof zeros, bytes - at), at);
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      release_reserve();
      return err;
    }
    at += n;
  }
  return fsync(fd_) == 0 ? 0 : errno;
}

void WriterLock::release_reserve() {
  if (fd_ < 0) return;
  char buf[32] = {};
  const ssize_t n = pread(fd_, buf, sizeof buf - 1, 0);
  if (ftruncate(fd_, 0) == 0 && n > 0) (void)pwrite(fd_, buf, strnlen(buf, sizeof buf), 0);
}

WriterLock::~WriterLock() {
  if (fd_ < 0) return;
  // Unlink while still holding the lock: a writer that opened the old inode meanwhile sees the
  // path no longer matches its descriptor and starts over.
  unlink(path_.c_str());
  close(fd_);
}

}  // namespace gpuwhy::store
