// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the store and query tests: a temporary directory, hand-built events and small
// SQL shortcuts. Header-only so each test file stays independent.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "catalog/api_catalog.hpp"
#include "model/events.hpp"
#include "store/chunk_codec.hpp"
#include "store/chunked_vtab.hpp"
#include "store/store.hpp"

namespace gpuwhy::testing {

// mkdtemp under $TMPDIR; removed with everything in it (permissions restored first).
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gw-store-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(path_, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ec))
        std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                     std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline constexpr int64_t kStart = 1'700'000'000'000'000'000;  // session start, wall ns
inline constexpr int64_t kMs = 1'000'000;

inline store::SessionInfo session_info() {
  store::SessionInfo s;
  s.host = "gpu-host-1";
  s.kernel = "6.18.0";
  s.agent_version = "0.1.0-test";
  s.command_line = "gpuwhy trace --out test.db";
  s.pid_filter = "";
  s.boot_id = "boot-1234";
  s.start_ns = kStart;
  s.mono_to_wall_ns = 1'600'000'000'000'000'000;
  return s;
}

inline Comm comm(const char* s) {
  Comm c{};
  std::strncpy(c.data(), s, c.size() - 1);
  return c;
}

inline uint16_t api_id(const char* name) {
  const ApiInfo* a = find_api(std::string_view(name));
  EXPECT_NE(a, nullptr) << name;
  return a ? a->id : 0;
}

inline ApiCall call(const char* api, int64_t ts, int64_t dur, uint32_t pid, uint32_t tid) {
  ApiCall c;
  c.ts = ts;
  c.dur = dur;
  c.pid = pid;
  c.tid = tid;
  c.api = api_id(api);
  c.lib = 1;
  return c;
}

inline OffCpu offcpu(int64_t ts, int64_t dur, uint32_t pid, uint32_t tid, bool preempted,
                     const char* next, const char* waker, int64_t runq = 0) {
  OffCpu o;
  o.ts = ts;
  o.dur = dur;
  o.runq = preempted ? dur : runq;
  o.pid = pid;
  o.tid = tid;
  o.cpu = 3;
  o.preempted = preempted;
  o.prev_state = preempted ? 0 : 1;
  if (next && *next) {
    o.next_pid = 900;
    o.next_tid = 901;
    o.next_comm = comm(next);
  }
  if (waker && *waker) {
    o.waker_pid = 800;
    o.waker_tid = 801;
    o.waker_comm = comm(waker);
  }
  return o;
}

// kChunkRows calls of one thread, 1 us apart: a batch the writer stores as soon as it commits (a
// full chunk). Fewer rows of a thread wait in its open chunk until finish(), or until they are
// kChunkFlushAgeNs old, and a writer that dies before then loses them.
inline std::vector<Event> full_chunk(int64_t t0, uint32_t pid, uint32_t tid,
                                     const char* api = "cudaLaunchKernel") {
  std::vector<Event> out;
  for (uint32_t i = 0; i < store::kChunkRows; ++i)
    out.push_back(call(api, t0 + i * 1000, 500, pid, tid));
  return out;
}

inline std::unique_ptr<store::TraceWriter> make_writer(const std::string& path) {
  auto w = store::TraceWriter::create(path, session_info());
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : w.error().line());
  return w.ok() ? std::move(w.value()) : nullptr;
}

inline std::unique_ptr<store::TraceFile> open_trace(const std::string& path) {
  auto f = store::TraceFile::open(path);
  EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().line());
  return f.ok() ? std::move(f.value()) : nullptr;
}

// Rows of a query as strings (NULL as "NULL"), for compact expectations.
inline std::vector<std::vector<std::string>> rows(const store::TraceFile& f,
                                                  const std::string& sql) {
  auto r = store::run_query(f, sql);
  EXPECT_TRUE(r.ok()) << sql << ": " << (r.ok() ? "" : r.error().line());
  std::vector<std::vector<std::string>> out;
  if (!r.ok()) return out;
  for (size_t i = 0; i < r->rows.size(); ++i) {
    out.push_back(r->rows[i]);
    for (size_t c = 0; c < out.back().size(); ++c)
      if (r->is_null[i][c]) out.back()[c] = "NULL";
  }
  return out;
}

inline std::string scalar(const store::TraceFile& f, const std::string& sql) {
  auto r = rows(f, sql);
  return r.empty() || r[0].empty() ? "<no row>" : r[0][0];
}

// Runs SQL on a plain read-write connection, outside the store (to doctor files in tests). The
// event tables (api_calls, offcpu, ...) are there as on every connection gpuwhy opens.
inline void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  auto attached = store::attach_chunked_tables(db);
  EXPECT_TRUE(attached.ok()) << (attached.ok() ? "" : attached.error().line());
  char* msg = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg), SQLITE_OK) << (msg ? msg : "");
  sqlite3_free(msg);
  sqlite3_close(db);
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline bool exists(const std::string& path) { return std::filesystem::exists(path); }

}  // namespace gpuwhy::testing
