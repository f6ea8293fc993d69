// SPDX-License-Identifier: Apache-2.0
// A test suite over one trace of gen_trace (bench/gen_trace.cpp: six training processes of 40000
// rows each, written through the agent's own write path), made once per suite, and explain_file
// on it as JSON: the batched and the windowed explain tests compare its answers.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "analysis/analysis.hpp"
#include "export/explain_render.hpp"
#include "shell_run.hpp"
#include "store/store.hpp"
#include "store_fixture.hpp"

namespace gpuwhy::testing {

class GenTraceSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string cmd = std::string(GW_GEN_TRACE) + " --out " + dir_->file("t.db") +
                            " --events 240000 --processes 6 --seed 7 2>&1";
    const ShellResult r = shell(cmd);
    ASSERT_EQ(r.exit_code, 0) << r.out;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::unique_ptr<store::TraceFile> open() {
    auto f = store::TraceFile::open(dir_->file("t.db"));
    EXPECT_TRUE(f) << (f ? "" : f.error().line());
    return f ? std::move(f.value()) : nullptr;
  }
  static nlohmann::ordered_json explain(const analysis::LoadOptions& opt, uint64_t batch_rows) {
    auto file = open();
    if (!file) return {};
    auto r = analysis::explain_file(*file, opt, batch_rows);
    EXPECT_TRUE(r) << (r ? "" : r.error().line());
    return r ? render::explain_json(r.value()) : nlohmann::ordered_json{};
  }
  static inline TempDir* dir_ = nullptr;
};

}  // namespace gpuwhy::testing
