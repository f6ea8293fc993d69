// SPDX-License-Identifier: Apache-2.0
// investigations/<name>/ holds a trace captured from the scenario suite and the explain report its
// README quotes (explain.txt). This keeps the README honest: explain on the committed trace must
// still print exactly that report. GPUWHY_UPDATE_GOLDEN=1 rewrites explain.txt after a deliberate
// change to explain's output (then re-read the README's prose against it).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string run_explain(const fs::path& db, int* exit_code) {
  const std::string cmd =
      std::string(GW_BINARY_DIR) + "/gpuwhy explain --db '" + db.string() + "' 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

TEST(Investigations, ExplainStillPrintsWhatTheReadmeQuotes) {
  const fs::path root = fs::path(GW_SOURCE_DIR) / "investigations";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    const fs::path db = entry.path() / "trace.db";
    const fs::path expected = entry.path() / "explain.txt";
    if (!fs::exists(db)) continue;
    SCOPED_TRACE(entry.path().string());
    int code = -1;
    const std::string got = run_explain(db, &code);
    ASSERT_EQ(code, 0) << got;
    if (std::getenv("GPUWHY_UPDATE_GOLDEN")) std::ofstream(expected) << got;
    EXPECT_EQ(got, slurp(expected));
    const std::string readme = slurp(entry.path() / "README.md");
    // The README quotes the verdict line of the report.
    EXPECT_NE(readme.find(got.substr(0, got.find('\n'))), std::string::npos)
        << "README.md must quote the verdict: " << got.substr(0, got.find('\n'));
    ++checked;
  }
  EXPECT_GE(checked, 2) << "at least two investigations are kept";
}

}  // namespace
