// SPDX-License-Identifier: Apache-2.0
// Files `gpuwhy trace` creates while running as root, in directories other users may write
// (the trace, its side files, the lock, --ready-file). None is opened through a symbolic link or
// truncated when it already exists, so a link planted in the directory cannot make root
// overwrite another file; each is 0600 and, under sudo, owned by the user who ran sudo.
#pragma once

#include <sys/types.h>

#include <string>

#include "core/result.hpp"

namespace gpuwhy::store {

// The user a file should belong to: SUDO_UID/SUDO_GID when root runs under sudo, else ourselves.
struct Owner {
  uid_t uid;
  gid_t gid;
};
Owner invoking_user();

// Gives an open file to invoking_user() (no-op unless root). Errors are not fatal to callers
// that can live with a root-owned file, so it only reports.
bool give_to_invoking_user(int fd);

// Creates `path` anew (O_EXCL, never through a symlink), mode 0600, owned by invoking_user().
// Returns the descriptor (O_CLOEXEC). `what` names the file in errors ("the ready file").
Result<int> create_private_file(const std::string& path, const std::string& what);

// Like create_private_file, but a symlink or regular file already at `path` is removed first
// (the link itself, never its target): for --ready-file, rewritten by each run.
Result<int> replace_private_file(const std::string& path, const std::string& what);

// Checks a --out path before anything is written: it must be non-empty, not too long, and name
// nothing or a regular file that holds a gpuwhy trace (not a directory, device, FIFO, socket,
// symlink, or another program's file).
Status check_trace_path(const std::string& path);

// Moves an existing trace at `path` (with its -wal/-shm/-journal) to the first free numbered
// backup `path.1`, `path.2`, ... (never replacing anything), and removes stale side files of a
// missing one. Returns the backup path, or "" when there was nothing to keep.
Result<std::string> keep_numbered_backup(const std::string& path);

}  // namespace gpuwhy::store
