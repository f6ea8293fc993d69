// SPDX-License-Identifier: Apache-2.0
// gw_chunked's table (chunked_vtab.cpp): the plan encoding xBestIndex and xFilter share, the
// decoded-chunk cache, thread directories, label texts, and the rows INSERTed but not yet
// written as chunks. Private to the store module.
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/chunk_codec.hpp"
#include "store/chunk_index.hpp"
#include "store/chunked_tables.hpp"
#include "store/chunked_vtab.hpp"
#include "store/column_labels.hpp"
#include "store/grouped_rows.hpp"
#include "store/grouping_plan.hpp"
#include "store/int_range.hpp"
#include "store/sqlite_util.hpp"

namespace gpuwhy::store::vtab {

// rowid = chunk id << kRowBits | row: row ids stay stable as long as the chunk does.
constexpr int kRowBits = 12;
static_assert((1u << kRowBits) == kChunkRows, "a chunk's rows must fit the rowid's low bits");
// Decoded chunks kept per table. A correlated join works on one thread of one table at a time,
// and a chunk is ~0.6 MiB decoded (4096 rows x 18 columns): 16 cover a few threads' windows.
constexpr size_t kCachedChunks = 16;
// Threads whose chunk directory is kept per table (a directory is ~40 bytes per chunk).
constexpr size_t kMaxDirectories = 4096;

// ---- constraints ----------------------------------------------------------------------------

// idxNum: which arguments xFilter gets (in this order), how the bounds compare, what order the
// rows must come out in.
enum ArgBit : int {
  kTid = 1 << 0,
  kPid = 1 << 1,
  kTsEq = 1 << 2,
  kTsLo = 1 << 3,
  kTsHi = 1 << 4,
  kRowidEq = 1 << 5,
  kRowidLo = 1 << 6,
  kRowidHi = 1 << 7,
};
constexpr int kArgs = 8;
// Set when the bound of that argument is strict (> or <).
constexpr int kStrictShift = 8;
// kGrouped: idxStr says the key (grouping_spec).
enum Order : int {
  kAnyOrder = 0,
  kTsAsc = 1,
  kTsDesc = 2,
  kRowidAsc = 3,
  kRowidDesc = 4,
  kGrouped = 5
};
constexpr int kOrderShift = 16;

// ---- decoded chunks -------------------------------------------------------------------------

// LRU of decoded chunks by id. Entries are shared: a cursor keeps its chunk alive after eviction.
// Chunk ids are never reused for other rows once committed (append-only tables); the table
// clears the cache when this connection changes the database or rolls back.
class ChunkCache {
 public:
  std::shared_ptr<const Chunk> find(int64_t id) {
    for (Entry& e : entries_)
      if (e.id == id) {
        e.used = ++clock_;
        return e.chunk;
      }
    return nullptr;
  }
  // A buffer to decode into: the least recently used entry's when nothing else holds it (its
  // vectors keep their capacity), else a new one.
  std::shared_ptr<Chunk> spare() {
    if (entries_.size() < kCachedChunks) return std::make_shared<Chunk>();
    auto lru = std::min_element(entries_.begin(), entries_.end(),
                                [](const Entry& a, const Entry& b) { return a.used < b.used; });
    std::shared_ptr<Chunk> buf = std::move(lru->chunk);
    entries_.erase(lru);
    return buf.use_count() == 1 ? buf : std::make_shared<Chunk>();
  }
  void put(int64_t id, std::shared_ptr<Chunk> chunk) {
    if (entries_.size() >= kCachedChunks) (void)spare();
    entries_.push_back({id, std::move(chunk), ++clock_});
  }
  void clear() { entries_.clear(); }

 private:
  struct Entry {
    int64_t id;
    std::shared_ptr<Chunk> chunk;
    uint64_t used;
  };
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

// One chunk row of <name>_chunks, without its data.
struct ChunkMeta {
  int64_t id, pid, ts_min, end_max;
};

// A thread's chunks, sorted by (ts_min, id); prefix_end[i] = max end_max of chunks[0..i].
struct ThreadDir {
  std::vector<ChunkMeta> chunks;
  std::vector<int64_t> prefix_end;
};

// ---- the table ------------------------------------------------------------------------------

struct Table : sqlite3_vtab {
  sqlite3* db = nullptr;
  const ChunkedTable* spec = nullptr;
  const ChunkedTableOptions* options = nullptr;
  std::string chunks;  // "main.api_calls_chunks"
  uint32_t ncols = 0;  // stored columns; the label columns follow them
  uint32_t nlabels = 0;
  // api_calls.flags is "NOT NULL DEFAULT 0" (docs/schema.md). SQLite applies no DEFAULT to a
  // virtual table, so a NULL there (left out of the INSERT) is stored as the 0 it stands for.
  uint32_t zero_default = UINT32_MAX;

  // Reads.
  Stmt data_stmt;                                         // data of one chunk by id
  Stmt dir_stmt;                                          // a thread's chunks
  std::unordered_map<int, std::vector<Stmt>> idle_scans;  // scan statements by shape, unused
  ChunkCache cache;
  std::unordered_map<int64_t, std::shared_ptr<const ThreadDir>> dirs;
  // The label texts; a snapshot replaced by a changed one stays alive (retired), because xColumn
  // hands SQLite pointers into it.
  std::shared_ptr<const ColumnLabels> labels;
  std::vector<std::shared_ptr<const ColumnLabels>> retired;
  int64_t seen_changes = -1;
  unsigned data_version = 0;
  // Chunks whose index row was checked against its index_crc (chunk_index.hpp), by id: up to
  // this one. Rows are appended with higher ids, so each check reads only the new ones.
  int64_t verified_to = 0;
  std::optional<bool> has_crc;  // the file's chunk table has index_crc (known on first check)
  std::optional<unsigned> verified_version;  // the data_version of the last check

  // Writes: rows inserted in this transaction, not yet in a chunk.
  std::vector<int64_t> pending_values;  // ncols per row
  std::vector<uint64_t> pending_nulls;
  std::vector<size_t> savepoints;  // pending row count at each open savepoint level
  std::optional<ChunkSink> sink;

  int fail(const std::string& message) {
    sqlite3_free(zErrMsg);
    zErrMsg = sqlite3_mprintf("%s", message.c_str());
    return SQLITE_ERROR;
  }
  int fail(const Error& e) { return fail(e.line()); }
  int fail_sqlite(std::string_view what) { return fail(sqlite_error(db, what)); }

  std::string name() const { return std::string(spec->name); }
  size_t pending_rows() const { return pending_nulls.size(); }

  void forget_reads() {
    cache.clear();
    dirs.clear();
  }

  // Before every read: rows inserted earlier in this transaction become chunks (so they can be
  // read back, as from any table), and what was cached from a changed file is dropped.
  int before_read() {
    if (pending_rows() > 0)
      if (auto st = write_pending(); !st) return fail(st.error());
    // This connection's own changes may reuse chunk ids (after a rollback) or replace a chunk:
    // drop everything. Other connections only append chunks: directories go stale, chunks not.
    const int64_t changes = sqlite3_total_changes64(db);
    if (changes != seen_changes) {
      forget_reads();
      seen_changes = changes;
    }
    // The data version is current only inside a read transaction; outside one (the first read
    // of a statement), reload the directories rather than trust it.
    unsigned version = 0;
    const bool in_txn = sqlite3_txn_state(db, "main") != SQLITE_TXN_NONE;
    sqlite3_file_control(db, "main", SQLITE_FCNTL_DATA_VERSION, &version);
    const bool stale = !in_txn || version != data_version || (nlabels > 0 && !labels);
    if (stale) dirs.clear();
    data_version = version;
    if (stale && nlabels > 0) return refresh_labels();
    return SQLITE_OK;
  }

  int refresh_labels() {
    auto fresh = ColumnLabels::load(db, spec->labels);
    if (!fresh) return fail(fresh.error());
    if (labels && labels->same_as(*fresh.value())) return SQLITE_OK;
    if (labels) retired.push_back(std::move(labels));
    labels = std::move(fresh.value());
    return SQLITE_OK;
  }

  // Rows in the table: what a grouped scan could have to hold. -1 when it cannot be read.
  int64_t stored_rows() {
    auto s = Stmt::prepare(db, "SELECT coalesce(sum(rows), 0) FROM " + chunks, "counting rows");
    if (!s || sqlite3_step(s.value().get()) != SQLITE_ROW) return -1;
    return sqlite3_column_int64(s.value().get(), 0);
  }

  // Prepares `slot` on first use. SQLITE_OK, or the error (in zErrMsg).
  int prepare_once(Stmt& slot, const std::string& sql) {
    if (slot) return SQLITE_OK;
    auto s = Stmt::prepare(db, sql, "reading " + chunks);
    if (!s) return fail(s.error());
    slot = std::move(s.value());
    return SQLITE_OK;
  }

  // The decoded chunk `id`: from the cache, else decoded from `blob`, else from its row, read
  // here. Null with *rc == SQLITE_OK when there is no such chunk.
  std::shared_ptr<const Chunk> chunk(int64_t id, std::optional<std::string_view> blob, int* rc) {
    if (auto hit = cache.find(id)) {
      *rc = SQLITE_OK;
      return hit;
    }
    std::shared_ptr<const Chunk> out;
    if (blob) {
      *rc = decode(id, *blob, &out);
      return out;
    }
    if ((*rc = prepare_once(data_stmt, "SELECT data FROM " + chunks + " WHERE id = ?")))
      return nullptr;
    data_stmt.i64(1, id);
    const int step = sqlite3_step(data_stmt.get());
    if (step == SQLITE_ROW)
      *rc = decode(id, column_blob(data_stmt.get(), 0), &out);
    else if (step != SQLITE_DONE)
      *rc = fail_sqlite("reading " + chunks);
    sqlite3_reset(data_stmt.get());
    return out;
  }

  static std::string_view column_blob(sqlite3_stmt* s, int col) {
    const void* p = sqlite3_column_blob(s, col);
    return {static_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(s, col))};
  }

  // Decodes chunk `id` into a cache entry. Damage is an SQL error naming the chunk.
  int decode(int64_t id, std::string_view blob, std::shared_ptr<const Chunk>* out) {
    std::shared_ptr<Chunk> buf = cache.spare();
    if (Status st = decode_chunk(blob, *buf); !st) {
      Error e = st.error();
      e.what += " (" + chunks + " id " + std::to_string(id) + where_chunk(id) + ")";
      return fail(e);
    }
    // Row numbers must fit the rowid's low bits (no writer makes bigger chunks).
    if (buf->rows > kChunkRows)
      return fail("corrupt event chunk in the trace file: " + chunks + " id " + std::to_string(id) +
                  " holds " + std::to_string(buf->rows) + " rows (at most " +
                  std::to_string(kChunkRows) + ")");
    cache.put(id, buf);
    *out = std::move(buf);
    return SQLITE_OK;
  }

  // ": thread T, ts A .. B" of chunk `id`, for naming the part of the trace that is damaged.
  std::string where_chunk(int64_t id) {
    auto s = Stmt::prepare(db, "SELECT tid, ts_min, end_max FROM " + chunks + " WHERE id = ?",
                           "reading " + chunks);
    if (!s) return {};
    s->i64(1, id);
    std::string out;
    if (sqlite3_step(s->get()) == SQLITE_ROW)
      out = ": thread " + std::to_string(sqlite3_column_int64(s->get(), 0)) + ", ts " +
            std::to_string(sqlite3_column_int64(s->get(), 1)) + " .. " +
            std::to_string(sqlite3_column_int64(s->get(), 2));
    return out;
  }

  // The chunks of thread `tid`, loaded with one index range scan and kept until the file changes.
  std::shared_ptr<const ThreadDir> thread_dir(int64_t tid, int* rc) {
    *rc = SQLITE_OK;
    if (auto it = dirs.find(tid); it != dirs.end()) return it->second;
    if ((*rc = prepare_once(dir_stmt, "SELECT id, pid, ts_min, end_max FROM " + chunks +
                                          " WHERE tid = ? ORDER BY ts_min, id")))
      return nullptr;
    auto dir = std::make_shared<ThreadDir>();
    dir_stmt.i64(1, tid);
    int step;
    sqlite3_stmt* s = dir_stmt.get();
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
      dir->chunks.push_back({sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                             sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3)});
      const int64_t end = dir->chunks.back().end_max;
      dir->prefix_end.push_back(dir->prefix_end.empty() ? end
                                                        : std::max(end, dir->prefix_end.back()));
    }
    sqlite3_reset(s);
    if (step != SQLITE_DONE) {
      *rc = fail_sqlite("reading " + chunks);
      return nullptr;
    }
    if (dirs.size() >= kMaxDirectories) dirs.clear();
    dirs.emplace(tid, dir);
    return dir;
  }

  // A scan statement of the given shape (see Cursor::start_scan), unused by other cursors.
  Result<Stmt> scan_stmt(int shape, const std::string& sql) {
    auto& idle = idle_scans[shape];
    if (!idle.empty()) {
      Stmt s = std::move(idle.back());
      idle.pop_back();
      return s;
    }
    return Stmt::prepare(db, sql, "reading " + chunks);
  }
  void give_back(int shape, Stmt s) {
    sqlite3_reset(s.get());
    sqlite3_clear_bindings(s.get());
    idle_scans[shape].push_back(std::move(s));
  }

  // ---- writes

  // The sink is prepared on first use: a reader's connection never writes.
  Status open_sink() {
    if (sink) return {};
    Result<ChunkSink> s = ChunkSink::prepare(db, *spec);
    if (!s.ok()) return s.error();
    sink.emplace(std::move(s.value()));
    return {};
  }

  Status write_pending() {
    if (Status st = open_sink(); !st) return st;
    RowValues row;
    Status result;
    for (size_t r = 0; r < pending_rows() && result; ++r) {
      std::copy_n(pending_values.data() + r * ncols, ncols, row.v);
      row.nulls = pending_nulls[r];
      result = sink->add(row, 0);
    }
    if (result) result = sink->flush_all();
    pending_values.clear();
    pending_nulls.clear();
    std::fill(savepoints.begin(), savepoints.end(), 0);
    if (!result) sink.reset();  // what it still buffers is lost with the failed transaction
    return result;
  }

  // Before a plan lets the index rows pick chunks (a thread, a time range, time order): a row
  // whose index_crc fails is damage, named like a chunk whose data fails its checksum.
  int verify_index() {
    if (!has_crc) {
      auto has = has_index_crc(db, std::string(spec->chunks()));
      if (!has) return fail(has.error());
      has_crc = *has;
    }
    if (!*has_crc) return SQLITE_OK;  // an older file: its index cannot be verified
    // Once per read transaction and data version: a correlated join filters thousands of times.
    const bool in_txn = sqlite3_txn_state(db, "main") != SQLITE_TXN_NONE;
    if (in_txn && verified_version == std::optional<unsigned>(data_version)) return SQLITE_OK;
    auto s = Stmt::prepare(db,
                           "SELECT id, pid, tid, ts_min, end_max, rows, index_crc FROM " + chunks +
                               " WHERE id > ? ORDER BY id",
                           "reading " + chunks);
    if (!s) return fail(s.error());
    s->i64(1, verified_to);
    int step;
    while ((step = sqlite3_step(s->get())) == SQLITE_ROW) {
      auto col = [&](int c) { return sqlite3_column_int64(s->get(), c); };
      if (!index_crc_matches({col(1), col(2), col(3), col(4), col(5)}, col(6)))
        return fail(chunk_index_damaged(chunks, col(0)));
      verified_to = col(0);
    }
    if (step != SQLITE_DONE) return fail_sqlite("reading " + chunks);
    if (in_txn) verified_version = data_version;
    return SQLITE_OK;
  }

  void drop_pending() {
    verified_to = 0;  // ids of rolled-back chunks may be used again
    verified_version.reset();
    pending_values.clear();
    pending_nulls.clear();
    savepoints.clear();
    sink.reset();
    forget_reads();  // chunks read in the transaction may be gone, their ids reused
  }

  // One INSERTed row into the pending rows; argv are its column values.
  int insert(sqlite3_value** argv) {
    const size_t at = pending_values.size();
    pending_values.resize(at + ncols, 0);
    uint64_t nulls = 0;
    for (uint32_t c = 0; c < ncols; ++c) {
      const bool key = c == spec->ts || c == spec->dur || c == spec->pid || c == spec->tid;
      int64_t v = 0;
      switch (integer_value(argv[c], &v)) {
        case kNull:
          if (key) return reject(at, std::string(spec->columns[c]) + " may not be NULL");
          if (c == zero_default) break;  // stays 0
          nulls |= uint64_t{1} << c;
          break;
        case kNotInteger:
          return reject(at, std::string(spec->columns[c]) + " must be an integer");
        case kInteger:
          pending_values[at + c] = v;
          break;
      }
    }
    // The chunk index keeps end_max = max(ts + dur); ts pushdown relies on end_max >= ts.
    const int64_t ts = pending_values[at + spec->ts], dur = pending_values[at + spec->dur];
    int64_t end = 0;
    if (dur < 0) return reject(at, std::string(spec->columns[spec->dur]) + " may not be negative");
    if (__builtin_add_overflow(ts, dur, &end))
      return reject(at, "ts + dur does not fit in 64 bits");
    pending_nulls.push_back(nulls);
    return SQLITE_OK;
  }

  enum Kind { kNull, kInteger, kNotInteger };
  static Kind integer_value(sqlite3_value* v, int64_t* out) {
    int type = sqlite3_value_type(v);
    sqlite3_value* copy = nullptr;
    if (type == SQLITE_TEXT && (copy = sqlite3_value_dup(v))) {
      type = sqlite3_value_numeric_type(copy);  // '42' is 42, as INTEGER affinity would store it
      v = copy;
    }
    Kind k = kNotInteger;
    if (type == SQLITE_NULL) {
      k = kNull;
    } else if (type == SQLITE_INTEGER) {
      *out = sqlite3_value_int64(v);
      k = kInteger;
    } else if (type == SQLITE_FLOAT) {
      // 2e6 is an integer in a REAL's clothes (fixtures compute times in floating point).
      const double d = sqlite3_value_double(v);
      if (std::floor(d) == d && d >= -kTwo63 && d < kTwo63) {
        *out = static_cast<int64_t>(d);
        k = kInteger;
      }
    }
    sqlite3_value_free(copy);
    return k;
  }

  int reject(size_t at, const std::string& why) {
    pending_values.resize(at);
    return fail(name() + "." + why);
  }
};

}  // namespace gpuwhy::store::vtab
