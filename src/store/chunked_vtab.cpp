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

#include "store/chunked_vtab_cursor.hpp"
#include "store/chunked_vtab_table.hpp"

namespace gpuwhy::store {
namespace {

using namespace vtab;

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
  if (static_cast<uint32_t>(col) < t.ncols && v) {
    sqlite3_result_int64(ctx, *v);
    return SQLITE_OK;
  }
  if (static_cast<uint32_t>(col) >= t.ncols && v && t.labels)
    label = t.labels->text(static_cast<uint32_t>(col) - t.ncols, *v);
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
