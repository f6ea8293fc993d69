// SPDX-License-Identifier: Apache-2.0
#include "store/chunk_index.hpp"

#include <bit>
#include <cstring>

#include "store/crc32.hpp"
#include "store/sqlite_util.hpp"

namespace gpuwhy::store {

uint32_t chunk_index_crc(const ChunkKey& k) {
  const int64_t v[5] = {k.pid, k.tid, k.ts_min, k.end_max, k.rows};
  unsigned char bytes[sizeof v];
  for (size_t i = 0; i < 5; ++i) {
    uint64_t x = static_cast<uint64_t>(v[i]);
    if constexpr (std::endian::native == std::endian::big) x = __builtin_bswap64(x);
    std::memcpy(bytes + i * 8, &x, 8);
  }
  return crc32_of(0, bytes, sizeof bytes);
}

bool index_crc_matches(const ChunkKey& k, int64_t stored) {
  return stored == static_cast<int64_t>(chunk_index_crc(k));
}

Result<bool> has_index_crc(sqlite3* db, const std::string& chunks) {
  auto q = Stmt::prepare(db, "SELECT 1 FROM pragma_table_info(?, 'main') WHERE name = 'index_crc'",
                         "reading the schema");
  if (!q) return q.error();
  q->text(1, chunks);
  const int rc = sqlite3_step(q->get());
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sqlite_error(db, "reading the schema");
  return rc == SQLITE_ROW;
}

Result<std::string> index_crc_column(sqlite3* db, const std::string& chunks) {
  auto has = has_index_crc(db, chunks);
  if (!has) return has.error();
  return std::string(*has ? "index_crc" : "NULL");
}

Error chunk_index_damaged(const std::string& chunks, int64_t id) {
  return Error{"corrupt event chunk in the trace file: the index row of " + chunks + " id " +
                   std::to_string(id) +
                   " (thread, time range, row count) fails its checksum (index_crc mismatch)",
               "the file was damaged (copy it again, or re-record the trace)"};
}

}  // namespace gpuwhy::store
