// SPDX-License-Identifier: Apache-2.0
// packaging/gpuwhy.service runs the agent as root with only the capabilities its
// CapabilityBoundingSet names, NoNewPrivileges, no network and a read-only file system but for
// its state directory. This runs the real agent under the same restrictions (setpriv for the
// capability bounding set and no_new_privs, unshare for the network and mount namespaces, as
// systemd sets them up; the capability list is read from the unit file itself) and traces a
// process of another user that maps a runtime at a fresh path, which makes the agent use every
// privilege the unit grants: BPF and uprobes, reading the process's memory and maps, stopping and
// continuing it. Also: the static binary runs with no host libraries at all (an empty chroot).
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "store/store.hpp"
#include "support/process.hpp"

namespace gpuwhy::testing {
namespace {

namespace fs = std::filesystem;

int64_t scalar(const store::TraceFile& f, const std::string& sql) {
  auto q = store::run_query(f, sql);
  EXPECT_TRUE(q.ok()) << (q.ok() ? "" : q.error().line()) << " in " << sql;
  if (!q.ok() || q->rows.empty() || q->is_null[0][0]) return -1;
  return std::stoll(q->rows[0][0]);
}

// "CAP_BPF CAP_PERFMON ..." from the unit's CapabilityBoundingSet= line, as setpriv's
// "-all,+bpf,+perfmon,...".
std::string unit_bounding_set() {
  std::ifstream in(std::string(GW_SOURCE_DIR) + "/packaging/gpuwhy.service");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapabilityBoundingSet=", 0) != 0) continue;
    std::istringstream caps(line.substr(line.find('=') + 1));
    std::string cap, out = "-all";
    while (caps >> cap) {
      std::transform(cap.begin(), cap.end(), cap.begin(), ::tolower);
      out += ",+" + cap.substr(4);  // cap_bpf -> bpf
    }
    return out;
  }
  return "";
}

// The flags of the unit's `ExecStart=/usr/bin/gpuwhy trace ... -o FILE` line, without the output
// file: the sandboxed agent runs with exactly the retention the service asks for.
std::vector<std::string> unit_trace_flags() {
  std::ifstream in(std::string(GW_SOURCE_DIR) + "/packaging/gpuwhy.service");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("ExecStart=/usr/bin/gpuwhy trace ", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(" trace ") + 7));
    for (std::string w; words >> w;) {
      if (w == "-o" || w == "--out") {
        words >> w;  // the file: the test's own
        continue;
      }
      out.push_back(w);
    }
  }
  return out;
}

// The test helpers exec without a PATH search: the tool's full path, "" when it is not there.
std::string tool(const std::string& name) {
  for (const char* dir : {"/usr/bin/", "/usr/sbin/", "/bin/", "/sbin/"}) {
    if (::access((dir + name).c_str(), X_OK) == 0) return dir + name;
  }
  return "";
}

class ServiceSandbox : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    for (const char* name : {"setpriv", "unshare", "setsid", "mount", "sh"})
      if (tool(name).empty()) GTEST_SKIP() << name << " is not installed (Debian util-linux)";
    // Readable by the unprivileged user the workload runs as.
    fs::permissions(dir.path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  }
  // The agent as gpuwhy.service runs it, `bounding` its capability bounding set.
  std::vector<std::string> sandboxed_agent(const std::string& bounding, const std::string& db) {
    const std::string state = dir.path;
    std::string flags;
    for (const std::string& f : unit_trace_flags()) flags += " " + f;
    const std::string agent = "exec " + tool("setpriv") + " --bounding-set " + bounding +
                              " --inh-caps -all --no-new-privs " + gpuwhy_binary() + " trace" +
                              flags + " --no-host-libs --out " + db + " --ready-file " +
                              dir.file("agent.ready");
    // ProtectSystem=strict + ReadWritePaths: everything read-only but the state directory.
    const std::string mount = tool("mount");
    return {tool("unshare"),
            "--mount",
            "--net",
            tool("sh"),
            "-c",
            mount + " --make-rprivate / && " + mount + " --bind " + state + " " + state + " && " +
                mount + " -o remount,bind,ro / && " + agent};
  }
  // Whether the agent wrote its ready file within 60 s (Child::wait would kill it on timeout).
  bool wait_ready() {
    for (int i = 0; i < 600; ++i) {
      if (fs::exists(dir.file("agent.ready"))) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  TempDir dir;
};

TEST_F(ServiceSandbox, TracesAnotherUsersProcessWithOnlyTheUnitsCapabilities) {
  const std::string bounding = unit_bounding_set();
  ASSERT_NE(bounding.find("+bpf"), std::string::npos) << bounding;
  const std::string lib_dir = dir.file("lib");
  fs::create_directories(lib_dir);
  fs::copy_file(sim_dir() + "/libcudart.so.13", lib_dir + "/libcudart.so.13");
  const std::string db = dir.file("t.db");
  Child agent(sandboxed_agent(bounding, db), dir.path);
  ASSERT_TRUE(wait_ready()) << agent.stderr_text();
  // nobody, in a session of its own (a process with a terminal is never held).
  RunResult w = run({tool("setsid"), "-w", tool("setpriv"), "--reuid=65534", "--regid=65534",
                     "--clear-groups", workload("launch_storm"), "--calls", "20000"},
                    {{"LD_LIBRARY_PATH", lib_dir}});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_EQ(agent.stop(SIGINT), 0) << agent.stderr_text();
  const auto out = nlohmann::json::parse(w.out.substr(0, w.out.find('\n')));
  const std::string pid = std::to_string(out["pid"].get<int>());
  auto f = store::TraceFile::open(db);
  ASSERT_TRUE(f.ok()) << f.error().line();
  EXPECT_EQ(scalar(**f,
                   "SELECT count(*) FROM api_calls c JOIN apis a ON a.id = c.api WHERE "
                   "a.name = 'cudaLaunchKernel' AND c.pid = " +
                       pid),
            out["ok"].get<int64_t>())
      << agent.stderr_text();
  // Every probe attached (a capability missing shows as a warning: no linker hook, no dlopen
  // hint), the process was held (SIGSTOP/SIGCONT across users: CAP_KILL), nothing was missed.
  EXPECT_EQ(agent.stderr_text().find("warning"), std::string::npos) << agent.stderr_text();
  EXPECT_GE(scalar(**f, "SELECT count FROM event_counts WHERE source = 'held_processes'"), 1)
      << agent.stderr_text();
  EXPECT_EQ(scalar(**f, "SELECT count(*) FROM startup_gaps"), 0) << agent.stderr_text();
  // The unit's flight recorder (--keep 1h --max-size 2G) is what the file was written under.
  EXPECT_EQ(scalar(**f, "SELECT keep_ns FROM retention"), 3'600'000'000'000) << agent.stderr_text();
  EXPECT_EQ(scalar(**f, "SELECT max_bytes FROM retention"), int64_t{2} << 30);
}

// The same sandbox without CAP_BPF and CAP_SYS_ADMIN (either one allows BPF): the trace is refused
// with one line. This shows that the bounding set above is really in force.
TEST_F(ServiceSandbox, WithoutBpfPrivilegesTheTraceIsRefused) {
  std::string bounding = unit_bounding_set();
  for (const std::string cap : {",+bpf", ",+sys_admin"}) {
    const size_t at = bounding.find(cap);
    ASSERT_NE(at, std::string::npos) << cap << " in " << bounding;
    bounding.erase(at, cap.size());
  }
  Child agent(sandboxed_agent(bounding, dir.file("t.db")), dir.path);
  EXPECT_EQ(agent.wait(60), 1);
  const std::string err = agent.stderr_text();
  EXPECT_NE(err.find("CAP_BPF"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

// The packaged binary needs nothing from the host: in an empty root holding only it and a trace,
// it explains the trace exactly as it does on the host.
TEST(StaticBinary, ExplainsATraceInAnEmptyChroot) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: chroot needs root";
  const std::string chroot = tool("chroot");
  if (chroot.empty()) GTEST_SKIP() << "chroot is not installed (Debian coreutils)";
  fs::path trace;
  for (const auto& e : fs::directory_iterator(std::string(GW_SOURCE_DIR) + "/investigations"))
    if (fs::exists(e.path() / "trace.db")) trace = e.path() / "trace.db";
  ASSERT_FALSE(trace.empty()) << "investigations/ keeps traces";
  TempDir root;
  fs::copy_file(gpuwhy_binary(), root.file("gpuwhy"));
  fs::copy_file(trace, root.file("trace.db"));
  fs::create_directories(root.file("tmp"));
  RunResult inside =
      run({chroot, root.path, "/gpuwhy", "explain", "--db", "/trace.db"}, {{"TMPDIR", "/tmp"}});
  EXPECT_EQ(inside.exit_code, 0) << inside.err;
  RunResult outside = run({gpuwhy_binary(), "explain", "--db", trace.string()});
  EXPECT_EQ(inside.out, outside.out);
  EXPECT_FALSE(inside.out.empty());
  RunResult version = run({chroot, root.path, "/gpuwhy", "--version"});
  EXPECT_EQ(version.out, std::string(GPUWHY_VERSION) + "\n");
}

// Static glibc would quietly load host modules for name lookups (NSS), character sets (gconv)
// and locales, and dlopen would read ld.so.cache: `trace` and `check` under strace open none of
// them, and still find the sudo user's home (read from /etc/passwd by gpuwhy itself).
TEST(StaticBinary, TraceAndCheckOpenNoGlibcModule) {
  if (std::string why = root_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::string strace = tool("strace");
  if (strace.empty()) GTEST_SKIP() << "strace is not installed (Debian package strace)";
  const passwd* nobody = ::getpwnam("nobody");
  if (nobody == nullptr || nobody->pw_dir == nullptr) GTEST_SKIP() << "no user nobody";
  const std::string nobody_home = nobody->pw_dir;
  TempDir dir;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"trace", "--quiet", "--duration", "1s", "-o", dir.file("t.db")},
        std::vector<std::string>{"check"}}) {
    SCOPED_TRACE(args[0]);
    const std::string log = dir.file(args[0] + ".strace");
    std::vector<std::string> argv = {
        strace, "-f", "-qq", "-e", "trace=open,openat,openat2", "-o", log, gpuwhy_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = run(argv, {{"SUDO_USER", "nobody"}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(log);
    std::stringstream opened;
    opened << in.rdbuf();
    ASSERT_FALSE(opened.str().empty());
    for (const char* module : {"nsswitch.conf", "libnss_", "/gconv/", "locale-archive",
                               "/usr/lib/locale", "ld.so.cache"})
      EXPECT_EQ(opened.str().find(module), std::string::npos) << module;
    if (args[0] == "trace") {
      EXPECT_NE(opened.str().find("\"" + nobody_home + "/.local/lib"), std::string::npos)
          << "the sudo user's ~/.local is searched";
    }
  }
}

}  // namespace
}  // namespace gpuwhy::testing
