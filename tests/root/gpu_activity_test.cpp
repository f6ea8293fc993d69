// SPDX-License-Identifier: Apache-2.0
// trace --gpu-activity end to end (issue 32): the real agent launches sim_train with its CUPTI
// client injected (CUDA_INJECTION64_PATH, loaded by the simulated driver's cuInit as NVIDIA's
// loads it), the client runs over the mock libcupti (tests/sim/cupti, GPUWHY_CUPTI_LIB), whose
// records are the simulated device's own timeline. The stored rows must match the simulator's
// ground truth (GWSIM_TRUTH), audit must state that truth rather than a range, a second CUPTI
// subscriber must make the client step aside, and a job killed mid-buffer must leave a
// complete trace.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/process.hpp"
#include "support/scenario.hpp"

namespace gpuwhy::testing {
namespace {

using nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str(), nullptr, false);
}

std::string mock_cupti() { return sim_dir() + "/cupti/libcupti.so.13"; }

std::string query(const std::string& db, const std::string& sql) {
  RunResult q = run({gpuwhy_binary(), "query", "--db", db, "--format", "csv", sql});
  EXPECT_EQ(q.exit_code, 0) << q.err;
  // The value of the single row (after the header line).
  const size_t nl = q.out.find('\n');
  std::string v = nl == std::string::npos ? "" : q.out.substr(nl + 1);
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
  return v;
}

int64_t query_int(const std::string& db, const std::string& sql) {
  const std::string v = query(db, sql);
  return v.empty() ? -1 : std::stoll(v);
}

class GpuActivity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    if (access(mock_cupti().c_str(), R_OK) != 0)
      GTEST_SKIP() << "no mock libcupti (built only with CUPTI's headers): " << mock_cupti();
  }
  TempDir dir_;
};

TEST_F(GpuActivity, KernelRowsMatchTheSimulatorsTruth) {
  const std::string db = dir_.file("t.db");
  const std::string truth_path = dir_.file("truth.json");
  // Pageable uploads too: their copies carry the host memory kind.
  RunResult r =
      run({gpuwhy_binary(), "trace", "--quiet", "--no-host-libs", "--gpu-activity", "-o", db, "--",
           workload("sim_train"), "--scenario", "transfer", "--steps", "30", "--transfer-mib", "4"},
          {{"GPUWHY_CUPTI_LIB", mock_cupti()}, {"GWSIM_TRUTH", truth_path}}, 180);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json summary = summary_of(r.out);
  ASSERT_TRUE(summary.contains("pid")) << r.out;
  const std::string pid = std::to_string(summary["pid"].get<int64_t>());
  const json truth = read_json(truth_path);
  ASSERT_TRUE(truth.is_object() && truth.contains("kernel_busy_ns")) << "no ground truth";
  ASSERT_EQ(truth["pending_at_exit"], 0);

  EXPECT_EQ(query(db, "SELECT state FROM probe_families WHERE family = 'gpu_activity'"), "on")
      << r.err;
  const std::string where = " FROM gpu_activity WHERE pid = " + pid;
  // Every operation the device executed, once.
  const json& ops = truth["ops"];
  EXPECT_EQ(query_int(db, "SELECT count(*)" + where + " AND kind = 'kernel'"),
            ops["kernels"].get<int64_t>() + ops["graphs"].get<int64_t>() +
                ops["collectives"].get<int64_t>());
  EXPECT_EQ(query_int(db, "SELECT count(*)" + where + " AND kind = 'memcpy'"),
            ops["copies"].get<int64_t>());
  const json& bytes = truth["bytes"];
  EXPECT_EQ(query_int(db, "SELECT sum(bytes)" + where + " AND kind = 'memcpy'"),
            bytes["h2h"].get<int64_t>() + bytes["h2d"].get<int64_t>() +
                bytes["d2h"].get<int64_t>() + bytes["d2d"].get<int64_t>());
  // The kernels' device time within 1% of the truth (the mock reports the device's own timeline,
  // so it is exact unless a record is lost; 1% is the bound).
  const double kernel_ns =
      static_cast<double>(query_int(db, "SELECT sum(dur)" + where + " AND kind = 'kernel'"));
  const double truth_kernel_ns = truth["kernel_busy_ns"].get<double>();
  EXPECT_NEAR(kernel_ns, truth_kernel_ns, 0.01 * truth_kernel_ns);
  // On the host's clock: inside the simulator's own first and last call (CLOCK_MONOTONIC).
  const int64_t offset = query_int(db, "SELECT mono_to_wall_ns FROM session");
  EXPECT_GE(query_int(db, "SELECT min(ts)" + where) - offset, truth["start_ns"].get<int64_t>());
  EXPECT_LE(query_int(db, "SELECT max(ts + dur)" + where) - offset, truth["end_ns"].get<int64_t>());
  // Named kernels (demangled where the symbol is a C++ one), grid and block, pageable uploads.
  EXPECT_EQ(query_int(db, "SELECT count(*)" + where + " AND kind = 'kernel' AND name_id IS NULL"),
            0);
  EXPECT_GT(query_int(db, "SELECT count(*)" + where +
                              " AND kind = 'memcpy' AND copy_kind = 'HtoD' AND src_kind = "
                              "'pageable' AND dst_kind = 'device'"),
            0);
  EXPECT_EQ(query_int(db, "SELECT count(*)" + where + " AND kind = 'kernel' AND grid_x IS NULL"),
            0);
  EXPECT_EQ(query_int(db, "SELECT count FROM losses WHERE source = 'cupti' AND cause = 'unsent'"),
            0);

  // audit states the device's busy time: the union of the rows, the truth's within 1%.
  RunResult a = run({gpuwhy_binary(), "audit", "--db", db, "--pid", pid, "--json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const json report = json::parse(a.out);
  ASSERT_EQ(report["processes"].size(), 1u) << a.out;
  const json& p = report["processes"][0];
  ASSERT_TRUE(p.contains("gpu_truth")) << a.out;
  const json& t = p["gpu_truth"];
  const double busy_truth = truth["gpu_busy_ns"].get<double>();
  EXPECT_NEAR(t["busy_ns"].get<double>(), busy_truth, 0.01 * busy_truth) << a.out;
  EXPECT_EQ(t["span_ns"], p["gpu_busy"]["gpu_span_ns"]);
  EXPECT_EQ(t["host_estimate_ns"], p["gpu_busy"]["estimate_ns"]);
  EXPECT_EQ(t["host_error_ns"].get<int64_t>(),
            p["gpu_busy"]["estimate_ns"].get<int64_t>() - t["busy_ns"].get<int64_t>());
  EXPECT_GT(t["pageable_copies"].get<int64_t>(), 0);
  ASSERT_FALSE(t["top_kernels"].empty());
  EXPECT_GT(t["top_kernels"][0]["total_ns"].get<int64_t>(), 0);
  RunResult text = run({gpuwhy_binary(), "audit", "--db", db, "--pid", pid});
  EXPECT_NE(text.out.find("GPU busy (device, CUPTI)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("top kernels:"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("GPU busy (host-side estimate)"), std::string::npos) << text.out;

  // The compute/stall ratio against the simulator's truth. Its device thread runs one operation
  // at a time, each as soon as it is queued: kernels are kernel_busy_ns, copies alone the rest
  // of gpu_busy_ns, and every idle nanosecond the queue was empty (the device waited on the
  // host), so the truth's ratio is kernel / (copies + idle) over the figures' span.
  ASSERT_TRUE(p.contains("gpu_time")) << a.out;
  const json& g = p["gpu_time"];
  EXPECT_EQ(g["source"], "device");
  ASSERT_EQ(g["devices"].size(), 1u) << g;
  const json& d = g["devices"][0];
  const double span = g["span_ns"].get<double>();
  EXPECT_NEAR(d["kernel_ns"].get<double>(), truth_kernel_ns, 0.01 * truth_kernel_ns) << g;
  const double truth_copy_ns = busy_truth - truth_kernel_ns;
  EXPECT_NEAR(d["copy_stall_ns"].get<double>(), truth_copy_ns, 0.01 * truth_copy_ns) << g;
  // The categories split the idle time exactly.
  const json& idle = d["idle"];
  EXPECT_EQ(idle["host_wait_ns"].get<int64_t>() + idle["kernel_wait_ns"].get<int64_t>() +
                idle["other_ns"].get<int64_t>(),
            idle["idle_ns"].get<int64_t>());
  EXPECT_EQ(idle["idle_ns"].get<int64_t>() + d["busy_ns"].get<int64_t>(),
            g["span_ns"].get<int64_t>());
  const double truth_ratio = truth_kernel_ns / (span - truth_kernel_ns);
  EXPECT_NEAR(d["compute_stall_ratio"].get<double>(), truth_ratio, 0.01 * truth_ratio) << g.dump();
  ASSERT_FALSE(d["streams"].empty());
  EXPECT_EQ(d["streams"][0]["thread"]["pid"].get<int64_t>(), summary["pid"].get<int64_t>()) << g;
  EXPECT_NE(text.out.find("compute/stall"), std::string::npos) << text.out;

  // explain measures the GPU-idle time from the same records, and says so.
  RunResult e = run({gpuwhy_binary(), "explain", "--db", db, "--pid", pid, "--json"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const json ex = json::parse(e.out);
  EXPECT_EQ(ex["gpu_time"]["source"], "device") << e.out;
  ASSERT_FALSE(ex["budgets"].empty());
  EXPECT_EQ(ex["budgets"][0]["gpu_idle_source"], "device");
  RunResult et = run({gpuwhy_binary(), "explain", "--db", db, "--pid", pid});
  EXPECT_NE(et.out.find("GPU time (measured on the device"), std::string::npos) << et.out;
}

TEST_F(GpuActivity, StepsAsideForAnotherSubscriber) {
  const std::string db = dir_.file("t.db");
  RunResult r = run({gpuwhy_binary(), "trace", "--quiet", "--no-host-libs", "--gpu-activity", "-o",
                     db, "--", workload("sim_train"), "--scenario", "clean", "--steps", "10"},
                    {{"GPUWHY_CUPTI_LIB", mock_cupti()}, {"GWSIM_CUPTI_SUBSCRIBED", "1"}}, 120);
  // The job ran to its end, untouched, and said why on its stderr.
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(summary_of(r.out).contains("pid")) << r.out;
  EXPECT_NE(r.err.find("another CUPTI subscriber is present"), std::string::npos) << r.err;
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM gpu_activity"), 0);
  EXPECT_GT(query_int(db, "SELECT count(*) FROM v_calls WHERE name = 'cudaLaunchKernel'"), 0);
  // The trace says why the GPU rows are missing.
  EXPECT_EQ(query(db, "SELECT state FROM probe_families WHERE family = 'gpu_activity'"), "failed");
  EXPECT_NE(query(db, "SELECT detail FROM probe_families WHERE family = 'gpu_activity'")
                .find("another CUPTI subscriber"),
            std::string::npos);
}

TEST_F(GpuActivity, JobKilledMidBufferLeavesACompleteTrace) {
  const std::string db = dir_.file("t.db");
  // sim_train runs far longer than the test: killed (SIGKILL, no exit handler, no flush) once
  // its client has sent a first buffer; the shell reports the kill and exits 0.
  const std::string script =
      "\"$0\" --scenario clean --steps 100000 & p=$!; sleep 1.5; "
      "kill -KILL $p; wait $p; echo killed=$?; exit 0";
  RunResult r = run({gpuwhy_binary(), "trace", "--quiet", "--no-host-libs", "--gpu-activity", "-o",
                     db, "--", "/bin/sh", "-c", script, workload("sim_train")},
                    {{"GPUWHY_CUPTI_LIB", mock_cupti()}}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("killed=137"), std::string::npos) << r.out;
  EXPECT_EQ(query(db, "SELECT status FROM session"), "complete");
  // What the client sent before the kill is kept, inside the trace.
  const int64_t kernels = query_int(db, "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'");
  EXPECT_GT(kernels, 0);
  EXPECT_EQ(query_int(db,
                      "SELECT count(*) FROM gpu_activity, session WHERE ts < session.start_ns "
                      "OR ts + dur > session.end_ns"),
            0);
  EXPECT_EQ(
      query_int(db, "SELECT count FROM losses WHERE source = 'cupti' AND cause = 'malformed'"), 0);
}

}  // namespace
}  // namespace gpuwhy::testing

namespace gpuwhy::testing {
namespace {

// A service the user starts itself: the agent binds --gpu-activity-socket and says how to start
// a CUDA process against it; sim_train started so (not by the agent) has its rows stored.
TEST_F(GpuActivity, ServiceStartedByTheUserSendsToTheSocket) {
  const std::string db = dir_.file("t.db");
  const std::string sock = dir_.file("gpu.sock");
  Agent agent(db, {"--no-host-libs", "--gpu-activity", "--gpu-activity-socket", sock}, dir_);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  const std::string err = agent.stderr_text();
  const std::string key = "CUDA_INJECTION64_PATH=";
  const size_t at = err.find(key);
  ASSERT_NE(at, std::string::npos) << err;
  const std::string client = err.substr(at + key.size(), err.find(' ', at) - at - key.size());
  const std::string truth_path = dir_.file("truth.json");
  const RunResult w = run({workload("sim_train"), "--scenario", "clean", "--steps", "20"},
                          {{"CUDA_INJECTION64_PATH", client},
                           {"GPUWHY_GPU_ACTIVITY_SOCKET", sock},
                           {"GPUWHY_CUPTI_LIB", mock_cupti()},
                           {"GW_START_DELAY_MS", "300"},
                           {"GWSIM_TRUTH", truth_path}});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  const json summary = summary_of(w.out);
  ASSERT_TRUE(summary.contains("pid")) << w.out;
  const json truth = read_json(truth_path);
  ASSERT_TRUE(truth.is_object()) << "no ground truth";
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel' AND pid = " +
                              std::to_string(summary["pid"].get<int64_t>())),
            truth["ops"]["kernels"].get<int64_t>());
  EXPECT_NE(access(sock.c_str(), F_OK), 0) << "the socket outlived the trace";
}

}  // namespace
}  // namespace gpuwhy::testing
