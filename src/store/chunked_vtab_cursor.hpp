// SPDX-License-Identifier: Apache-2.0
// gw_chunked's cursor (chunked_vtab.cpp): the rowid, thread and scan plans, and the grouped plan
// that collects another plan's rows and emits them in group order. Private to the store module.
#pragma once

#include "store/chunked_vtab_table.hpp"

namespace gpuwhy::store::vtab {

// ---- cursors --------------------------------------------------------------------------------

// Rows [begin, end) of a chunk whose ts lies in [lo, hi]: rows are sorted by ts.
inline std::pair<uint32_t, uint32_t> ts_span(const Chunk& c, uint32_t ts_col, const Range& ts) {
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
    const bool index_picks =
        (idx & (kTid | kPid | kTsEq | kTsLo | kTsHi)) || order == kTsAsc || order == kTsDesc;
    if (index_picks)
      if (int rc = t.verify_index(); rc != SQLITE_OK) return rc;

    const int rc = (idx & kRowidEq) ? start_rowid()
                   : (idx & kTid)   ? start_thread(tid.lo)
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
                                           std::move(desc_keys), key_of, t.options->max_groups);
    chunk_ids.clear();
    int64_t last_id = -1;
    uint32_t index = 0;
    int64_t values[32];
    while (!eof) {
      if (chunk_id != last_id) {
        // Chunks come in runs (a scan) or interleaved (a thread's merge): look the id up.
        auto at = std::find(chunk_ids.rbegin(),
                            chunk_ids.rbegin() + std::min<size_t>(chunk_ids.size(), 16), chunk_id);
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

}  // namespace gpuwhy::store::vtab
