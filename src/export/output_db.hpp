// SPDX-License-Identifier: Apache-2.0
// A new SQLite file written in one transaction next to its final path and renamed into place at
// commit(): an export that fails or is interrupted leaves no half-written file.
#pragma once

#include <sqlite3.h>

#include <string>

#include "core/cleanup.hpp"
#include "core/result.hpp"

namespace gpuwhy::exporter {

class OutputDb {
 public:
  static Result<OutputDb> create(const std::string& path);
  OutputDb(OutputDb&& o) noexcept;
  OutputDb& operator=(OutputDb&&) = delete;
  ~OutputDb();  // without commit(): removes the temporary file

  sqlite3* db() const { return db_; }
  Status exec(const std::string& sql, const std::string& what);
  // Copies the rows of `select` on `from` into `insert` (as many parameters as columns).
  Result<uint64_t> copy_rows(sqlite3* from, const std::string& select, const std::string& insert,
                             const std::string& what);
  Status commit();

 private:
  OutputDb() = default;
  sqlite3* db_ = nullptr;
  std::string path_, tmp_;
  cleanup::Guard tmp_guard_;  // the unfinished file, removed if a signal ends the export
};

}  // namespace gpuwhy::exporter
