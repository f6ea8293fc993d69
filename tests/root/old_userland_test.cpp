// SPDX-License-Identifier: Apache-2.0
// The static gpuwhy binary runs on an older distribution (docs/install.md, "Portability"): in a
// Debian 11 (bullseye, glibc 2.31) root made by debootstrap (scripts/install-bullseye-root), with
// only /proc and /sys (BTF, the BPF file system, tracefs) from the host, `--version`, `check`,
// `trace -- CMD`, `query` and `explain` work and read that root's userland, not the build host's.
// Each command runs in a private mount namespace (unshare) whose mounts go when it ends, so the
// cached root is never written and nothing is left mounted if the test dies.
#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

namespace fs = std::filesystem;

std::string root_dir() {
  const char* d = std::getenv("GPUWHY_TOOLS_DIR");
  return std::string(d ? d : "/var/cache/gpuwhy-test") + "/bullseye-root";
}

// Why the root is missing ("" when it is there): scripts/install-bullseye-root's stated reason.
std::string missing_root_reason() {
  const std::string root = root_dir();
  if (fs::exists(root + "/.complete")) return {};
  std::ifstream in(root + ".unavailable");
  std::string why;
  std::getline(in, why);
  if (!why.empty()) return "no Debian 11 root at " + root + ": " + why;
  return "no Debian 11 root at " + root +
         " (scripts/test makes it with scripts/install-bullseye-root)";
}

// A static ELF has no PT_INTERP program header (read from the file, no tool needed).
bool is_static(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr eh{};
  if (!in.read(reinterpret_cast<char*>(&eh), sizeof eh)) return false;
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    in.seekg(static_cast<std::streamoff>(eh.e_phoff + i * eh.e_phentsize));
    if (!in.read(reinterpret_cast<char*>(&ph), sizeof ph)) return false;
    if (ph.p_type == PT_INTERP) return false;
  }
  return true;
}

// In the root: /mnt is a tmpfs holding the binary (bind-mounted, read-only by use), the committed
// trace under /mnt/data and the test's scratch dir under /mnt/out; /tmp a tmpfs; /proc and /sys
// the host's (--rbind brings /sys/kernel/btf, /sys/fs/bpf and /sys/kernel/tracing along).
const char* kEnterRoot = R"(set -e
r=$1 bin=$2 data=$3 out=$4; shift 4
mount -t tmpfs -o size=8m gpuwhy-test "$r/mnt"
mkdir "$r/mnt/data" "$r/mnt/out"; : > "$r/mnt/gpuwhy"
mount --bind "$bin" "$r/mnt/gpuwhy"
mount --bind "$data" "$r/mnt/data"
mount --bind "$out" "$r/mnt/out"
mount -t tmpfs -o size=64m gpuwhy-test "$r/tmp"
mount --rbind /proc "$r/proc"
mount --rbind /sys "$r/sys"
exec chroot "$r" "$@"
)";

class OldUserland : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!is_static(gpuwhy_binary()))
      GTEST_SKIP() << "this build links gpuwhy dynamically (-DGPUWHY_STATIC=OFF): it needs the "
                      "build host's libraries";
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    if (std::string why = missing_root_reason(); !why.empty()) GTEST_SKIP() << why;
    if (!fs::exists("/usr/bin/unshare")) GTEST_SKIP() << "unshare is not installed (util-linux)";
    for (const auto& e : fs::directory_iterator(std::string(GW_SOURCE_DIR) + "/investigations"))
      if (fs::exists(e.path() / "trace.db")) trace_dir_ = e.path();
    ASSERT_FALSE(trace_dir_.empty()) << "investigations/ keeps traces";
  }

  // Runs argv (a path inside the root) in the Debian 11 root.
  RunResult in_root(const std::vector<std::string>& argv) {
    std::vector<std::string> full = {"/usr/bin/unshare",  "--mount",
                                     "--propagation",     "private",
                                     "/bin/sh",           "-c",
                                     kEnterRoot,          "sh",
                                     root_dir(),          gpuwhy_binary(),
                                     trace_dir_.string(), out_.path};
    full.insert(full.end(), argv.begin(), argv.end());
    return run(full, {{"TMPDIR", "/tmp"}, {"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}}, 60);
  }

  fs::path trace_dir_;
  TempDir out_;
};

// The root really is the older userland: its own C library says 2.31 (the build host's is 2.36).
TEST_F(OldUserland, RootHasGlibc231) {
  RunResult v = in_root({"/usr/bin/getconf", "GNU_LIBC_VERSION"});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_EQ(v.out, "glibc 2.31\n");
  RunResult libc = in_root({"/lib/x86_64-linux-gnu/libc.so.6"});  // prints its own version
  EXPECT_NE(libc.out.find("release version 2.31"), std::string::npos) << libc.out << libc.err;
}

TEST_F(OldUserland, VersionQueryAndExplainWork) {
  RunResult version = in_root({"/mnt/gpuwhy", "--version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(version.out, std::string(GPUWHY_VERSION) + "\n");

  const std::string trace = (trace_dir_ / "trace.db").string();
  RunResult inside = in_root({"/mnt/gpuwhy", "explain", "--db", "/mnt/data/trace.db"});
  EXPECT_EQ(inside.exit_code, 0) << inside.err;
  RunResult outside = run({gpuwhy_binary(), "explain", "--db", trace});
  EXPECT_FALSE(inside.out.empty());
  EXPECT_EQ(inside.out, outside.out);

  const std::string sql = "SELECT count(*) AS calls, count(DISTINCT tid) AS threads FROM api_calls";
  RunResult q_in = in_root({"/mnt/gpuwhy", "query", "--db", "/mnt/data/trace.db", sql});
  EXPECT_EQ(q_in.exit_code, 0) << q_in.err;
  RunResult q_out = run({gpuwhy_binary(), "query", "--db", trace, sql});
  EXPECT_NE(q_in.out.find("calls"), std::string::npos) << q_in.out;
  EXPECT_EQ(q_in.out, q_out.out);

  // A bad query still gets one line there (the error path needs nothing from the host either).
  RunResult bad = in_root({"/mnt/gpuwhy", "query", "--db", "/mnt/data/trace.db", "SELEC 1"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

// check reads the root's userland: glibc 2.31 exports dlopen from libdl.so.2 (libc.so.6 only
// since 2.34), and that is where check finds it.
TEST_F(OldUserland, CheckSeesTheRootsGlibc) {
  RunResult r = in_root({"/mnt/gpuwhy", "check", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out.substr(0, 300);
  EXPECT_TRUE(j.value("can_trace", false)) << r.out;
  EXPECT_TRUE(j["btf"].value("present", false));
  // The BPF helpers trace calls were probed on this kernel, and none is missing.
  EXPECT_TRUE(j["helpers"].value("probed", false)) << j["helpers"].dump();
  EXPECT_TRUE(j["helpers"]["missing"].empty()) << j["helpers"].dump();
  std::string dlopen;
  for (const auto& f : j["findings"])
    if (f.value("topic", "") == "dlopen") dlopen = f.value("message", "");
  EXPECT_NE(dlopen.find("libdl-2.31.so"), std::string::npos) << dlopen;
  RunResult text = in_root({"/mnt/gpuwhy", "check"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("tracing can work"), std::string::npos) << text.out;
}

// The whole agent there: BPF programs loaded, the root's own shell launched and traced from its
// first instruction, its exit status passed on, the file written and read back in the root.
TEST_F(OldUserland, TraceLaunchesACommandOfTheRoot) {
  RunResult t = in_root({"/mnt/gpuwhy", "trace", "--quiet", "--duration", "20s", "-o",
                         "/mnt/out/t.db", "--", "/bin/sh", "-c", "sleep 0.2; exit 3"});
  EXPECT_EQ(t.exit_code, 3) << t.err;
  RunResult q = in_root({"/mnt/gpuwhy", "query", "--db", "/mnt/out/t.db", "--format", "csv",
                         "SELECT comm, exe, exit_code FROM processes ORDER BY start_ns"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  // /bin/sh is the root's dash (merged /usr: /usr/bin/dash), then the sleep it ran; exit_code is
  // the kernel's wait status (3 << 8 = 768); CSV rows end in CRLF (RFC 4180).
  EXPECT_NE(q.out.find("sh,/usr/bin/dash,768\r\n"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("sleep,/usr/bin/sleep,0\r\n"), std::string::npos) << q.out;
  RunResult state = in_root({"/mnt/gpuwhy", "query", "--db", "/mnt/out/t.db", "--format", "csv",
                             "SELECT status FROM session"});
  EXPECT_NE(state.out.find("complete"), std::string::npos) << state.out << state.err;
}

}  // namespace
}  // namespace gpuwhy::testing
