// SPDX-License-Identifier: Apache-2.0
// The Debian package (cmake/Packaging.cmake) built with cpack from this build, inspected with
// dpkg-deb and unpacked into a temporary root, where its binary runs; its systemd unit checked by
// systemd-analyze; its trace-rotation helper run on real files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "shell_run.hpp"

namespace gpuwhy::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBuild = GW_BINARY_DIR;
const std::string kSource = GW_SOURCE_DIR;

struct ScratchDir {
  ScratchDir() {
    std::string tmpl = (fs::temp_directory_path() / "gw_deb_XXXXXX").string();
    path = ::mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~ScratchDir() {
    if (!path.empty()) fs::remove_all(path);
  }
  std::string path;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class DebPackage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* tool : {"cpack", "dpkg-deb"}) {
      if (!have_tool(tool)) {
        skip_ = std::string(tool) + " is not installed (Debian packages cmake, dpkg)";
        return;
      }
    }
    scratch_ = new ScratchDir;
    // Into a scratch directory, not the build directory: the test leaves nothing behind.
    const ShellResult r = shell("cd " + shell_quote(kBuild) + " && cpack -G DEB -B " +
                                shell_quote(scratch_->path) + " 2>&1");
    log_ = r.out;
    deb_ = scratch_->path + "/gpuwhy_" + GPUWHY_VERSION + "_amd64.deb";
    if (r.exit_code != 0 || !fs::exists(deb_)) deb_.clear();
  }
  static void TearDownTestSuite() {
    delete scratch_;
    scratch_ = nullptr;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_FALSE(deb_.empty()) << "cpack made no gpuwhy_" << GPUWHY_VERSION << "_amd64.deb:\n"
                               << log_;
  }
  static std::string field(const std::string& name) {
    ShellResult r = shell("dpkg-deb -f " + shell_quote(deb_) + " " + name);
    return r.out.substr(0, r.out.find_last_not_of('\n') + 1);
  }
  static inline ScratchDir* scratch_ = nullptr;
  static inline std::string deb_, log_, skip_;
};

TEST_F(DebPackage, ControlFieldsNameTheStaticBinaryAndItsLicense) {
  EXPECT_EQ(field("Package"), "gpuwhy");
  EXPECT_EQ(field("Version"), GPUWHY_VERSION);
  EXPECT_EQ(field("Architecture"), "amd64");
  EXPECT_NE(field("Maintainer").find('<'), std::string::npos) << field("Maintainer");
#if GW_GPUWHY_STATIC  // sanitizer and fuzz builds link gpuwhy dynamically
  EXPECT_EQ(field("Depends"), "") << "the binary is static: it needs no package";
#endif
  const std::string description = field("Description");
  EXPECT_EQ(description.rfind("why is my GPU job slow?", 0), 0u) << description;
  EXPECT_NE(description.find("License: Apache-2.0"), std::string::npos) << description;
  EXPECT_NE(description.find("glibc 2.28"), std::string::npos) << description;
  const ShellResult info = shell("dpkg-deb -I " + shell_quote(deb_) + " 2>&1");
  for (const char* script : {"postinst", "prerm", "postrm"})
    EXPECT_NE(info.out.find(script), std::string::npos) << info.out;
}

TEST_F(DebPackage, ShipsBinaryManPageCompletionsUnitAndDocs) {
  const ShellResult list = shell("dpkg-deb -c " + shell_quote(deb_) + " 2>&1");
  ASSERT_EQ(list.exit_code, 0) << list.out;
  for (const char* path :
       {"./usr/bin/gpuwhy", "./usr/share/man/man1/gpuwhy.1.gz",
        "./usr/share/bash-completion/completions/gpuwhy",
        "./usr/share/zsh/vendor-completions/_gpuwhy", "./usr/lib/systemd/system/gpuwhy.service",
        "./usr/libexec/gpuwhy/prune-traces", "./usr/share/doc/gpuwhy/copyright",
        "./usr/share/doc/gpuwhy/install.md", "./usr/share/doc/gpuwhy/cli.md",
        "./usr/share/doc/gpuwhy/LICENSE-APACHE", "./usr/share/doc/gpuwhy/LICENSE-GPL"}) {
    EXPECT_NE(list.out.find(std::string(" ") + path + "\n"), std::string::npos) << path;
  }
  std::istringstream lines(list.out);
  std::string line;
  while (std::getline(lines, line)) {
    EXPECT_NE(line.find(" root/root "), std::string::npos) << line;
    if (line.ends_with("./usr/bin/gpuwhy") || line.ends_with("/prune-traces")) {
      EXPECT_EQ(line.rfind("-rwxr-xr-x", 0), 0u) << line;
    }
  }
}

// Unpacked into a temporary root (dpkg -x, as dpkg would install it): the binary runs, and the
// man page and completions it carries are what that binary generates.
TEST_F(DebPackage, UnpackedBinaryRunsAndMatchesItsDocs) {
  ScratchDir root;
  ShellResult x = shell("dpkg -x " + shell_quote(deb_) + " " + shell_quote(root.path) + " 2>&1");
  ASSERT_EQ(x.exit_code, 0) << x.out;
  const std::string bin = root.path + "/usr/bin/gpuwhy";
  ShellResult version = shell(shell_quote(bin) + " --version 2>&1");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out, std::string(GPUWHY_VERSION) + "\n");
  ShellResult man = shell("gzip -dc " + shell_quote(root.path + "/usr/share/man/man1/gpuwhy.1.gz"));
  EXPECT_EQ(man.out, shell(shell_quote(bin) + " generate man").out);
  EXPECT_EQ(slurp(root.path + "/usr/share/bash-completion/completions/gpuwhy"),
            shell(shell_quote(bin) + " generate bash-completion").out);
  EXPECT_EQ(slurp(root.path + "/usr/share/zsh/vendor-completions/_gpuwhy"),
            shell(shell_quote(bin) + " generate zsh-completion").out);
#if GW_GPUWHY_STATIC  // sanitizer and fuzz builds link gpuwhy dynamically
  // The packaged binary is the stripped static one: still no interpreter.
  ShellResult headers = shell("readelf -lW " + shell_quote(bin) + " 2>&1");
  EXPECT_EQ(headers.out.find("INTERP"), std::string::npos) << headers.out;
#endif
  // `gpuwhy check`, the installed binary's first command on a new host, inspects this host (root
  // can trace here: the root tests do).
  if (geteuid() == 0) {
    ShellResult check = shell(shell_quote(bin) + " check 2>&1");
    EXPECT_EQ(check.exit_code, 0) << check.out;
    EXPECT_NE(check.out.find("Result: tracing can work on this host"), std::string::npos)
        << check.out;
  }
  // query reads a trace in the unpacked root's binary too (a committed investigation's trace).
  for (const auto& entry : fs::directory_iterator(kSource + "/investigations")) {
    if (!fs::exists(entry.path() / "trace.db")) continue;
    ShellResult q = shell(shell_quote(bin) + " query --db " +
                          shell_quote((entry.path() / "trace.db").string()) +
                          " --format csv \"SELECT count(*) > 0 FROM processes\" 2>&1");
    EXPECT_EQ(q.exit_code, 0) << q.out;
    EXPECT_NE(q.out.find("1"), std::string::npos) << q.out;
    break;
  }
}

// systemd's own checker accepts the unit (with ExecStart pointing at this build's files, since
// it checks that the programs exist), and its offline security review rates it well.
TEST(ServiceUnit, SystemdAnalyzeAcceptsIt) {
  if (!have_tool("systemd-analyze")) GTEST_SKIP() << "systemd is not installed";
  ScratchDir dir;
  std::string unit = slurp(kSource + "/packaging/gpuwhy.service");
  ASSERT_FALSE(unit.empty());
  for (const auto& [from, to] :
       {std::pair<std::string, std::string>{"/usr/bin/gpuwhy", kBuild + "/gpuwhy"},
        {"/usr/libexec/gpuwhy/prune-traces", kSource + "/packaging/prune-traces"}}) {
    const size_t at = unit.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    for (size_t p = at; (p = unit.find(from, p)) != std::string::npos; p += to.size())
      unit.replace(p, from.size(), to);
  }
  const std::string path = dir.path + "/gpuwhy.service";
  std::ofstream(path) << unit;
  ShellResult verify = shell("systemd-analyze verify --man=no " + shell_quote(path) + " 2>&1");
  EXPECT_EQ(verify.exit_code, 0) << verify.out;
  EXPECT_EQ(verify.out, "") << "every line of the unit must be understood";
  // The overall exposure level is the last line: "→ Overall exposure level for ...: 2.1 OK 🙂".
  ShellResult security = shell("systemd-analyze security --offline=yes --no-pager " +
                               shell_quote(path) + " 2>&1 | tail -1");
  EXPECT_TRUE(security.out.find(" OK ") != std::string::npos ||
              security.out.find(" SAFE ") != std::string::npos)
      << security.out;
}

// prune-traces keeps the newest KEEP numbered backups (by modification time) with their WAL and
// journal files, and touches nothing else.
TEST(ServiceUnit, PruneTracesKeepsTheNewestBackups) {
  ScratchDir dir;
  const std::string d = dir.path;
  for (int i = 1; i <= 5; ++i) {
    const std::string f = d + "/gpuwhy.db." + std::to_string(i);
    std::ofstream(f) << i;
    std::ofstream(f + "-wal") << i;
    ASSERT_EQ(shell("touch -d '2020-01-0" + std::to_string(i) + "' " + shell_quote(f)).exit_code,
              0);
  }
  for (const char* other : {"gpuwhy.db", "gpuwhy.db-wal", "gpuwhy.db.x", "notes.txt"})
    std::ofstream(d + "/" + other) << "keep";
  ShellResult r = shell(shell_quote(kSource + "/packaging/prune-traces") + " " + shell_quote(d) +
                        " gpuwhy.db 2 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(d)) left.insert(e.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"gpuwhy.db", "gpuwhy.db-wal", "gpuwhy.db.x", "notes.txt",
                                         "gpuwhy.db.4", "gpuwhy.db.4-wal", "gpuwhy.db.5",
                                         "gpuwhy.db.5-wal"}));
  ShellResult bad = shell(shell_quote(kSource + "/packaging/prune-traces") + " " + shell_quote(d) +
                          " gpuwhy.db many 2>&1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("KEEP must be a number"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace gpuwhy::testing
