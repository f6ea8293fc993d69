// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: `gpuwhy mcp`'s stdio transport and dispatch (src/mcp/jsonrpc.cpp, server.cpp
// and the tools behind tools/call) on a small trace. Any bytes as the client's stream: every
// answer must be one line of JSON-RPC 2.0 (an object with "jsonrpc": "2.0", an id, and a result
// or an error), at most one per line sent, and nothing may crash or throw out of the server.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mcp/server.hpp"
#include "store/store.hpp"

namespace {

using namespace gpuwhy;

struct Fixture {
  std::string dir, path;
  Fixture() {
    char tmpl[] = "/tmp/gw-fuzz-mcp-XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/t.db";
    store::SessionInfo s;
    s.host = "fuzz";
    s.start_ns = 1'700'000'000'000'000'000;
    auto w = store::TraceWriter::create(path, s);
    if (!w) std::abort();
    std::vector<Event> batch;
    for (int i = 0; i < 200; ++i) {
      ApiCall c;
      c.ts = s.start_ns + i * 1'000'000;
      c.dur = 400'000;
      c.pid = 10;
      c.tid = 11 + i % 2;
      c.api = static_cast<uint16_t>(1 + i % 3);
      batch.push_back(c);
      OffCpu o;
      o.ts = c.ts + 100'000;
      o.dur = 300'000;
      o.runq = i % 3 ? 0 : 200'000;
      o.preempted = o.runq != 0;
      o.pid = 10;
      o.tid = c.tid;
      o.holder_pid = 20;
      o.holder_tid = 20;
      batch.push_back(o);
    }
    if (!(*w)->write_batch(batch).ok() || !(*w)->finish(s.start_ns + 300'000'000).ok())
      std::abort();
  }
  ~Fixture() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture fx;
  if (size == 0) return 0;  // fmemopen refuses an empty buffer
  mcp::ServerOptions opt;
  opt.db = fx.path;
  opt.query_timeout_s = 0.2;  // a recursive CTE must not stall the run
  opt.query_max_memory_mb = 256;
  opt.max_result_bytes = 64 << 10;
  std::FILE* in = fmemopen(const_cast<uint8_t*>(data), size, "r");
  char* out_buf = nullptr;
  size_t out_size = 0;
  std::FILE* out = open_memstream(&out_buf, &out_size);
  if (!in || !out) std::abort();
  mcp::Server server(opt);
  if (server.serve(in, out) != 0) std::abort();  // memory cannot refuse a write
  std::fclose(in);
  std::fclose(out);
  const std::string answers(out_buf, out_size);
  std::free(out_buf);

  size_t lines_in = 1;
  for (size_t i = 0; i < size; ++i) lines_in += data[i] == '\n';
  size_t lines_out = 0, at = 0;
  while (at < answers.size()) {
    const size_t nl = answers.find('\n', at);
    if (nl == std::string::npos) std::abort();  // every answer ends its line
    const auto m = nlohmann::json::parse(answers.substr(at, nl - at), nullptr, false);
    if (m.is_discarded() || !m.is_object() || m.value("jsonrpc", "") != "2.0" ||
        !m.contains("id") || m.contains("result") == m.contains("error"))
      std::abort();
    ++lines_out;
    at = nl + 1;
  }
  if (lines_out > lines_in) std::abort();
  return 0;
}
