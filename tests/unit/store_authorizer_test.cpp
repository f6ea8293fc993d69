// SPDX-License-Identifier: Apache-2.0
// A TraceFile is read-only whatever SQL it is given: writes, schema changes, ATTACH, PRAGMA
// writes and extension loading are refused, and the file's bytes do not change.
#include <gtest/gtest.h>

#include "store_fixture.hpp"

namespace gpuwhy {
namespace {

using namespace gpuwhy::testing;

class StoreAuthorizer : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("t.db");
    auto w = make_writer(path_);
    ASSERT_TRUE(w);
    ASSERT_TRUE(w->write_batch(std::vector<Event>{call("cudaLaunchKernel", kStart, 5, 1, 2)}).ok());
    ASSERT_TRUE(w->finish(kStart + kMs).ok());
    before_ = slurp(path_);
    file_ = open_trace(path_);
    ASSERT_TRUE(file_);
  }

  // The error of a query expected to fail.
  std::string refused(const std::string& sql) {
    auto r = store::run_query(*file_, sql);
    EXPECT_FALSE(r.ok()) << sql << " was allowed";
    if (r.ok()) return "";
    EXPECT_EQ(r.error().exit_code, 2) << sql;
    return r.error().what;
  }

  TempDir dir_;
  std::string path_, before_;
  std::unique_ptr<store::TraceFile> file_;
};

TEST_F(StoreAuthorizer, WritesAndSchemaChangesAreRefused) {
  for (const char* sql : {
           "INSERT INTO api_calls(ts, dur, pid, tid, api, lib, ret) VALUES (1,1,1,1,1,1,0)",
           "UPDATE session SET status = 'complete'",
           "DELETE FROM api_calls",
           "DROP TABLE api_calls",
           "DROP VIEW v_calls",
           "CREATE TABLE evil(x)",
           "CREATE TEMP TABLE scratch(x)",
           "CREATE INDEX i ON api_calls_chunks(pid)",
           "ALTER TABLE api_calls_chunks ADD COLUMN x",
           "INSERT INTO api_calls_chunks(pid, tid, ts_min, end_max, rows, data) "
           "VALUES (1, 1, 1, 1, 1, X'01')",
           "DELETE FROM offcpu_chunks",
           "ANALYZE",
           "REINDEX",
       }) {
    EXPECT_NE(refused(sql).find("not authorized"), std::string::npos) << sql;
  }
  // The event tables are virtual: SQLite itself refuses these before asking the authorizer.
  for (const char* sql : {"CREATE INDEX i ON api_calls(pid)", "ALTER TABLE api_calls ADD COLUMN x"})
    EXPECT_NE(refused(sql), "") << sql;
  // VACUUM (INTO a new file, too) attaches at run time; refused before that as not read-only,
  // and by the authorizer's ATTACH rule when db() is used directly.
  const std::string out = dir_.file("vacuumed.db");
  for (const std::string& sql : {std::string("VACUUM"), "VACUUM INTO '" + out + "'"})
    EXPECT_NE(refused(sql).find("read-only"), std::string::npos) << sql << ": " << refused(sql);
  EXPECT_EQ(refused("UPDATE sqlite_master SET sql = ''"),
            "SQL error: table sqlite_master may not be modified");
  char* msg = nullptr;
  EXPECT_NE(
      sqlite3_exec(file_->db(), ("VACUUM INTO '" + out + "'").c_str(), nullptr, nullptr, &msg),
      SQLITE_OK);
  EXPECT_EQ(std::string(msg ? msg : ""), "authorization denied");  // the ATTACH it runs
  sqlite3_free(msg);
  EXPECT_FALSE(exists(out));
  EXPECT_EQ(scalar(*file_, "SELECT count(*) FROM api_calls"), "1");
  EXPECT_EQ(slurp(path_), before_);
}

TEST_F(StoreAuthorizer, AttachPragmaWritesAndExtensionsAreRefused) {
  const std::string other = dir_.file("other.db");
  EXPECT_NE(refused("ATTACH DATABASE '" + other + "' AS o").find("not authorized"),
            std::string::npos);
  EXPECT_FALSE(exists(other));
  EXPECT_NE(refused("DETACH DATABASE temp").find("not authorized"), std::string::npos);
  for (const char* sql :
       {"PRAGMA user_version = 5", "PRAGMA user_version=5", "PRAGMA journal_mode = WAL",
        "PRAGMA query_only = 0", "PRAGMA writable_schema = 1", "PRAGMA wal_checkpoint",
        "PRAGMA optimize", "PRAGMA incremental_vacuum"}) {
    EXPECT_NE(refused(sql).find("not authorized"), std::string::npos) << sql;
  }
  EXPECT_NE(refused("SELECT load_extension('/tmp/evil.so')").find("not authorized"),
            std::string::npos);
  // The sqlite3 shell's file functions are not in the library; were a build to add them, the
  // authorizer refuses them by name.
  EXPECT_FALSE(refused("SELECT readfile('/etc/passwd')").empty());
  EXPECT_FALSE(refused("SELECT writefile('/tmp/x', 'y')").empty());
  // A write transaction: the authorizer sees a plain BEGIN, run_query sees it is not read-only.
  EXPECT_NE(refused("BEGIN IMMEDIATE").find("read-only"), std::string::npos);
  EXPECT_NE(refused("BEGIN EXCLUSIVE").find("read-only"), std::string::npos);
  // One statement at a time: nothing runs unseen after the first.
  EXPECT_NE(refused("SELECT 1; DELETE FROM api_calls").find("one statement"), std::string::npos);
  EXPECT_EQ(scalar(*file_, "PRAGMA user_version"), std::to_string(store::kSchemaVersion));
  EXPECT_EQ(slurp(path_), before_);
}

TEST_F(StoreAuthorizer, DirectConnectionUseIsLockedDownToo) {
  // explain uses db() directly: the same authorizer, query_only and defensive mode apply.
  char* msg = nullptr;
  EXPECT_NE(sqlite3_exec(file_->db(), "DELETE FROM api_calls", nullptr, nullptr, &msg), SQLITE_OK);
  sqlite3_free(msg);
  EXPECT_NE(sqlite3_exec(file_->db(), "BEGIN IMMEDIATE; DELETE FROM apis; COMMIT;", nullptr,
                         nullptr, &msg),
            SQLITE_OK);
  sqlite3_free(msg);
  sqlite3_exec(file_->db(), "ROLLBACK", nullptr, nullptr, nullptr);
  EXPECT_NE(sqlite3_enable_load_extension(file_->db(), 1), SQLITE_MISUSE);  // allowed call...
  EXPECT_NE(sqlite3_exec(file_->db(), "SELECT load_extension('x')", nullptr, nullptr, &msg),
            SQLITE_OK);  // ...still refused by the authorizer
  sqlite3_free(msg);
  EXPECT_EQ(slurp(path_), before_);
}

TEST_F(StoreAuthorizer, ReadsAndReadOnlyPragmasAreAllowed) {
  EXPECT_EQ(scalar(*file_, "PRAGMA user_version"), std::to_string(store::kSchemaVersion));
  EXPECT_EQ(scalar(*file_, "SELECT name FROM pragma_table_info('api_calls') WHERE cid = 0"), "ts");
  auto r = store::run_query(*file_, "PRAGMA table_info(api_calls)");
  ASSERT_TRUE(r.ok()) << r.error().line();
  EXPECT_EQ(r->rows.size(), 19u);
  EXPECT_EQ(scalar(*file_, "PRAGMA index_list(api_calls_chunks)"), "0");
  EXPECT_EQ(scalar(*file_, "PRAGMA quick_check"), "ok");
  EXPECT_EQ(scalar(*file_,
                   "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                   "WHERE i < 10) SELECT sum(i) FROM n"),
            "55");
  EXPECT_EQ(scalar(*file_, "SELECT name FROM v_calls"), "cudaLaunchKernel");
  // A read transaction for a consistent snapshot across statements is fine.
  EXPECT_TRUE(store::run_query(*file_, "BEGIN").ok());
  EXPECT_EQ(scalar(*file_, "SELECT count(*) FROM api_calls"), "1");
  EXPECT_TRUE(store::run_query(*file_, "COMMIT").ok());
  EXPECT_EQ(slurp(path_), before_);
}

TEST_F(StoreAuthorizer, BadSqlGivesSqlitesMessage) {
  auto r = store::run_query(*file_, "SELECT * FROM foo");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().line(), "SQL error: no such table: foo");
  EXPECT_EQ(r.error().exit_code, 2);
  EXPECT_EQ(refused("SELEC 1"), "SQL error: near \"SELEC\": syntax error");
  EXPECT_EQ(refused("SELECT nope FROM api_calls"), "SQL error: no such column: nope");
  EXPECT_EQ(refused("  -- only a comment\n"), "SQL error: no SQL statement given");
}

}  // namespace
}  // namespace gpuwhy
