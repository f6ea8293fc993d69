// SPDX-License-Identifier: Apache-2.0
// The chunked event tables as SQL tables: a virtual-table module ("gw_chunked") that decodes
// main.<name>_chunks on the fly, with tid / pid / ts constraints pushed down to the chunk index so
// a per-thread time window decodes only the chunks that overlap it. Rows can be INSERTed too
// (test fixtures, imports): they are buffered per thread and written as chunks at commit.
#pragma once

#include <sqlite3.h>

#include <cstddef>

#include "core/result.hpp"

namespace gpuwhy::store {

struct ChunkedTableOptions {
  // Memory a GROUP BY / DISTINCT may hold to group rows itself instead of SQLite's sorter; larger
  // tables (a whole trace's calls at ~16 bytes each for GROUP BY name: ~30 M) go to the sorter.
  size_t group_budget_bytes = size_t{512} << 20;
  // Distinct keys counted into groups before falling back to sorting the kept rows by key.
  size_t max_groups = size_t{1} << 16;
};

// Registers the module on `db` and creates TEMP virtual tables api_calls, offcpu, syscalls,
// block_io, reclaim and cpu_samples over the chunk tables of the main database. Call once per
// connection, before installing the views and before any authorizer.
Status attach_chunked_tables(sqlite3* db, const ChunkedTableOptions& options = {});

}  // namespace gpuwhy::store
