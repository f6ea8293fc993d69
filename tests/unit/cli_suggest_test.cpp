// SPDX-License-Identifier: Apache-2.0
// "Did you mean": the closest known flag or command for a typo, and the one-line error the real
// binary prints with it (exit 2), naming the subcommand's own help.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "cli/suggest.hpp"

namespace gpuwhy::cli {
namespace {

TEST(CliSuggest, EditDistanceCountsEachEditOnce) {
  EXPECT_EQ(edit_distance("since", "since"), 0u);
  EXPECT_EQ(edit_distance("sinse", "since"), 1u);  // a substitution
  EXPECT_EQ(edit_distance("snice", "since"), 1u);  // two neighbours swapped
  EXPECT_EQ(edit_distance("sice", "since"), 1u);   // a letter left out
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(CliSuggest, ClosestIsATypoOrNothing) {
  const std::vector<std::string> flags = {"--since", "--from", "--to", "--pid", "--json", "-o"};
  EXPECT_EQ(closest("--sinse", flags), "--since");
  EXPECT_EQ(closest("--snice", flags), "--since");
  EXPECT_EQ(closest("--jsno", flags), "--json");
  EXPECT_EQ(closest("--pdi", flags), "--pid");
  // Too far from everything: no suggestion rather than a wrong one.
  EXPECT_EQ(closest("--output-format", flags), "");
  EXPECT_EQ(closest("--", flags), "");
  EXPECT_EQ(closest("explian", {"check", "trace", "explain", "audit"}), "explain");
}

std::string run_gpuwhy(const std::string& args, int* rc) {
  const std::string cmd = std::string(GW_BINARY_DIR) + "/gpuwhy " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = p ? pclose(p) : -1;
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

TEST(CliSuggest, TheBinarySuggestsTheFlagOfItsCommand) {
  int rc = 0;
  std::string out = run_gpuwhy("explain --sinse 5m --db /nonexistent.db", &rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("did you mean --since instead of --sinse? See"), std::string::npos) << out;
  EXPECT_NE(out.find("'gpuwhy explain --help'"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  out = run_gpuwhy("explian", &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("did you mean 'explain'?"), std::string::npos) << out;
  // Nothing close: the error alone.
  out = run_gpuwhy("explain --zzzzzzzz", &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_EQ(out.find("did you mean"), std::string::npos) << out;
}

}  // namespace
}  // namespace gpuwhy::cli
