// SPDX-License-Identifier: Apache-2.0
// SQLite applies any well-formed -wal next to a database, also one copied from another trace:
// explain then reported the other job without a word. The log's frames replace pages of the
// file, the session row's among them, so the trace the file alone holds (read with
// immutable=1, which reads no log) and the trace seen through the log must be the same one; and
// the log's pages must be the file's page size. A -wal that fails either is refused by every
// reader (TraceFile::open): nothing it would read could be trusted.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

#include "core/result.hpp"

namespace gpuwhy::store {

// Who recorded a trace, from its session row: together, as good as a name for one recording.
struct TraceIdentity {
  std::string host, boot_id;
  int64_t start_ns = 0;
  bool operator==(const TraceIdentity&) const = default;
  std::string describe() const;  // "recorded on HOST from 2026-12-02 01:02:03 UTC"
};

// The session row of `db` (as it reads, its log applied); nullopt without one.
std::optional<TraceIdentity> trace_identity(sqlite3* db);

// The session row of the database file at `path` alone, without its -wal; nullopt when the
// file holds none yet (a writer killed before its first checkpoint) or cannot be read.
std::optional<TraceIdentity> identity_without_wal(const std::string& path);

// Refuses a -wal whose page size differs from the one in the header of the database file at
// `path`. OK when either header cannot be read (an empty file, a damaged log: reported by
// check_wal).
Status check_wal_page_size(const std::string& path);

// Refuses `with_wal` (the trace read through the log) when the file alone names another trace.
Status check_wal_owner(const std::string& path, const std::optional<TraceIdentity>& alone,
                       const std::optional<TraceIdentity>& with_wal);

}  // namespace gpuwhy::store
