// SPDX-License-Identifier: Apache-2.0
// gw_chunked: the chunked event tables as SQL tables (see chunked_vtab.hpp).
//
// Reads. xBestIndex pushes down tid = ?, pid = ?, the ts bounds and rowid constraints, and takes
// over ORDER BY ts when tid is fixed. Three plans:
//   - rowid = ?: rowid is (chunk id << 12) | row, so one chunk by its primary key. The per-call
//     views look calls up this way (call_id = c.rowid).
//   - tid = ?: the thread's chunks come from an in-memory directory (one index range scan of
//     <name>_chunks per thread, kept until the file changes), sorted by ts_min, with the running
//     maximum of end_max. A window [lo, hi] then opens only the chunks that can overlap it (binary
//     searches, no SQL), and the rows come out merged in ts order, ascending or descending. That
//     is what makes the views' "last off-CPU interval before this call" (max(ts) ... ts < ?) one
//     chunk lookup instead of a walk over every earlier chunk of the thread.
//   - otherwise: a scan of <name>_chunks by id (rowid order), skipping chunks outside the ts
//     bounds without decoding them.
// Decoded chunks go through a small LRU cache per table, so correlated subqueries that probe the
// same thread for every outer row decode each chunk once.
//
// GROUP BY and DISTINCT on the table's own columns (sqlite3_vtab_distinct >= 1), when the rows a
// scan could return fit the memory budget: the scan's rows (only the columns the statement uses)
// are collected and put in group order here (grouped_rows.hpp), so SQLite aggregates them as they
// come instead of sorting them. Label columns (api_calls.name, family, category: HIDDEN, derived
// from api through apis) make the per-call views' GROUP BY name such a grouping, without a join.
//
// Writes (test fixtures, imports). INSERT only: rows are kept in memory, per statement savepoint,
// and written as chunks through a ChunkSink at xSync (as FTS5 writes its shadow tables), or just
// before this table is read in the same transaction. UPDATE and DELETE are refused: the event
// tables are append-only, and a chunk cannot be changed in place.
#include "store/chunked_vtab.hpp"

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
#include "store/chunked_tables.hpp"
#include "store/column_labels.hpp"
#include "store/grouped_rows.hpp"
#include "store/grouping_plan.hpp"
#include "store/int_range.hpp"
#include "store/sqlite_util.hpp"

namespace gpuwhy::store {
namespace {

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
  uint32_t ncols = 0;     // stored columns; the label columns follow them
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
      e.what += " (" + chunks + " id " + std::to_string(id) + ")";
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

  void drop_pending() {
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

// ---- cursors --------------------------------------------------------------------------------

// Rows [begin, end) of a chunk whose ts lies in [lo, hi]: rows are sorted by ts.
std::pair<uint32_t, uint32_t> ts_span(const Chunk& c, uint32_t ts_col, const Range& ts) {
  uint32_t begin = 0, end = c.rows;
  auto ts_at = [&](uint32_t r) { return c.value(ts_col, r); };
  if (ts.lo != INT64_MIN) {
    uint32_t lo = 0, hi = c.rows;
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      if (ts_at(mid) < ts.lo)
        lo = mid + 1;
      else
        hi = mid;
    }
    begin = lo;
  }
  if (ts.hi != INT64_MAX) {
    uint32_t lo = begin, hi = c.rows;
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      if (ts_at(mid) <= ts.hi)
        lo = mid + 1;
      else
        hi = mid;
    }
    end = lo;
  }
  return {begin, std::max(begin, end)};
}

// A chunk's rows still to emit: row steps by +1 (ascending) or -1 (descending) until stop.
struct Run {
  std::shared_ptr<const Chunk> chunk;
  int64_t id = 0;
  uint32_t seq = 0;  // position in the directory: a fixed order among equal timestamps
  int32_t row = 0, stop = 0, step = 1;
  bool done() const { return row == stop; }
};

struct Cursor : sqlite3_vtab_cursor {
  Table* table() const { return static_cast<Table*>(pVtab); }

  enum class Plan { kRowid, kThread, kScan, kGrouped };
  Plan plan = Plan::kScan;
  bool eof = true;
  Range ts, rowid;
  bool has_pid = false;
  int64_t pid = 0;
  bool desc = false;

  // Current row (every plan).
  std::shared_ptr<const Chunk> chunk;
  int64_t chunk_id = 0;
  int32_t row = 0;

  // kThread: a merge of the candidate chunks' runs in ts order.
  std::shared_ptr<const ThreadDir> dir;
  size_t first = 0, last = 0;  // candidates are dir->chunks[first, last)
  size_t next = 0;             // ascending: next to open; descending: one past it
  std::vector<Run> heap;

  // kScan: chunks by id; the current one's rows are [row, stop) stepping by step.
  Stmt scan;
  int scan_shape = -1;
  int32_t stop = 0, step = 1;

  // kGrouped: every row of one of the plans above, kept and put in group order.
  std::unique_ptr<GroupedRows> groups;
  KeptColumns kept;
  std::vector<int64_t> chunk_ids;  // a kept row's handle is (index here) << kRowBits | row

  void release_scan() {
    if (scan) table()->give_back(scan_shape, std::move(scan));
    scan_shape = -1;
  }

  int filter(int idx, const char* idx_str, int argc, sqlite3_value** argv) {
    Table& t = *table();
    release_scan();
    heap.clear();
    dir.reset();
    chunk.reset();
    groups.reset();
    eof = true;
    if (int rc = t.before_read(); rc != SQLITE_OK) return rc;

    Range tid, pids;
    ts = rowid = Range{};
    int a = 0;
    auto arg = [&](int bit) { return (idx & bit) && a < argc ? argv[a++] : nullptr; };
    auto strict = [&](int bit) { return (idx >> kStrictShift) & bit; };
    if (auto* v = arg(kTid)) narrow(tid, Op::kEq, v);
    if (auto* v = arg(kPid)) narrow(pids, Op::kEq, v);
    if (auto* v = arg(kTsEq)) narrow(ts, Op::kEq, v);
    if (auto* v = arg(kTsLo)) narrow(ts, strict(kTsLo) ? Op::kGt : Op::kGe, v);
    if (auto* v = arg(kTsHi)) narrow(ts, strict(kTsHi) ? Op::kLt : Op::kLe, v);
    if (auto* v = arg(kRowidEq)) narrow(rowid, Op::kEq, v);
    if (auto* v = arg(kRowidLo)) narrow(rowid, strict(kRowidLo) ? Op::kGt : Op::kGe, v);
    if (auto* v = arg(kRowidHi)) narrow(rowid, strict(kRowidHi) ? Op::kLt : Op::kLe, v);
    if (tid.empty() || pids.empty() || ts.empty() || rowid.empty()) return SQLITE_OK;
    has_pid = idx & kPid;
    pid = pids.lo;
    const int order = (idx >> kOrderShift) & 7;
    desc = order == kTsDesc || order == kRowidDesc;

    const int rc = (idx & kRowidEq) ? start_rowid()
                   : (idx & kTid)     ? start_thread(tid.lo)
                                      : start_scan(idx);
    if (rc != SQLITE_OK || order != kGrouped) return rc;
    auto spec = GroupingSpec::parse(idx_str);
    if (!spec) return t.fail("internal: bad grouping plan");
    return collect(*spec);
  }

  // ---- GROUP BY / DISTINCT: the rows of the plan started above, kept and put in key order

  int collect(const GroupingSpec& spec) {
    Table& t = *table();
    kept = kept_columns(*t.spec, spec.used);
    // A key part: a stored column's value, or a label's rank (NULL when the id has no label).
    struct Part {
      int slot;
      int label;  // -1: the stored column itself
    };
    std::vector<Part> parts;
    std::vector<bool> desc_keys;
    for (auto [col, d] : spec.keys) {
      if (col < 0 || static_cast<size_t>(col) >= kept.slot_of.size() || kept.slot_of[col] < 0)
        return t.fail("internal: grouping on a column the plan does not keep");
      const int label = col >= static_cast<int>(t.ncols) ? col - static_cast<int>(t.ncols) : -1;
      parts.push_back({kept.slot_of[col], label});
      desc_keys.push_back(d);
    }
    std::shared_ptr<const ColumnLabels> names = t.labels;
    auto key_of = [parts, names](const int64_t* v, uint32_t nulls, Key& out) {
      for (size_t i = 0; i < parts.size(); ++i) {
        const Part& p = parts[i];
        if ((nulls >> p.slot) & 1) {
          out[i] = {0, true};
        } else if (p.label < 0) {
          out[i] = {v[p.slot], false};
        } else {
          const int64_t r = names->rank(static_cast<size_t>(p.label), v[p.slot]);
          out[i] = {r, r < 0};
        }
      }
    };
    groups = std::make_unique<GroupedRows>(static_cast<uint32_t>(kept.stored.size()),
                                           std::move(desc_keys), key_of,
                                           t.options->max_groups);
    chunk_ids.clear();
    int64_t last_id = -1;
    uint32_t index = 0;
    int64_t values[32];
    while (!eof) {
      if (chunk_id != last_id) {
        // Chunks come in runs (a scan) or interleaved (a thread's merge): look the id up.
        auto at = std::find(chunk_ids.rbegin(), chunk_ids.rbegin() +
                                                    std::min<size_t>(chunk_ids.size(), 16),
                            chunk_id);
        if (at != chunk_ids.rbegin() + std::min<size_t>(chunk_ids.size(), 16)) {
          index = static_cast<uint32_t>(chunk_ids.rend() - at - 1);
        } else {
          if (chunk_ids.size() >= (size_t{1} << (32 - kRowBits)))
            return t.fail("too many chunks for one grouped scan; add a WHERE on tid, pid or ts");
          index = static_cast<uint32_t>(chunk_ids.size());
          chunk_ids.push_back(chunk_id);
        }
        last_id = chunk_id;
      }
      uint32_t nulls = 0;
      const auto r = static_cast<uint32_t>(row);
      for (size_t i = 0; i < kept.stored.size(); ++i) {
        const uint32_t c = kept.stored[i];
        if (chunk->is_null(c, r)) {
          nulls |= uint32_t{1} << i;
          values[i] = 0;
        } else {
          values[i] = chunk->value(c, r);
        }
      }
      groups->add(index << kRowBits | r, values, nulls);
      if (int rc = advance(); rc != SQLITE_OK) return rc;
    }
    groups->order();
    chunk.reset();
    plan = Plan::kGrouped;
    eof = groups->at_end();
    return SQLITE_OK;
  }

  // Column `col` of the current row (stored or label source): its value, or nullopt for NULL.
  std::optional<int64_t> stored_value(uint32_t col) const {
    const Table& t = *table();
    const uint32_t stored = col < t.ncols ? col : t.spec->labels[col - t.ncols].source;
    if (plan == Plan::kGrouped) {
      const int slot = kept.slot_of[col];
      if (slot < 0 || ((groups->nulls() >> slot) & 1)) return std::nullopt;
      return groups->values()[slot];
    }
    const auto r = static_cast<uint32_t>(row);
    if (chunk->is_null(stored, r)) return std::nullopt;
    return chunk->value(stored, r);
  }

  int64_t current_rowid() const {
    if (plan != Plan::kGrouped) return (chunk_id << kRowBits) | row;
    const uint32_t h = groups->handle();
    return (chunk_ids[h >> kRowBits] << kRowBits) | (h & (kChunkRows - 1));
  }

  // ---- rowid = ?

  int start_rowid() {
    plan = Plan::kRowid;
    const int64_t r = rowid.lo;
    if (r < 0) return SQLITE_OK;
    int rc;
    chunk = table()->chunk(r >> kRowBits, std::nullopt, &rc);
    if (rc != SQLITE_OK || !chunk) return rc;
    chunk_id = r >> kRowBits;
    row = static_cast<int32_t>(r & (kChunkRows - 1));
    eof = static_cast<uint32_t>(row) >= chunk->rows;
    return SQLITE_OK;
  }

  // ---- tid = ?

  int start_thread(int64_t tid) {
    plan = Plan::kThread;
    int rc;
    dir = table()->thread_dir(tid, &rc);
    if (rc != SQLITE_OK) return rc;
    const auto& cs = dir->chunks;
    // Chunks starting after the window cannot hold a row of it ...
    last = std::upper_bound(cs.begin(), cs.end(), ts.hi,
                            [](int64_t hi, const ChunkMeta& m) { return hi < m.ts_min; }) -
           cs.begin();
    // ... nor can those before the first whose running end_max reaches the window.
    first = std::lower_bound(dir->prefix_end.begin(), dir->prefix_end.begin() + last, ts.lo) -
            dir->prefix_end.begin();
    next = desc ? last : first;
    if ((rc = refill()) != SQLITE_OK) return rc;
    return settle();
  }

  int64_t run_ts(const Run& r) const { return r.chunk->value(table()->spec->ts, r.row); }

  // Heap order: the run whose current row comes first (ascending: smallest ts) on top.
  bool after(const Run& x, const Run& y) const {
    const int64_t a = run_ts(x), b = run_ts(y);
    if (a != b) return desc ? a < b : a > b;
    if (x.seq != y.seq) return desc ? x.seq < y.seq : x.seq > y.seq;
    return desc ? x.row < y.row : x.row > y.row;
  }
  void push_run(Run r) {
    heap.push_back(std::move(r));
    std::push_heap(heap.begin(), heap.end(),
                   [this](const Run& x, const Run& y) { return after(x, y); });
  }
  void pop_run() {
    std::pop_heap(heap.begin(), heap.end(),
                  [this](const Run& x, const Run& y) { return after(x, y); });
  }

  // Opens candidate chunk i as a run, if it has rows in the window.
  int open(size_t i) {
    const ChunkMeta& m = dir->chunks[i];
    if ((has_pid && m.pid != pid) || m.end_max < ts.lo) return SQLITE_OK;
    int rc;
    auto c = table()->chunk(m.id, std::nullopt, &rc);
    if (rc != SQLITE_OK || !c) return rc;  // gone: a directory older than the file
    auto [b, e] = ts_span(*c, table()->spec->ts, ts);
    if (b == e) return SQLITE_OK;
    Run r;
    r.id = m.id;
    r.seq = static_cast<uint32_t>(i);
    r.step = desc ? -1 : 1;
    r.row = desc ? static_cast<int32_t>(e) - 1 : static_cast<int32_t>(b);
    r.stop = desc ? static_cast<int32_t>(b) - 1 : static_cast<int32_t>(e);
    r.chunk = std::move(c);
    push_run(std::move(r));
    return SQLITE_OK;
  }

  // Opens candidates until no unopened one can hold a row that comes before the heap's top.
  // Ascending: unopened chunks start at or after their ts_min. Descending: every row of the
  // chunks below `next` has ts <= prefix_end[next - 1] (ts <= ts + dur <= end_max).
  int refill() {
    while (desc ? next > first : next < last) {
      if (!heap.empty()) {
        const int64_t top = run_ts(heap.front());
        if (desc ? dir->prefix_end[next - 1] <= top : dir->chunks[next].ts_min > top) break;
      }
      if (int rc = open(desc ? --next : next++); rc != SQLITE_OK) return rc;
    }
    return SQLITE_OK;
  }

  // Makes the heap's top the current row.
  int settle() {
    eof = heap.empty();
    if (eof) return SQLITE_OK;
    const Run& top = heap.front();
    chunk = top.chunk;
    chunk_id = top.id;
    row = top.row;
    return SQLITE_OK;
  }

  int next_thread() {
    pop_run();
    Run& r = heap.back();
    r.row += r.step;
    if (r.done())
      heap.pop_back();
    else
      std::push_heap(heap.begin(), heap.end(),
                     [this](const Run& x, const Run& y) { return after(x, y); });
    if (int rc = refill(); rc != SQLITE_OK) return rc;
    return settle();
  }

  // ---- everything else: chunks in id order

  int start_scan(int idx) {
    plan = Plan::kScan;
    Table& t = *table();
    // Chunk ids from the rowid bounds: rowid >> 12 is the chunk id.
    Range ids;
    if (rowid.lo != INT64_MIN) ids.at_least(rowid.lo < 0 ? 0 : rowid.lo >> kRowBits);
    if (rowid.hi != INT64_MAX) {
      if (rowid.hi < 0) return SQLITE_OK;
      ids.at_most(rowid.hi >> kRowBits);
    }
    const bool by_pid = idx & kPid, lo = ts.lo != INT64_MIN, hi = ts.hi != INT64_MAX;
    const bool id_lo = ids.lo != INT64_MIN, id_hi = ids.hi != INT64_MAX;
    scan_shape = by_pid | lo << 1 | hi << 2 | id_lo << 3 | id_hi << 4 | desc << 5;
    std::string sql = "SELECT id, data FROM " + t.chunks + " WHERE 1";
    if (by_pid) sql += " AND pid = ?1";
    if (lo) sql += " AND end_max >= ?2";  // a chunk's rows have ts in [ts_min, end_max]
    if (hi) sql += " AND ts_min <= ?3";
    if (id_lo) sql += " AND id >= ?4";
    if (id_hi) sql += " AND id <= ?5";
    sql += desc ? " ORDER BY id DESC" : " ORDER BY id";
    auto s = t.scan_stmt(scan_shape, sql);
    if (!s) return t.fail(s.error());
    scan = std::move(s.value());
    if (by_pid) scan.i64(1, pid);
    if (lo) scan.i64(2, ts.lo);
    if (hi) scan.i64(3, ts.hi);
    if (id_lo) scan.i64(4, ids.lo);
    if (id_hi) scan.i64(5, ids.hi);
    return next_chunk();
  }

  // Steps to the next chunk with rows in the bounds and positions on its first such row.
  int next_chunk() {
    Table& t = *table();
    sqlite3_stmt* s = scan.get();
    for (;;) {
      const int step_rc = sqlite3_step(s);
      if (step_rc == SQLITE_DONE) {
        eof = true;
        chunk.reset();
        release_scan();
        return SQLITE_OK;
      }
      if (step_rc != SQLITE_ROW) return t.fail_sqlite("reading " + t.chunks);
      const int64_t id = sqlite3_column_int64(s, 0);
      int rc;
      auto c = t.chunk(id, Table::column_blob(s, 1), &rc);
      if (rc != SQLITE_OK) return rc;
      auto [b, e] = ts_span(*c, t.spec->ts, ts);
      // Rowid bounds cut the first and last chunks of the id range.
      const int64_t base = id << kRowBits;
      if (rowid.lo > base)
        b = static_cast<uint32_t>(std::min<int64_t>(std::max<int64_t>(b, rowid.lo - base), e));
      if (rowid.hi < base + static_cast<int64_t>(c->rows))
        e = static_cast<uint32_t>(std::max<int64_t>(b, std::min<int64_t>(e, rowid.hi - base + 1)));
      if (b == e) continue;
      chunk = std::move(c);
      chunk_id = id;
      step = desc ? -1 : 1;
      row = desc ? static_cast<int32_t>(e) - 1 : static_cast<int32_t>(b);
      stop = desc ? static_cast<int32_t>(b) - 1 : static_cast<int32_t>(e);
      eof = false;
      return SQLITE_OK;
    }
  }

  int advance() {
    switch (plan) {
      case Plan::kRowid:
        eof = true;
        return SQLITE_OK;
      case Plan::kThread:
        return next_thread();
      case Plan::kScan:
        row += step;
        return row == stop ? next_chunk() : SQLITE_OK;
      case Plan::kGrouped:
        groups->next();
        eof = groups->at_end();
        return SQLITE_OK;
    }
    return SQLITE_OK;
  }
};

// ---- module methods -------------------------------------------------------------------------

// C++ exceptions must not cross SQLite's C frames: the only ones expected are allocation failures.
template <class F>
int guarded(sqlite3_vtab* vt, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return SQLITE_NOMEM;
  } catch (const std::exception& e) {
    return static_cast<Table*>(vt)->fail(e.what());
  }
}

std::string unquote(std::string s) {
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"' || s.front() == '`') &&
      s.back() == s.front())
    return s.substr(1, s.size() - 2);
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') return s.substr(1, s.size() - 2);
  return s;
}

int connect(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
            char** err) {
  // argv: module, database, table name, then our one argument: the logical table.
  const ChunkedTable* spec = argc == 4 ? find_chunked_table(unquote(argv[3])) : nullptr;
  if (!spec) {
    *err = sqlite3_mprintf(
        "gw_chunked takes one argument, the event table to present "
        "(api_calls, offcpu, syscalls, block_io, reclaim or cpu_samples)");
    return SQLITE_ERROR;
  }
  std::string decl = "CREATE TABLE x(";
  for (size_t c = 0; c < spec->columns.size(); ++c) {
    decl += (c ? ", " : "") + std::string(spec->columns[c]) + " INTEGER";
  }
  for (const ChunkedLabel& l : spec->labels) decl += ", " + std::string(l.name) + " TEXT HIDDEN";
  decl += ")";
  if (int rc = sqlite3_declare_vtab(db, decl.c_str()); rc != SQLITE_OK) {
    *err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
    return rc;
  }
  try {
    auto* t = new Table();
    t->db = db;
    t->spec = spec;
    t->options = static_cast<const ChunkedTableOptions*>(aux);
    t->chunks = "main." + spec->chunks();
    t->ncols = static_cast<uint32_t>(spec->columns.size());
    t->nlabels = static_cast<uint32_t>(spec->labels.size());
    if (spec->name == "api_calls")
      t->zero_default = static_cast<uint32_t>(
          std::find(spec->columns.begin(), spec->columns.end(), "flags") - spec->columns.begin());
    *out = t;
  } catch (const std::bad_alloc&) {
    return SQLITE_NOMEM;
  }
  return SQLITE_OK;
}

int disconnect(sqlite3_vtab* vt) {
  delete static_cast<Table*>(vt);
  return SQLITE_OK;
}

// Expected rows of a full scan, for costs only: what matters is that the index plans are far
// cheaper, so joins probe the event tables by thread instead of scanning them per outer row.
constexpr double kScanRows = 1e6;

int best_index(sqlite3_vtab* vt, sqlite3_index_info* info) {
  const ChunkedTable& s = *static_cast<Table*>(vt)->spec;
  int slot[kArgs];
  std::fill(slot, slot + kArgs, -1);
  int strict = 0;
  auto take = [&](int bit, int i, bool is_strict) {
    const int a = std::countr_zero(static_cast<unsigned>(bit));
    if (slot[a] >= 0) return;  // one constraint per argument; SQLite checks the others
    slot[a] = i;
    if (is_strict) strict |= bit;
  };
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    const auto op = op_of(c.op);
    if (!c.usable || !op) continue;
    const bool eq = *op == Op::kEq, gt = *op == Op::kGt || *op == Op::kGe;
    const bool is_strict = *op == Op::kGt || *op == Op::kLt;
    if (c.iColumn == static_cast<int>(s.tid) && eq)
      take(kTid, i, false);
    else if (c.iColumn == static_cast<int>(s.pid) && eq)
      take(kPid, i, false);
    else if (c.iColumn == static_cast<int>(s.ts))
      take(eq ? kTsEq : gt ? kTsLo : kTsHi, i, is_strict);
    else if (c.iColumn == -1)
      take(eq ? kRowidEq : gt ? kRowidLo : kRowidHi, i, is_strict);
  }
  int idx = 0, argv = 0;
  for (int a = 0; a < kArgs; ++a) {
    if (slot[a] < 0) continue;
    info->aConstraintUsage[slot[a]].argvIndex = ++argv;
    info->aConstraintUsage[slot[a]].omit = 0;  // SQLite re-checks: pushdown only narrows
    idx |= 1 << a;
  }
  idx |= strict << kStrictShift;

  // ORDER BY: ts when the thread is fixed (the merge emits in ts order), rowid otherwise.
  const bool by_tid = (idx & kTid) && !(idx & kRowidEq);
  int order = kAnyOrder;
  const int n = info->nOrderBy;
  const auto* ob = info->aOrderBy;
  if (idx & kRowidEq) {
    info->orderByConsumed = 1;  // at most one row
  } else if (by_tid && n >= 1 && ob[n - 1].iColumn == static_cast<int>(s.ts) &&
             (n == 1 || (n == 2 && ob[0].iColumn == static_cast<int>(s.tid)))) {
    order = ob[n - 1].desc ? kTsDesc : kTsAsc;
  } else if (!by_tid && n == 1 && ob[0].iColumn == -1) {
    order = ob[0].desc ? kRowidDesc : kRowidAsc;
  }
  if (order == kAnyOrder && !(idx & kRowidEq) && n >= 1 && sqlite3_vtab_distinct(info) >= 1)
    if (auto g = grouping_for(*static_cast<Table*>(vt)->spec, info,
                              static_cast<Table*>(vt)->options->group_budget_bytes,
                              [vt] { return static_cast<Table*>(vt)->stored_rows(); })) {
      order = kGrouped;
      info->idxStr = sqlite3_mprintf("%s", g->text().c_str());
      info->needToFreeIdxStr = 1;
    }
  if (order != kAnyOrder) info->orderByConsumed = 1;
  idx |= order << kOrderShift;
  info->idxNum = idx;

  double rows = kScanRows, cost;
  if (idx & kRowidEq) {
    rows = 1;
    cost = 10;
  } else {
    if (idx & kTid) rows /= 500;
    if ((idx & kPid) && !(idx & kTid)) rows /= 20;
    if (idx & kTsEq)
      rows /= 1000;
    else if ((idx & kTsLo) && (idx & kTsHi))
      rows /= 100;
    else if (idx & (kTsLo | kTsHi))
      rows /= 4;
    if (!(idx & kTid) && (idx & (kRowidLo | kRowidHi)))
      rows /= (idx & kRowidLo) && (idx & kRowidHi) ? 100 : 4;
    rows = std::max(rows, 1.0);
    // A thread plan reads its directory from memory; a scan walks the whole chunk table.
    cost = rows + ((idx & kTid) ? 20 : kScanRows / 100);
  }
  info->estimatedRows = static_cast<sqlite3_int64>(rows);
  info->estimatedCost = cost;
  return SQLITE_OK;
}

int open_cursor(sqlite3_vtab* vt, sqlite3_vtab_cursor** out) {
  return guarded(vt, [&] {
    *out = new Cursor();
    return SQLITE_OK;
  });
}

int close_cursor(sqlite3_vtab_cursor* cur) {
  auto* c = static_cast<Cursor*>(cur);
  c->release_scan();
  delete c;
  return SQLITE_OK;
}

int filter(sqlite3_vtab_cursor* cur, int idx, const char* idx_str, int argc,
           sqlite3_value** argv) {
  auto* c = static_cast<Cursor*>(cur);
  return guarded(cur->pVtab, [&] { return c->filter(idx, idx_str, argc, argv); });
}

int next(sqlite3_vtab_cursor* cur) {
  auto* c = static_cast<Cursor*>(cur);
  return guarded(cur->pVtab, [&] { return c->advance(); });
}

int eof(sqlite3_vtab_cursor* cur) { return static_cast<Cursor*>(cur)->eof; }

int column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int col) {
  const auto* c = static_cast<Cursor*>(cur);
  const Table& t = *c->table();
  const auto v = c->stored_value(static_cast<uint32_t>(col));
  const std::string* label = nullptr;
  if (static_cast<uint32_t>(col) < t.ncols) {
    if (v) return sqlite3_result_int64(ctx, *v), SQLITE_OK;
  } else if (v && t.labels) {
    label = t.labels->text(static_cast<uint32_t>(col) - t.ncols, *v);
  }
  // The snapshot outlives the statement (retired, not freed): SQLite may keep the pointer.
  if (label)
    sqlite3_result_text(ctx, label->data(), static_cast<int>(label->size()), SQLITE_STATIC);
  else
    sqlite3_result_null(ctx);
  return SQLITE_OK;
}

int rowid(sqlite3_vtab_cursor* cur, sqlite_int64* out) {
  *out = static_cast<Cursor*>(cur)->current_rowid();
  return SQLITE_OK;
}

int update(sqlite3_vtab* vt, int argc, sqlite3_value** argv, sqlite_int64* rowid_out) {
  auto* t = static_cast<Table*>(vt);
  if (argc == 1 || sqlite3_value_type(argv[0]) != SQLITE_NULL)
    return t->fail(t->name() + " rows cannot be changed: trace event tables are append-only");
  if (argc != 2 + static_cast<int>(t->ncols + t->nlabels))
    return t->fail("internal: unexpected INSERT shape");
  for (uint32_t j = 0; j < t->nlabels; ++j)
    if (sqlite3_value_type(argv[2 + t->ncols + j]) != SQLITE_NULL)
      return t->fail(t->name() + "." + std::string(t->spec->labels[j].name) +
                     " cannot be set: it is read from " + std::string(t->spec->labels[j].lookup));
  *rowid_out = 0;  // the row gets its rowid when its chunk is written
  return guarded(vt, [&] { return t->insert(argv + 2); });
}

int begin(sqlite3_vtab*) { return SQLITE_OK; }

int sync(sqlite3_vtab* vt) {
  auto* t = static_cast<Table*>(vt);
  return guarded(vt, [&] {
    if (t->pending_rows() == 0) return SQLITE_OK;
    if (auto st = t->write_pending(); !st) return t->fail(st.error());
    return SQLITE_OK;
  });
}

int commit(sqlite3_vtab* vt) {
  auto* t = static_cast<Table*>(vt);
  t->pending_values.clear();  // written in xSync
  t->pending_nulls.clear();
  t->savepoints.clear();
  return SQLITE_OK;
}

int rollback(sqlite3_vtab* vt) {
  static_cast<Table*>(vt)->drop_pending();
  return SQLITE_OK;
}

// Statement and SAVEPOINT rollbacks: a failed INSERT ... SELECT leaves none of its rows behind.
int savepoint(sqlite3_vtab* vt, int level) {
  auto* t = static_cast<Table*>(vt);
  return guarded(vt, [&] {
    t->savepoints.resize(static_cast<size_t>(level) + 1, t->pending_rows());
    t->savepoints[static_cast<size_t>(level)] = t->pending_rows();
    return SQLITE_OK;
  });
}

int release(sqlite3_vtab* vt, int level) {
  auto* t = static_cast<Table*>(vt);
  if (static_cast<size_t>(level) < t->savepoints.size())
    t->savepoints.resize(static_cast<size_t>(level));
  return SQLITE_OK;
}

int rollback_to(sqlite3_vtab* vt, int level) {
  auto* t = static_cast<Table*>(vt);
  if (static_cast<size_t>(level) < t->savepoints.size()) {
    const size_t keep = std::min(t->savepoints[static_cast<size_t>(level)], t->pending_rows());
    t->pending_nulls.resize(keep);
    t->pending_values.resize(keep * t->ncols);
  }
  return SQLITE_OK;
}

sqlite3_module make_module() {
  sqlite3_module m{};
  m.iVersion = 2;       // savepoints
  m.xCreate = connect;  // the same function: the data lives in main.<name>_chunks, not here
  m.xConnect = connect;
  m.xBestIndex = best_index;
  m.xDisconnect = disconnect;
  m.xDestroy = disconnect;  // DROP TABLE temp.api_calls leaves the chunks alone
  m.xOpen = open_cursor;
  m.xClose = close_cursor;
  m.xFilter = filter;
  m.xNext = next;
  m.xEof = eof;
  m.xColumn = column;
  m.xRowid = rowid;
  m.xUpdate = update;
  m.xBegin = begin;
  m.xSync = sync;
  m.xCommit = commit;
  m.xRollback = rollback;
  m.xSavepoint = savepoint;
  m.xRelease = release;
  m.xRollbackTo = rollback_to;
  return m;
}

const sqlite3_module kModule = make_module();

}  // namespace

Status attach_chunked_tables(sqlite3* db, const ChunkedTableOptions& options) {
  auto* aux = new ChunkedTableOptions(options);
  if (sqlite3_create_module_v2(db, "gw_chunked", &kModule, aux, [](void* p) {
        delete static_cast<ChunkedTableOptions*>(p);
      }) != SQLITE_OK)
    return sqlite_error(db, "registering the event tables");
  for (const ChunkedTable& t : chunked_tables()) {
    const std::string name(t.name);
    auto present = has_table(db, t.chunks());
    if (!present) return present.error();
    if (!*present) continue;  // a table added after the file was written
    if (auto st = exec(
            db,
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp." + name + " USING gw_chunked(" + name + ")",
            "creating the " + name + " table");
        !st)
      return st;
  }
  return {};
}

}  // namespace gpuwhy::store
