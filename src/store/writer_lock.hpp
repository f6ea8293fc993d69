// SPDX-License-Identifier: Apache-2.0
// Who is writing a trace file. The writer holds flock(LOCK_EX) on a sidecar "<trace>.lock" for
// its whole life; readers test it with a non-blocking shared lock. A sidecar rather than the
// database file itself: SQLite locks with fcntl(2), and a process silently loses every fcntl lock
// on a file when it closes ANY descriptor of it, so the store never opens the database outside
// SQLite. The kernel drops the flock when the writer dies, even by SIGKILL.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/result.hpp"

namespace gpuwhy::store {

std::string lock_path_for(const std::string& db_path);

class WriterLock {
 public:
  // Error when another process holds it: "<db> is being written by another gpuwhy trace (pid N)".
  static Result<WriterLock> acquire(const std::string& db_path);

  // The pid of the live writer of `db_path`, or 0 when none holds the lock (no sidecar, or a
  // sidecar left behind by a writer that was killed).
  // -1: held, but the holder has not written its pid yet.
  static pid_t holder(const std::string& db_path);

  WriterLock(WriterLock&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_) { o.fd_ = -1; }
  WriterLock& operator=(WriterLock&&) = delete;
  WriterLock(const WriterLock&) = delete;
  ~WriterLock();  // removes the sidecar, then releases the lock

  // Space set aside in the sidecar (fallocate, or zeros written where the filesystem has no
  // fallocate) so that a writer whose disk fills up can still mark its file as stopped:
  // release_reserve() gives it back. 0, or the errno (ENOSPC: the disk has less free).
  int reserve(long bytes);
  void release_reserve();

 private:
  WriterLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

}  // namespace gpuwhy::store
