// SPDX-License-Identifier: Apache-2.0
#include "store/wal_owner.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "core/clock.hpp"
#include "core/untrusted.hpp"
#include "store/big_endian.hpp"
#include "store/sqlite_util.hpp"

namespace gpuwhy::store {
namespace {

const char* const kHint =
    "copy the trace's own -wal next to it, or move this -wal aside to read the file without it";

// The first `n` bytes of a file; false when it is shorter or unreadable.
bool read_head(const std::string& path, unsigned char* out, size_t n) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  const bool read = pread(fd, out, n, 0) == static_cast<ssize_t>(n);
  close(fd);
  return read;
}

}  // namespace

std::string TraceIdentity::describe() const {
  return "recorded on " + untrusted::shown(host) + " from " + format_utc(start_ns);
}

std::optional<TraceIdentity> trace_identity(sqlite3* db) {
  auto q =
      Stmt::prepare(db, "SELECT host, coalesce(boot_id, ''), start_ns FROM session WHERE id = 1",
                    "reading the session");
  if (!q || sqlite3_step(q->get()) != SQLITE_ROW) return std::nullopt;
  sqlite3_stmt* s = q->get();
  auto text = [&](int i) {
    const auto* t = sqlite3_column_text(s, i);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  };
  return TraceIdentity{text(0), text(1), sqlite3_column_int64(s, 2)};
}

std::optional<TraceIdentity> identity_without_wal(const std::string& path) {
  sqlite3* db = nullptr;
  std::optional<TraceIdentity> out;
  if (sqlite3_open_v2(file_uri(path, "mode=ro&immutable=1").c_str(), &db,
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOFOLLOW,
                      nullptr) == SQLITE_OK)
    out = trace_identity(db);
  sqlite3_close_v2(db);
  return out;
}

Status check_wal_page_size(const std::string& path) {
  // https://sqlite.org/fileformat2.html: the database header ("SQLite format 3\0", then the
  // page size, big-endian, 1 standing for 65536) and the log's (magic, version, page size).
  unsigned char head[100], wal[32];
  if (!read_head(path, head, sizeof head) || !read_head(path + "-wal", wal, sizeof wal)) return {};
  if (std::string_view(reinterpret_cast<char*>(head), 16) !=
      std::string_view("SQLite format 3\0", 16))
    return {};
  const uint32_t magic = be32(wal);
  if (magic != 0x377f0682 && magic != 0x377f0683) return {};  // damaged or reset: wal_check's
  uint32_t page = uint32_t{head[16]} << 8 | head[17];
  if (page == 1) page = 65536;
  const uint32_t wal_page_size = be32(wal + 8);
  if (page == wal_page_size) return {};
  return Error{path + "-wal is not the log of " + path + ": its pages are " +
                   std::to_string(wal_page_size) + " bytes, the file's " + std::to_string(page) +
                   "; refusing to read the file through it",
               kHint};
}

Status check_wal_owner(const std::string& path, const std::optional<TraceIdentity>& alone,
                       const std::optional<TraceIdentity>& with_wal) {
  if (!alone || !with_wal || *alone == *with_wal) return {};
  return Error{path + "-wal belongs to another trace (" + with_wal->describe() + "), not to " +
                   path + " (" + alone->describe() + "); refusing to read the file through it",
               kHint};
}

}  // namespace gpuwhy::store
