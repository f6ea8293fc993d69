// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the read-only guard of `gpuwhy query` (the authorizer and statement checks in
// src/store/trace_file.cpp and query.cpp). Any SQL text, run on a small trace: it may fail, but
// it must never change the file (no row changed, the file's bytes the same) or crash.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "store/store.hpp"

namespace {

using namespace gpuwhy;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Fixture {
  std::string dir, path, bytes;
  std::unique_ptr<store::TraceFile> file;
  Fixture() {
    char tmpl[] = "/tmp/gw-fuzz-sql-XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/t.db";
    store::SessionInfo s;
    s.host = "fuzz";
    s.start_ns = 1'700'000'000'000'000'000;
    auto w = store::TraceWriter::create(path, s);
    if (!w) std::abort();
    std::vector<Event> batch;
    for (int i = 0; i < 100; ++i) {
      ApiCall c;
      c.ts = s.start_ns + i * 1000;
      c.dur = 500;
      c.pid = 10;
      c.tid = 11 + i % 3;
      batch.push_back(c);
    }
    if (!(*w)->write_batch(batch).ok() || !(*w)->finish(s.start_ns + 1'000'000).ok()) std::abort();
    w.value().reset();
    bytes = slurp(path);
    auto f = store::TraceFile::open(path);
    if (!f) std::abort();
    file = std::move(f.value());
  }
  ~Fixture() {
    file.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture fx;
  const std::string sql(reinterpret_cast<const char*>(data), size);
  fx.file->set_limits(0.2, 64 << 20);  // a recursive CTE must not stall the run
  (void)store::for_each_row(*fx.file, sql, nullptr, nullptr);
  if (sqlite3_total_changes(fx.file->db()) != 0) std::abort();  // a write got through
  static int runs = 0;
  if (++runs % 256 == 0 && slurp(fx.path) != fx.bytes) std::abort();
  return 0;
}
