// SPDX-License-Identifier: Apache-2.0
#include "store/owned_files.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "store/sqlite_util.hpp"

namespace gpuwhy::store {
namespace {

// The SQLite files that belong to a database path, moved and removed together: a -wal left next
// to a different database would be replayed into it.
constexpr const char* kSuffixes[] = {"", "-wal", "-shm", "-journal"};

// In use, even by a dangling symbolic link (lstat, not stat).
bool name_taken(const std::string& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0;
}

// A decimal id from the environment, or `fallback` when absent or malformed.
unsigned env_id(const char* name, unsigned fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long n = std::strtoul(v, &end, 10);
  if (errno || *end || n == 0 || n > 0xfffffffeul) return fallback;
  return static_cast<unsigned>(n);
}

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device node";
  return "not a regular file";
}

// Whether a regular file holds a gpuwhy trace: SQLite's header and a `session` table, read
// without locking or creating anything (immutable). A trace killed before its first checkpoint
// may be an empty (or schema-less) file whose rows are all in its -wal.
bool holds_trace(const std::string& path, off_t size) {
  const bool has_wal = name_taken(path + "-wal");
  if (size == 0) return has_wal;
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[16] = {};
  const bool sqlite =
      pread(fd, magic, sizeof magic, 0) == 16 && std::memcmp(magic, "SQLite format 3", 16) == 0;
  close(fd);
  if (!sqlite) return false;
  sqlite3* db = nullptr;
  bool session = false, any_table = false;
  if (sqlite3_open_v2(file_uri(path, "mode=ro&immutable=1").c_str(), &db,
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOFOLLOW,
                      nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db,
                           "SELECT count(*), count(*) FILTER (WHERE name = 'session') "
                           "FROM sqlite_schema WHERE type = 'table'",
                           -1, &s, nullptr) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW) {
      any_table = sqlite3_column_int(s, 0) > 0;
      session = sqlite3_column_int(s, 1) > 0;
    }
    sqlite3_finalize(s);
  }
  sqlite3_close_v2(db);
  return session || (!any_table && has_wal);
}

}  // namespace

Owner invoking_user() {
  Owner o{geteuid(), getegid()};
  if (o.uid != 0) return o;
  o.uid = env_id("SUDO_UID", 0);
  o.gid = env_id("SUDO_GID", o.uid == 0 ? 0 : o.gid);
  return o;
}

bool give_to_invoking_user(int fd) {
  if (geteuid() != 0) return true;
  const Owner o = invoking_user();
  if (o.uid == 0 && o.gid == getegid()) return true;
  return fchown(fd, o.uid, o.gid) == 0;
}

Result<int> create_private_file(const std::string& path, const std::string& what) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return errno_error("cannot create " + what + " " + path, errno,
                       errno == EEXIST ? "something appeared at that path meanwhile; remove it"
                                       : "check that its directory exists and is writable");
  (void)give_to_invoking_user(fd);
  return fd;
}

Result<int> replace_private_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
      return Error{
          what + " " + path + " is " + kind_of(st.st_mode) + ", not a file gpuwhy may replace",
          "pass another path"};
    // unlink removes a symbolic link itself, never the file it points to.
    if (unlink(path.c_str()) != 0 && errno != ENOENT)
      return errno_error("cannot replace " + what + " " + path, errno, "remove it by hand");
  }
  return create_private_file(path, what);
}

Status check_trace_path(const std::string& path) {
  if (path.empty())
    return Error{"--out is empty", "give the trace file a name, e.g. --out gpuwhy.db"};
  // The longest side file (-journal) must fit too.
  const size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (path.size() + 12 >= PATH_MAX || name.size() + 12 > NAME_MAX)
    return Error{"--out path is too long (" + std::to_string(path.size()) +
                     " characters, file name " + std::to_string(name.size()) + ")",
                 "use a path under " + std::to_string(PATH_MAX - 13) +
                     " characters whose file name "
                     "is under " +
                     std::to_string(NAME_MAX - 11)};
  if (name.empty() || name == "." || name == "..")
    return Error{"--out " + path + " names a directory, not a file",
                 "add a file name, e.g. " + path + "/gpuwhy.db"};
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return errno_error("cannot use --out " + path, errno, "check the path");
  }
  if (!S_ISREG(st.st_mode))
    return Error{"--out " + path + " is " + kind_of(st.st_mode) +
                     "; gpuwhy writes traces only to new files or over its own traces",
                 S_ISLNK(st.st_mode) ? "pass the path the link points to" : "choose another --out"};
  if (!holds_trace(path, st.st_size))
    return Error{"--out " + path + " exists and is not a gpuwhy trace; refusing to touch it",
                 "choose another --out, or move that file away"};
  return {};
}

Result<std::string> keep_numbered_backup(const std::string& path) {
  if (!name_taken(path)) {
    for (const char* sfx : kSuffixes) {
      if (*sfx && unlink((path + sfx).c_str()) != 0 && errno != ENOENT)
        return errno_error("cannot remove the stale " + path + sfx, errno, "remove it by hand");
    }
    return std::string();
  }
  constexpr int kMaxBackups = 999;
  for (int n = 1; n <= kMaxBackups; ++n) {
    const std::string backup = path + "." + std::to_string(n);
    bool taken = false;
    for (const char* sfx : kSuffixes) taken = taken || name_taken(backup + sfx);
    if (taken) continue;
    // RENAME_NOREPLACE: a name that appears meanwhile is never overwritten; try the next number.
    if (renameat2(AT_FDCWD, path.c_str(), AT_FDCWD, backup.c_str(), RENAME_NOREPLACE) != 0) {
      if (errno == EEXIST) continue;
      return errno_error("cannot move the previous trace " + path + " to " + backup, errno,
                         "choose another --out");
    }
    for (const char* sfx : kSuffixes) {
      if (!*sfx) continue;
      if (renameat2(AT_FDCWD, (path + sfx).c_str(), AT_FDCWD, (backup + sfx).c_str(),
                    RENAME_NOREPLACE) != 0 &&
          errno != ENOENT)
        return errno_error("cannot move " + path + sfx + " to " + backup + sfx, errno,
                           "move it by hand");
    }
    return backup;
  }
  return Error{"--out " + path + " already has " + std::to_string(kMaxBackups) + " backups",
               "remove old ones (" + path + ".N) or choose another --out"};
}

}  // namespace gpuwhy::store
