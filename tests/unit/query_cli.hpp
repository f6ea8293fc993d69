// SPDX-License-Identifier: Apache-2.0
// `gpuwhy query` run in-process, as a user types it, with its exit code and what it printed: for
// the tests of the query command and of the readers' limits.
#pragma once

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"

namespace gpuwhy::testing {

struct CliResult {
  int code = -1;  // -1: the flags did not parse into a command
  std::string out, err;
};

inline CliResult run_query_cli(std::vector<std::string> args) {
  CLI::App app{"test"};
  cli::Runner run;
  cli::add_query_command(app, run);
  args.insert(args.begin(), {"gpuwhy", "query"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  app.parse(static_cast<int>(argv.size()), argv.data());
  CliResult r;
  if (!run) return r;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  r.code = run();
  r.out = ::testing::internal::GetCapturedStdout();
  r.err = ::testing::internal::GetCapturedStderr();
  return r;
}

}  // namespace gpuwhy::testing
