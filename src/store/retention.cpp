// SPDX-License-Identifier: Apache-2.0
#include "store/retention.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "store/chunked_tables.hpp"
#include "store/rollups.hpp"
#include "store/sqlite_util.hpp"

namespace gpuwhy::store {
namespace {

// The row tables of events, aged out by their own time.
constexpr std::string_view kRowTables[] = {"proc_events", "tcp_retrans"};

// The rollup table of a chunked table ("api_calls" -> "api_calls_per_second"), or empty.
std::string rollup_of(std::string_view table) {
  std::string name = std::string(table) + "_per_second";
  for (std::string_view r : rollup_tables())
    if (r == name) return name;
  return {};
}

// Runs a statement that returns one row of integers; absent values read 0.
Status one_row(sqlite3* db, Stmt& s, std::initializer_list<int64_t*> out, std::string_view what) {
  const int rc = sqlite3_step(s.get());
  if (rc == SQLITE_ROW) {
    int i = 0;
    for (int64_t* o : out) *o = sqlite3_column_int64(s.get(), i++);
  }
  sqlite3_reset(s.get());
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sqlite_error(db, what);
  return {};
}

Result<int64_t> pragma_int(sqlite3* db, const char* pragma) {
  auto s = Stmt::prepare(db, std::string("PRAGMA ") + pragma, "reading the file's size");
  if (!s) return s.error();
  int64_t v = 0;
  if (Status st = one_row(db, *s, {&v}, "reading the file's size"); !st) return st.error();
  return v;
}

}  // namespace

Status Retention::create_schema(sqlite3* db, const RetentionOptions& opt, uint32_t page_size) {
  std::string sql =
      "CREATE TABLE retention (\n"
      "  id INTEGER PRIMARY KEY CHECK (id = 1),\n"
      "  keep_ns INTEGER, max_bytes INTEGER, wal_cap_bytes INTEGER, main_cap_bytes INTEGER,\n"
      "  window_start_ns INTEGER, age_outs INTEGER NOT NULL DEFAULT 0, last_age_out_ns INTEGER,\n"
      "  events INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL DEFAULT 0);\n"
      "CREATE TABLE aged_out (name TEXT PRIMARY KEY, chunks INTEGER NOT NULL DEFAULT 0,\n"
      "  events INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL DEFAULT 0);\n"
      "CREATE TABLE rollup_spans (tbl TEXT NOT NULL, chunk INTEGER NOT NULL,\n"
      "  first_row INTEGER NOT NULL, last_row INTEGER NOT NULL, PRIMARY KEY (tbl, chunk))\n"
      "  WITHOUT ROWID;\n";
  for (const ChunkedTable& t : chunked_tables())
    sql += "CREATE INDEX " + t.chunks() + "_end ON " + t.chunks() + "(end_max);\n";
  for (std::string_view t : kRowTables)
    sql += "CREATE INDEX " + std::string(t) + "_ts ON " + std::string(t) + "(ts);\n";
  if (Status st = exec(db, sql, "creating the flight recorder's tables"); !st) return st;
  auto ins = Stmt::prepare(db,
                           "INSERT INTO retention(id, keep_ns, max_bytes, wal_cap_bytes, "
                           "main_cap_bytes) VALUES (1, ?, ?, ?, ?)",
                           "writing retention");
  if (!ins) return ins.error();
  const BudgetPlan plan = plan_budget(opt.max_bytes, page_size);
  ins->opt(1, opt.keep_ns > 0, opt.keep_ns);
  ins->opt(2, opt.max_bytes > 0, opt.max_bytes);
  ins->opt(3, opt.max_bytes > 0, plan.wal_cap);
  ins->opt(4, opt.max_bytes > 0, plan.main_cap_pages * page_size);
  if (ins->run() != SQLITE_DONE) return sqlite_error(db, "writing retention");
  return {};
}

Result<std::unique_ptr<Retention>> Retention::start(sqlite3* db, std::string path,
                                                    const RetentionOptions& opt) {
  std::unique_ptr<Retention> r(new Retention());
  r->db_ = db;
  r->path_ = std::move(path);
  r->opt_ = opt;
  auto page = pragma_int(db, "page_size");
  if (!page) return page.error();
  r->page_size_ = static_cast<uint32_t>(std::max<int64_t>(*page, 512));
  if (opt.max_bytes > 0) {
    r->plan_ = plan_budget(opt.max_bytes, r->page_size_);
    const BudgetPlan& p = r->plan_;
    auto count = pragma_int(db, "page_count");
    if (!count) return count.error();
    if (static_cast<uint64_t>(*count) + p.high_water_pages > p.main_cap_pages)
      return Error{"--max-size " + format_size(opt.max_bytes) + " leaves no room for events",
                   "give a larger --max-size"};
    // The cap is SQLite's own: a write that would pass it fails rather than grow the file.
    if (Status st =
            exec(db,
                 "PRAGMA max_page_count=" + std::to_string(p.main_cap_pages) +
                     "; PRAGMA wal_autocheckpoint=" + std::to_string(p.autocheckpoint_pages) +
                     "; PRAGMA journal_size_limit=" + std::to_string(p.journal_size_limit),
                 "setting the size budget of " + r->path_);
        !st)
      return st.error();
    r->txn_estimate_ = std::min<uint64_t>(p.wal_cap / 4, 1u << 20);
  }
  return r;
}

uint64_t Retention::wal_bytes() const {
  struct stat st {};
  return stat((path_ + "-wal").c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

Result<uint64_t> Retention::room() {
  auto count = pragma_int(db_, "page_count");
  if (!count) return count.error();
  auto free = pragma_int(db_, "freelist_count");
  if (!free) return free.error();
  return room_pages(static_cast<uint64_t>(*count), static_cast<uint64_t>(*free),
                    plan_.main_cap_pages);
}

bool Retention::at_cap() {
  if (opt_.max_bytes == 0) return false;
  auto count = pragma_int(db_, "page_count");
  const bool full = count && static_cast<uint64_t>(*count) + 2 >= plan_.main_cap_pages;
  if (full) urgent_ = true;
  return full;
}

bool Retention::wal_has_room() {
  if (opt_.max_bytes == 0) return true;
  // The checkpoint thread may hold the log for a moment: a few tries, unless a reader is
  // known to hold it (then one try per batch, not a stall per batch).
  const int tries = log_held_ ? 1 : 10;
  for (int attempt = 0; attempt < tries; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (wal_bytes() + txn_estimate_ <= plan_.wal_cap) {
      log_held_ = false;
      return true;
    }
    // Fold the log in and truncate it. It fails (SQLITE_BUSY) while a reader still reads frames
    // of it, or while the checkpoint thread holds it for a moment.
    if (sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr) ==
        SQLITE_OK) {
      log_held_ = false;
      return true;
    }
  }
  log_held_ = true;
  return false;
}

void Retention::before_transaction() {
  if (opt_.max_bytes) wal_before_ = wal_bytes();
}

void Retention::after_commit() {
  if (opt_.max_bytes == 0) return;
  const uint64_t now = wal_bytes();
  if (now <= wal_before_) return;  // the log restarted (or was cut back) in between
  // Twice the largest recent transaction, decaying slowly toward the floor.
  const uint64_t floor = std::min<uint64_t>(plan_.wal_cap / 16, 256u << 10);
  txn_estimate_ = std::max({txn_estimate_ - txn_estimate_ / 64, 2 * (now - wal_before_), floor});
  txn_estimate_ = std::min<uint64_t>(txn_estimate_, plan_.wal_cap / 2);
}

Result<bool> Retention::anything_before(int64_t cut) {
  for (const ChunkedTable& t : chunked_tables()) {
    auto s = Stmt::prepare(db_, "SELECT 1 FROM " + t.chunks() + " WHERE end_max < ? LIMIT 1",
                           "ageing out " + t.chunks());
    if (!s) return s.error();
    s->i64(1, cut);
    if (s->run() == SQLITE_ROW) return true;
  }
  return false;
}

// The oldest chunks of every table, merged by end time, until `need_bytes` are offered.
Result<std::optional<int64_t>> Retention::size_cut(uint64_t need_bytes) {
  std::string sql;
  for (const ChunkedTable& t : chunked_tables()) {
    if (!sql.empty()) sql += " UNION ALL ";
    // Page overhead per chunk: its cell, its index entries, its rollup rows, roughly.
    sql += "SELECT end_max, length(data) + 96 FROM " + t.chunks();
  }
  sql += " ORDER BY 1";
  auto s = Stmt::prepare(db_, sql, "choosing what to age out");
  if (!s) return s.error();
  CutChooser chooser(need_bytes);
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(s->get())) == SQLITE_ROW)
    if (!chooser.offer(sqlite3_column_int64(s->get(), 0),
                       static_cast<uint64_t>(sqlite3_column_int64(s->get(), 1))))
      break;
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sqlite_error(db_, "choosing what to age out");
  if (!chooser.any()) return std::optional<int64_t>{};
  return std::optional<int64_t>{chooser.cut()};
}

// Deletes every chunk ending before `cut`, its rollup rows, and the row tables' rows before it,
// and records it. Inside the caller's transaction.
Status Retention::delete_before(int64_t cut, int64_t now_ns) {
  auto record = Stmt::prepare(db_,
                              "INSERT INTO aged_out(name, chunks, events, bytes) VALUES (?,?,?,?) "
                              "ON CONFLICT(name) DO UPDATE SET chunks = chunks + excluded.chunks, "
                              "events = events + excluded.events, bytes = bytes + excluded.bytes",
                              "writing aged_out");
  if (!record) return record.error();
  uint64_t events = 0, bytes = 0;
  auto prep = [&](const std::string& sql) { return Stmt::prepare(db_, sql, "ageing out"); };
  for (const ChunkedTable& t : chunked_tables()) {
    const std::string chunks = t.chunks();
    auto stats = prep(
        "SELECT count(*), coalesce(sum(rows), 0), coalesce(sum(length(data)), 0) "
        "FROM " +
        chunks + " WHERE end_max < ?");
    if (!stats) return stats.error();
    stats->i64(1, cut);
    int64_t n = 0, rows = 0, size = 0;
    if (Status st = one_row(db_, *stats, {&n, &rows, &size}, "ageing out " + chunks); !st)
      return st;
    if (n == 0) continue;
    if (const std::string rollup = rollup_of(t.name); !rollup.empty()) {
      // The rollup rows of each chunk are one range of rowids (rollup_spans).
      const std::string in = "(SELECT id FROM " + chunks + " WHERE end_max < ?1)";
      auto spans =
          prep("SELECT first_row, last_row FROM rollup_spans WHERE tbl = ?2 AND chunk IN " + in);
      auto del = prep("DELETE FROM " + rollup + " WHERE rowid BETWEEN ? AND ?");
      auto forget = prep("DELETE FROM rollup_spans WHERE tbl = ?2 AND chunk IN " + in);
      if (!spans) return spans.error();
      if (!del) return del.error();
      if (!forget) return forget.error();
      spans->i64(1, cut);
      spans->text(2, rollup);
      int rc = SQLITE_ROW;
      while ((rc = sqlite3_step(spans->get())) == SQLITE_ROW) {
        del->i64(1, sqlite3_column_int64(spans->get(), 0));
        del->i64(2, sqlite3_column_int64(spans->get(), 1));
        if (del->run() != SQLITE_DONE) return sqlite_error(db_, "ageing out " + rollup);
      }
      if (rc != SQLITE_DONE) return sqlite_error(db_, "ageing out " + rollup);
      forget->i64(1, cut);
      forget->text(2, rollup);
      if (forget->run() != SQLITE_DONE) return sqlite_error(db_, "ageing out rollup_spans");
    }
    auto del = prep("DELETE FROM " + chunks + " WHERE end_max < ?");
    if (!del) return del.error();
    del->i64(1, cut);
    if (del->run() != SQLITE_DONE) return sqlite_error(db_, "ageing out " + chunks);
    record->text(1, t.name);
    record->i64(2, n);
    record->i64(3, rows);
    record->i64(4, size);
    if (record->run() != SQLITE_DONE) return sqlite_error(db_, "writing aged_out");
    events += static_cast<uint64_t>(rows);
    bytes += static_cast<uint64_t>(size);
  }
  for (std::string_view table : kRowTables) {
    const std::string t(table);
    auto del = prep("DELETE FROM " + t + " WHERE ts < ?");
    if (!del) return del.error();
    del->i64(1, cut);
    if (del->run() != SQLITE_DONE) return sqlite_error(db_, "ageing out " + t);
    const int64_t n = sqlite3_changes64(db_);
    if (n == 0) continue;
    record->text(1, t);
    record->i64(2, 0);
    record->i64(3, n);
    record->i64(4, 0);
    if (record->run() != SQLITE_DONE) return sqlite_error(db_, "writing aged_out");
    events += static_cast<uint64_t>(n);
  }
  auto upd = prep(
      "UPDATE retention SET window_start_ns = max(coalesce(window_start_ns, ?1), ?1), "
      "age_outs = age_outs + 1, last_age_out_ns = ?2, events = events + ?3, bytes = bytes + ?4 "
      "WHERE id = 1");
  if (!upd) return upd.error();
  upd->i64(1, cut);
  upd->i64(2, now_ns);
  upd->i64(3, static_cast<int64_t>(events));
  upd->i64(4, static_cast<int64_t>(bytes));
  if (upd->run() != SQLITE_DONE) return sqlite_error(db_, "writing retention");
  return {};
}

Status Retention::make_room(int64_t now_ns, bool force) {
  std::optional<int64_t> by_age;
  if (opt_.keep_ns > 0 && (force || now_ns - last_age_check_ns_ >= opt_.age_check_ns)) {
    last_age_check_ns_ = now_ns;
    by_age = now_ns - opt_.keep_ns;
  }
  force = force || std::exchange(urgent_, false);
  bool size_low = false;
  uint64_t room_now = 0;
  if (opt_.max_bytes > 0) {
    auto r = room();
    if (!r) return r.error();
    room_now = *r;
    size_low = room_now < (force ? plan_.high_water_pages : plan_.low_water_pages);
  }
  if (!size_low) {
    if (!by_age) return {};
    auto any = anything_before(*by_age);
    if (!any) return any.error();
    if (!*any) return {};
  }

  // The age-out goes through the log too: not while a reader holds it at its share.
  if (!wal_has_room()) return {};
  if (Status st = exec(db_, "BEGIN IMMEDIATE", "ageing out"); !st) return st;
  Status result;
  RetentionTotals before = totals_;
  for (int round = 0; round < 4 && result; ++round) {
    std::optional<int64_t> by_size;
    if (size_low) {
      auto cut = size_cut((plan_.high_water_pages - room_now) * page_size_);
      if (!cut) {
        result = cut.error();
        break;
      }
      by_size = *cut;
    }
    const std::optional<int64_t> cut = combine_cuts(by_age, by_size, totals_.window_start_ns);
    if (!cut) break;
    if (Status st = delete_before(*cut, now_ns); !st) {
      result = st;
      break;
    }
    totals_.window_start_ns = std::max(totals_.window_start_ns.value_or(*cut), *cut);
    by_age.reset();
    if (!size_low || !by_size) break;  // nothing left to drop
    auto r = room();
    if (!r) {
      result = r.error();
      break;
    }
    room_now = *r;
    size_low = room_now < plan_.high_water_pages;
    if (!size_low) break;
  }
  if (result) {
    auto s = Stmt::prepare(db_, "SELECT age_outs, events, bytes FROM retention WHERE id = 1",
                           "reading retention");
    int64_t n = 0, ev = 0, b = 0;
    if (s && one_row(db_, *s, {&n, &ev, &b}, "reading retention")) {
      totals_.age_outs = static_cast<uint64_t>(n);
      totals_.events = static_cast<uint64_t>(ev);
      totals_.bytes = static_cast<uint64_t>(b);
    }
    if (Status st = exec(db_, "COMMIT", "ageing out"); !st) result = st;
  }
  if (!result) {
    (void)exec(db_, "ROLLBACK", "ageing out");
    const uint64_t dropped = totals_.dropped;
    totals_ = before;
    totals_.dropped = dropped;
  }
  return result;
}

}  // namespace gpuwhy::store
