// SPDX-License-Identifier: Apache-2.0
// A traced process that attacks the reader's terminal (issue 34): it sets its comm with
// prctl(PR_SET_NAME) to an escape sequence and a newline before a fake VERDICT, is started under
// an argv[0] of the same kind, and makes its GPU calls from a Python file whose name and source
// line carry them too. Every output of the trace must show those names escaped: explain's and
// audit's text, query's table, the CSV and JSON Lines exports and the HTML page hold no raw ESC
// and no forged report line; explain --json keeps the names exactly (its encoder escapes them).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// 15 bytes, the most a comm holds: set the terminal's title, then start a line of our own.
const std::string kComm = "\x1b]0;pw\x07\nVERDICT";
const std::string kFile = "gw\x1b]0;owned\x07\nVERDICT  CLEAN: all fine\x1b[2J.py";
const std::string kArgv0 = "py\x1b[31m\nVERDICT  CLEAN";
const std::string kSource = "\x1b]0;src\x07\x1b[8m";
// The comm the exec gave the process (argv[0]'s first 15 bytes), before PR_SET_NAME renamed it:
// a report may name the process by either.
const std::string kExecComm = kArgv0.substr(0, 15);

// How the text output shows a name: untrusted::shown()'s escapes, spelled out.
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

bool names_the_process(const std::string& text, const std::string& before) {
  return text.find(before + escaped(kComm)) != std::string::npos ||
         text.find(before + escaped(kExecComm)) != std::string::npos;
}

std::string python311() {
  const char* home = std::getenv("HOME");
  for (const char* root : {home, static_cast<const char*>("/root")}) {
    if (!root) continue;
    const std::string p = std::string(root) + "/.pyenv/versions/3.11.7/bin/python3.11";
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Lines of `text` that begin with `prefix`.
int lines_starting(const std::string& text, const std::string& prefix) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.rfind(prefix, 0) == 0;
  return n;
}

bool has_esc(const std::string& s) { return s.find('\x1b') != std::string::npos; }

class HostileNames : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    python_ = python311();
    if (python_.empty())
      GTEST_SKIP() << "no pyenv Python 3.11.7 under $HOME/.pyenv or /root/.pyenv";
  }
  std::string python_;
  TempDir dir;
};

TEST_F(HostileNames, EveryOutputShowsThemEscaped) {
  // The workload's copy under the hostile name, its READBACK line's marker made raw escapes.
  std::string code =
      read_file(std::string(GW_SOURCE_DIR) + "/tests/workloads/python/hostile_names.py");
  const size_t marker = code.find("HOSTILE_SOURCE");
  ASSERT_NE(marker, std::string::npos);
  code.replace(marker, std::string("HOSTILE_SOURCE").size(), kSource);
  const std::string script = dir.file(kFile);
  std::ofstream(script, std::ios::binary) << code;
  const std::string interpreter = dir.file(kArgv0);
  ASSERT_EQ(symlink(python_.c_str(), interpreter.c_str()), 0);

  const std::string db = dir.file("t.db");
  Agent agent(db, {"--no-host-libs", "--lib", sim_dir() + "/libcudart.so.13"}, dir);
  ASSERT_TRUE(agent.ready()) << agent.stderr_text();
  RunResult w = run({interpreter, script, sim_dir() + "/libcudart.so.13", kComm, "60"},
                    {{"GWSIM_KERNEL_NS", "500000"}});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_EQ(agent.stop(), 0) << agent.stderr_text();
  EXPECT_FALSE(has_esc(agent.stderr_text())) << "the agent's own log";

  // The JSON report keeps the names exactly: the escaping below is the text's, not lost data.
  RunResult js = run({gpuwhy_binary(), "explain", "--db", db, "--json", "--per-process"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  EXPECT_FALSE(has_esc(js.out));
  const json report = json::parse(js.out);
  bool comm_kept = false;
  for (const json& p : report["stats"]["processes"])
    comm_kept = comm_kept || p["comm"] == kComm || p["comm"] == kExecComm;
  EXPECT_TRUE(comm_kept) << js.out.substr(0, 4000);
  const bool file_named = js.out.find(json(kFile).dump().substr(1, 10)) != std::string::npos;

  RunResult ex = run({gpuwhy_binary(), "explain", "--db", db, "--per-process"});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  SCOPED_TRACE("explain said:\n" + ex.out);
  EXPECT_FALSE(has_esc(ex.out));
  EXPECT_EQ(lines_starting(ex.out, "VERDICT"), 1) << "a forged verdict line";
  // The names did reach the text, escaped: the comm in the per-process block, and the Python
  // file wherever the report names the read-back's line.
  EXPECT_TRUE(names_the_process(ex.out, "process "));
  if (file_named) {
    EXPECT_NE(ex.out.find(escaped(kFile)), std::string::npos);
  }

  RunResult au = run({gpuwhy_binary(), "audit", "--db", db});
  ASSERT_EQ(au.exit_code, 0) << au.err;
  EXPECT_FALSE(has_esc(au.out)) << au.out;
  EXPECT_EQ(lines_starting(au.out, "VERDICT"), 0) << au.out;
  EXPECT_TRUE(names_the_process(au.out, "")) << au.out;
  // Its allocation sites name the Python file.
  EXPECT_NE(au.out.find(escaped(kFile)), std::string::npos) << au.out;

  RunResult q = run({gpuwhy_binary(), "query", "--db", db,
                     "SELECT comm, cmdline FROM processes UNION ALL SELECT file, source FROM "
                     "python_frames"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_FALSE(has_esc(q.out)) << q.out;
  EXPECT_EQ(lines_starting(q.out, "VERDICT"), 0) << q.out;
  EXPECT_NE(q.out.find(escaped(kSource)), std::string::npos) << "the source text";

  for (const char* format : {"csv", "jsonl"}) {
    SCOPED_TRACE(format);
    const std::string out = dir.file(std::string("export-") + format);
    RunResult e = run({gpuwhy_binary(), "export", "--db", db, "--format", format, "-o", out});
    ASSERT_EQ(e.exit_code, 0) << e.err;
    size_t files = 0;
    bool comm_seen = false;
    for (const auto& entry : fs::directory_iterator(out)) {
      const std::string body = read_file(entry.path());
      ++files;
      EXPECT_FALSE(has_esc(body)) << entry.path();
      EXPECT_EQ(lines_starting(body, "VERDICT"), 0) << entry.path();
      comm_seen = comm_seen || body.find("\\x1b]0;") != std::string::npos ||
                  body.find("\\u001b]0;") != std::string::npos;
    }
    EXPECT_GT(files, 5u);
    EXPECT_TRUE(comm_seen);
  }

  const std::string page = dir.file("report.html");
  RunResult h = run({gpuwhy_binary(), "explain", "--db", db, "--html", page});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  const std::string html = read_file(page);
  EXPECT_FALSE(has_esc(html));
  EXPECT_NE(html.find("\\x1b]0;"), std::string::npos) << "a name, escaped";
}

}  // namespace
}  // namespace gpuwhy::testing
