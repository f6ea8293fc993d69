// SPDX-License-Identifier: Apache-2.0
// The chunked event tables as SQL tables: a virtual-table module ("gw_chunked") that decodes
// main.<name>_chunks on the fly, with tid / pid / ts constraints pushed down to the chunk index so
// a per-thread time window decodes only the chunks that overlap it. Rows can be INSERTed too
// (test fixtures, imports): they are buffered per thread and written as chunks at commit.
#pragma once

#include <sqlite3.h>

#include "core/result.hpp"

namespace gpuwhy::store {

// Registers the module on `db` and creates TEMP virtual tables api_calls, offcpu, syscalls,
// block_io and reclaim over the chunk tables of the main database. Call once per connection,
// before installing the views and before any authorizer.
Status attach_chunked_tables(sqlite3* db);

}  // namespace gpuwhy::store
