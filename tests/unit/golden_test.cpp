// SPDX-License-Identifier: Apache-2.0
// Golden tests: tests/golden/<name>/fixture.sql (INSERTs into a schema-2 file; event rows go
// through the chunked tables) -> the output of
// the commands listed in tests/golden/<name>/cases, compared byte for byte with the expected
// files next to them. GPUWHY_UPDATE_GOLDEN=1 rewrites the expected files instead (review the
// diff before committing it).
//
// cases, one per line ("#" starts a comment):
//   explain.txt   explain --per-process      stdout of `gpuwhy explain --db <fixture> ...`
//   bad_pid.err   explain --pid 9            exit code and stderr of a command meant to fail
//   calls.csv     SELECT name, ... FROM ...  a query through store::run_query, as CSV
// The trace path never appears in expected files (it is replaced by <db>), nor does anything
// about the machine or the time the test ran.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis_test_util.hpp"
#include "cli/commands.hpp"
#include "store/store.hpp"

namespace gpuwhy {
namespace {

namespace fs = std::filesystem;

const fs::path kGoldenDir = fs::path(GW_SOURCE_DIR) / "tests" / "golden";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); !from.empty() && at != std::string::npos;
       at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

std::vector<std::string> split_args(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

struct CliRun {
  int rc = 0;
  std::string out, err;
};

// Runs the real CLI in this process with stdout and stderr sent to temporary files.
CliRun run_cli(const std::vector<std::string>& args) {
  std::fflush(stdout);
  std::fflush(stderr);
  FILE* out = std::tmpfile();
  FILE* err = std::tmpfile();
  const int saved_out = dup(1), saved_err = dup(2);
  dup2(fileno(out), 1);
  dup2(fileno(err), 2);
  std::vector<std::string> argv_s = args;
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  CliRun r;
  spdlog::drop_all();  // run_cli sets up its logger once per process; the tests run it many times
  try {
    r.rc = cli::run_cli(static_cast<int>(argv_s.size()), argv.data());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception escaped run_cli: %s\n", e.what());
    r.rc = -1;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);
  auto slurp = [](FILE* f) {
    std::string s;
    std::rewind(f);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    std::fclose(f);
    return s;
  };
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\n") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string query_csv(const std::string& db, const std::string& sql) {
  auto file = store::TraceFile::open(db);
  if (!file) return "error: " + file.error().line() + "\n";
  auto res = store::run_query(*file.value(), sql);
  if (!res) return "error: " + res.error().line() + "\n";
  std::string out;
  for (size_t i = 0; i < res->columns.size(); ++i)
    out += (i ? "," : "") + csv_field(res->columns[i]);
  out += "\n";
  for (const auto& row : res->rows) {
    for (size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + csv_field(row[i]);
    out += "\n";
  }
  return out;
}

std::vector<std::string> fixtures() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kGoldenDir, ec))
    if (e.is_directory() && fs::exists(e.path() / "fixture.sql"))
      names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, MatchesExpectedOutput) {
  const fs::path dir = kGoldenDir / GetParam();
  const fs::path work = fs::path(GW_BINARY_DIR) / "golden" / GetParam();
  fs::create_directories(work);
  const std::string db = (work / "trace.db").string();
  const std::string err = analysis::testing::make_trace_db(db, read_file(dir / "fixture.sql"));
  ASSERT_EQ(err, "") << "fixture " << GetParam();

  const bool update = std::getenv("GPUWHY_UPDATE_GOLDEN") &&
                      std::string(std::getenv("GPUWHY_UPDATE_GOLDEN")) == "1";
  std::istringstream cases(read_file(dir / "cases"));
  std::string line;
  int n = 0;
  while (std::getline(cases, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.find_first_of(" \t");
    ASSERT_NE(sp, std::string::npos) << "bad case line: " << line;
    const std::string expected_name = line.substr(0, sp);
    const std::string rest = line.substr(line.find_first_not_of(" \t", sp));
    std::string actual;
    if (expected_name.ends_with(".csv")) {
      actual = query_csv(db, rest);
    } else {
      std::vector<std::string> args = split_args(rest);
      args.insert(args.begin() + 1, {"--db", db});
      args.insert(args.begin(), "gpuwhy");
      const CliRun r = run_cli(args);
      if (expected_name.ends_with(".err")) {
        EXPECT_NE(r.rc, 0) << expected_name << " should fail";
        actual = "exit " + std::to_string(r.rc) + "\n" + r.err;
      } else {
        EXPECT_EQ(r.rc, 0) << expected_name << ": " << r.err;
        actual = r.out;
      }
    }
    replace_all(actual, db, "<db>");
    const fs::path expected_path = dir / expected_name;
    ++n;
    if (update) {
      write_file(expected_path, actual);
      continue;
    }
    ASSERT_TRUE(fs::exists(expected_path))
        << expected_path << " is missing; run with GPUWHY_UPDATE_GOLDEN=1 to create it";
    EXPECT_EQ(read_file(expected_path), actual)
        << GetParam() << "/" << expected_name << " differs (`" << rest
        << "`); if the change is intended, rerun with GPUWHY_UPDATE_GOLDEN=1 and review the diff";
  }
  EXPECT_GT(n, 0) << "no cases in " << (dir / "cases");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Golden, ::testing::ValuesIn(fixtures()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Golden);

}  // namespace
}  // namespace gpuwhy
