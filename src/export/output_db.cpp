// SPDX-License-Identifier: Apache-2.0
#include "export/output_db.hpp"

#include <unistd.h>

#include <cstdio>

#include "store/sqlite_util.hpp"

namespace gpuwhy::exporter {

Result<OutputDb> OutputDb::create(const std::string& path) {
  OutputDb o;
  o.path_ = path;
  o.tmp_ = path + ".tmp-" + std::to_string(getpid());
  std::remove(o.tmp_.c_str());
  o.tmp_guard_ = cleanup::Guard(o.tmp_);
  if (sqlite3_open_v2(o.tmp_.c_str(), &o.db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      nullptr) != SQLITE_OK)
    return Error{"cannot create " + o.tmp_ + ": " + (o.db_ ? sqlite3_errmsg(o.db_) : "no memory"),
                 "check that the output directory exists and is writable"};
  // Nothing to protect until the rename: no journal, no fsync per page.
  if (auto st = o.exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA page_size=4096; "
                       "BEGIN",
                       "creating " + path);
      !st)
    return st.error();
  return o;
}

OutputDb::OutputDb(OutputDb&& o) noexcept
    : db_(o.db_), path_(std::move(o.path_)), tmp_(o.tmp_), tmp_guard_(std::move(o.tmp_guard_)) {
  o.db_ = nullptr;
  o.tmp_.clear();
}

OutputDb::~OutputDb() {
  if (db_) sqlite3_close_v2(db_);
  if (!tmp_.empty()) std::remove(tmp_.c_str());
}

Status OutputDb::exec(const std::string& sql, const std::string& what) {
  return store::exec(db_, sql, what);
}

Result<uint64_t> OutputDb::copy_rows(sqlite3* from, const std::string& select,
                                     const std::string& insert, const std::string& what) {
  auto sel = store::Stmt::prepare(from, select, "reading " + what);
  if (!sel) return sel.error();
  auto ins = store::Stmt::prepare(db_, insert, "writing " + what);
  if (!ins) return ins.error();
  const int n = sqlite3_column_count(sel->get());
  uint64_t rows = 0;
  int rc;
  while ((rc = sqlite3_step(sel->get())) == SQLITE_ROW) {
    for (int i = 0; i < n; ++i)
      sqlite3_bind_value(ins->get(), i + 1, sqlite3_column_value(sel->get(), i));
    if (ins->run() != SQLITE_DONE) return store::sqlite_error(db_, "writing " + what);
    ++rows;
  }
  if (rc != SQLITE_DONE) return store::sqlite_error(from, "reading " + what);
  return rows;
}

Status OutputDb::commit() {
  if (auto st = exec("COMMIT", "writing " + path_); !st) return st;
  if (sqlite3_close_v2(db_) != SQLITE_OK) return Error{"cannot close " + tmp_};
  db_ = nullptr;
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
    return errno_error("cannot rename " + tmp_ + " to " + path_);
  tmp_.clear();
  tmp_guard_.release();
  return {};
}

}  // namespace gpuwhy::exporter
