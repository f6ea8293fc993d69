// SPDX-License-Identifier: Apache-2.0
// NVIDIA's and AMD's real runtime libraries, traced by the real agent. Without a GPU every call
// fails fast, but the probes fire: each call the workload prints must be recorded exactly once,
// with exactly the arguments it passed and the return code it got.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "catalog/api_catalog.hpp"
#include "store/store.hpp"
#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

using nlohmann::json;

// Expected stored columns, derived from the C parameter names the workload printed.
struct Expected {
  std::optional<uint64_t> bytes, stream, blocks, tpb, addr;
  std::optional<int64_t> op;
};

void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it->is_object())
      flatten(*it, prefix + it.key() + ".", out);
    else
      out[prefix + it.key()] = *it;
  }
}

std::optional<uint64_t> pick(const std::map<std::string, json>& a,
                             std::initializer_list<const char*> names) {
  for (const char* n : names)
    for (const auto& [k, v] : a)
      if ((k == n || k.ends_with(std::string(".") + n)) && v.is_number()) return v.get<uint64_t>();
  return std::nullopt;
}

Expected expected_for(const ApiInfo& api, const json& args) {
  std::map<std::string, json> a;
  flatten(args, "", a);
  Expected e;
  e.stream = pick(a, {"stream", "hStream"});
  if (api.category == Category::Launch) {
    auto dim = [&](const char* rt, const char* hip, const char* drv) {
      uint64_t n = 1;
      for (const char* axis : {"x", "y", "z"}) {
        auto v = pick(
            a, {(std::string(rt) + "." + axis).c_str(), (std::string(hip) + "." + axis).c_str()});
        if (!v) v = pick(a, {(std::string(drv) + char(std::toupper(axis[0]))).c_str()});
        n *= v.value_or(1);
      }
      return n;
    };
    e.blocks = dim("gridDim", "numBlocks", "gridDim");
    e.tpb = dim("blockDim", "dimBlocks", "blockDim");
  }
  if (api.category == Category::Copy || api.category == Category::Memset ||
      api.category == Category::Alloc) {
    if (auto w = pick(a, {"width"}); w && pick(a, {"height"}))
      e.bytes = *w * *pick(a, {"height"});
    else
      e.bytes = pick(a, {"count", "ByteCount", "sizeBytes", "size", "bytesize"});
    if (api.category == Category::Copy && !api.fixed_dir)
      if (auto k = pick(a, {"kind"})) e.op = static_cast<int64_t>(*k);
    if (api.fixed_dir) e.op = static_cast<int64_t>(*api.fixed_dir);
  }
  if (api.category == Category::Device) e.addr = pick(a, {"device", "deviceId"});
  if (api.category == Category::Poll || api.category == Category::EventRecord)
    e.addr = pick(a, {"event", "hEvent", "comm"});
  if (api.category == Category::Collective) {
    auto count = pick(a, {"count", "sendcount", "recvcount"});
    auto dtype = pick(a, {"datatype"});
    if (count && dtype) e.bytes = *count * nccl_dtype_size(*dtype);
  }
  return e;
}

struct Row {
  int64_t ret;
  std::optional<uint64_t> bytes, stream, blocks, tpb;
  std::optional<int64_t> op;
};

std::optional<uint64_t> opt_u(const store::QueryResult& q, size_t r, size_t c) {
  if (q.is_null[r][c]) return std::nullopt;
  return std::stoull(q.rows[r][c]);
}

class RealLibraries : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }

  // A call the workload printed (one JSON line) of an API in the catalogue.
  struct PrintedCall {
    std::string line;
    json call;
    const ApiInfo* api;
  };

  // Traces `program` with `lib` given explicitly (and `flags`) into a file in `dir`: `calls` gets
  // the catalogued calls the workload printed (set-up calls outside the catalogue, such as cuInit,
  // are left out), `file` the trace.
  void trace_workload(const TempDir& dir, const std::string& lib, const std::string& program,
                      const std::vector<std::string>& flags, std::vector<PrintedCall>& calls,
                      std::unique_ptr<store::TraceFile>& file) {
    const std::string db = dir.file("t.db");
    std::vector<std::string> args{"--no-host-libs", "--lib", lib};
    args.insert(args.end(), flags.begin(), flags.end());
    Agent agent(db, args, dir);
    ASSERT_TRUE(agent.ready()) << agent.stderr_text();
    RunResult w = run({workload(program)}, {{"GW_START_DELAY_MS", "0"}});
    ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
    ASSERT_EQ(w.exit_code, 0) << w.err;
    auto f = store::TraceFile::open(db);
    ASSERT_TRUE(f.ok()) << f.error().line();
    file = std::move(f.value());
    std::istringstream lines(w.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] != '{') continue;
      json call = json::parse(line);
      if (const ApiInfo* api = find_api(call["api"].get<std::string>()))
        calls.push_back({line, std::move(call), api});
    }
  }

  // Traces one workload with the library given explicitly and checks every printed call.
  void check_workload(const std::string& lib, const std::string& program) {
    if (access(lib.c_str(), R_OK) != 0) GTEST_SKIP() << lib << " is not installed here";
    TempDir dir;
    std::vector<PrintedCall> calls;
    std::unique_ptr<store::TraceFile> f;
    // Every launch reads its in-memory arguments, so every call's stream can be checked.
    ASSERT_NO_FATAL_FAILURE(
        trace_workload(dir, lib, program, {"--launch-arg-sampling", "1"}, calls, f));
    int checked = 0;
    for (const auto& [line, call, api] : calls) {
      SCOPED_TRACE(line);
      auto q = store::run_query(
          *f, "SELECT ret, bytes, stream, blocks, tpb, op, addr FROM api_calls WHERE api = " +
                  std::to_string(api->id) +
                  " AND tid = " + std::to_string(call["tid"].get<uint32_t>()));
      ASSERT_TRUE(q.ok()) << q.error().line();
      ASSERT_EQ(q->rows.size(), 1u) << "each call recorded exactly once";
      EXPECT_EQ(std::stoll(q->rows[0][0]), call["ret"].get<int64_t>());
      const Expected e = expected_for(*api, call["args"]);
      if (e.bytes) {
        EXPECT_EQ(opt_u(*q, 0, 1), e.bytes) << "bytes";
      }
      if (e.stream) {
        EXPECT_EQ(opt_u(*q, 0, 2), e.stream) << "stream";
      }
      if (e.blocks) {
        EXPECT_EQ(opt_u(*q, 0, 3), e.blocks) << "grid blocks";
      }
      if (e.tpb) {
        EXPECT_EQ(opt_u(*q, 0, 4), e.tpb) << "threads per block";
      }
      if (e.op) {
        EXPECT_EQ(std::stoll(q->rows[0][5]), *e.op) << "direction / op";
      }
      if (e.addr) {
        EXPECT_EQ(opt_u(*q, 0, 6), e.addr) << "device ordinal, event or communicator";
      }
      ++checked;
    }
    EXPECT_GT(checked, 5) << calls.size() << " calls printed";
    // The workload's process only: the agent traces the whole host, where other tests may run.
    std::string tids;
    for (const auto& c : calls)
      tids += (tids.empty() ? "" : ",") + std::to_string(c.call["tid"].get<uint32_t>());
    auto total = store::run_query(
        *f,
        "SELECT count(*) FROM api_calls WHERE pid IN (SELECT pid FROM api_calls WHERE tid IN (" +
            tids + "))");
    ASSERT_TRUE(total.ok());
    EXPECT_EQ(std::stoi(total->rows[0][0]), checked) << "no call recorded that was not made";
  }

  // Traces one workload with the default launch sampling, so every launch of a thread after its
  // first is batched: the batched launch's probe takes its kernel from the register its cookie
  // names (first for cudaLaunchKernel, second for cudaLaunchKernelExC). Each launch must still be
  // recorded once with its kernel; `extra` picks the probe kind.
  void check_batched_kernels(const std::string& lib, const std::string& program,
                             const std::vector<std::string>& extra) {
    if (access(lib.c_str(), R_OK) != 0) GTEST_SKIP() << lib << " is not installed here";
    TempDir dir;
    std::vector<PrintedCall> calls;
    std::unique_ptr<store::TraceFile> f;
    ASSERT_NO_FATAL_FAILURE(trace_workload(dir, lib, program, extra, calls, f));
    int launches = 0;
    for (const auto& [line, call, api] : calls) {
      if (api->category != Category::Launch) continue;
      SCOPED_TRACE(line);
      std::map<std::string, json> a;
      flatten(call["args"], "", a);
      const auto func = pick(a, {"func", "f", "function_address"});
      ASSERT_TRUE(func.has_value());
      auto q =
          store::run_query(*f, "SELECT addr FROM api_calls WHERE api = " + std::to_string(api->id) +
                                   " AND tid = " + std::to_string(call["tid"].get<uint32_t>()));
      ASSERT_TRUE(q.ok()) << q.error().line();
      ASSERT_EQ(q->rows.size(), 1u) << "each launch recorded exactly once";
      EXPECT_EQ(opt_u(*q, 0, 0), func) << "kernel";
      ++launches;
    }
    EXPECT_GE(launches, 2) << calls.size() << " calls printed";
    std::string tids;  // the workload's own calls: other tests may trace theirs meanwhile
    for (const auto& c : calls)
      tids += (tids.empty() ? "" : ",") + std::to_string(c.call["tid"].get<uint32_t>());
    auto batched = store::run_query(
        *f, "SELECT count(*) FROM api_calls WHERE flags & 8 AND tid IN (" + tids + ")");
    ASSERT_TRUE(batched.ok());
    EXPECT_EQ(std::stoi(batched->rows[0][0]), launches - 1) << "all but the sampled first launch";
  }
};

TEST_F(RealLibraries, BatchedLaunchesKeepTheirKernel) {
  for (const auto& [lib, program] : std::vector<std::pair<std::string, std::string>>{
           {"/usr/local/cuda/lib/libcudart.so.13", "real_cudart_calls"},
           {"/usr/local/cuda/lib/stubs/libcuda.so", "real_cuda_driver_calls"},
           {"/usr/lib/x86_64-linux-gnu/libamdhip64.so.5", "real_hip_calls"}}) {
    for (const std::vector<std::string>& extra :
         {std::vector<std::string>{}, std::vector<std::string>{"--entry-only", "launch"}}) {
      SCOPED_TRACE(program + (extra.empty() ? "" : " --entry-only launch"));
      check_batched_kernels(lib, program, extra);
    }
  }
}

TEST_F(RealLibraries, NvidiaCudaRuntime) {
  check_workload("/usr/local/cuda/lib/libcudart.so.13", "real_cudart_calls");
}

TEST_F(RealLibraries, NvidiaCudaDriverStub) {
  check_workload("/usr/local/cuda/lib/stubs/libcuda.so", "real_cuda_driver_calls");
}

TEST_F(RealLibraries, NvidiaNccl) {
  check_workload("/usr/local/cuda/lib/libnccl.so.2", "real_nccl_calls");
}

TEST_F(RealLibraries, AmdHip) {
  check_workload("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5", "real_hip_calls");
}

}  // namespace
}  // namespace gpuwhy::testing
