// SPDX-License-Identifier: Apache-2.0
// The columns of a <table>_chunks row that decide which chunks a scan reads (pid, tid, ts_min,
// end_max, rows) lie outside the checksum of its data: one flipped bit in ts_min took a chunk
// out of `explain --from 1s --to 2s` (1,461 calls reported instead of 5,376) without a word.
// index_crc, written with every chunk, is a CRC-32 of them; readers check it before a row may
// select or rule out its chunk, and a mismatch is chunk damage (skipped by explain, an error in
// SQL). Files written before it have no such column: their index cannot be verified.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "core/result.hpp"

namespace gpuwhy::store {

// A chunk's index columns, as its row stores them.
struct ChunkKey {
  int64_t pid = 0, tid = 0, ts_min = 0, end_max = 0, rows = 0;
};

// CRC-32 (crc32.hpp) of the five values, little-endian, in this order.
uint32_t chunk_index_crc(const ChunkKey& k);

// Whether `stored` (index_crc as read; SQL NULL: none) vouches for `k`. A file without the
// column (has_index_crc false) passes nothing here: callers skip the check.
bool index_crc_matches(const ChunkKey& k, int64_t stored);

// Whether main.<chunks> has the index_crc column.
Result<bool> has_index_crc(sqlite3* db, const std::string& chunks);

// The select-list expression for the column: "index_crc", or "NULL" in a file without it.
Result<std::string> index_crc_column(sqlite3* db, const std::string& chunks);

// The damage line for a chunk whose index row fails its check (starts as chunk_damaged() lines
// do, so every reader treats it as the other chunk damage).
Error chunk_index_damaged(const std::string& chunks, int64_t id);

}  // namespace gpuwhy::store
