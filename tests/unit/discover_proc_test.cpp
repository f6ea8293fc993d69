// SPDX-License-Identifier: Apache-2.0
// /proc parsing on literal text, and on real processes: ourselves, and children that load
// libcudart (plainly, from a file since deleted, and inside their own mount namespace).
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>

#include "discover/discover.hpp"

namespace gpuwhy::discover {
namespace {

constexpr const char* kCudart = "/usr/local/cuda/lib/libcudart.so.13";

int64_t wall_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
// Taken while the test binary loads: our start time lies a little before it.
const int64_t kLoadedAtNs = wall_now_ns();

// A child process that runs `setup`, reports whether it worked, then waits to be killed.
class Child {
 public:
  explicit Child(const std::function<bool()>& setup) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[0]);
      const char ok = setup() ? 1 : 0;
      (void)!::write(fds[1], &ok, 1);
      for (;;) ::pause();
    }
    ::close(fds[1]);
    char ok = 0;
    ready_ = pid_ > 0 && ::read(fds[0], &ok, 1) == 1 && ok == 1;
    ::close(fds[0]);
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  bool ready() const { return ready_; }
  uint32_t pid() const { return static_cast<uint32_t>(pid_); }

 private:
  pid_t pid_ = -1;
  bool ready_ = false;
};

bool copy_file(const std::string& from, const std::string& to) {
  const int in = ::open(from.c_str(), O_RDONLY);
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0755);
  bool ok = in >= 0 && out >= 0;
  char buf[65536];
  ssize_t n;
  while (ok && (n = ::read(in, buf, sizeof buf)) > 0) ok = ::write(out, buf, n) == n;
  if (in >= 0) ::close(in);
  if (out >= 0) ::close(out);
  return ok;
}

const LibraryFile* cudart_in(const std::vector<LibraryFile>& libs) {
  const LibraryFile* found = nullptr;
  for (const auto& l : libs) {
    if (l.family != Family::Cudart) continue;
    EXPECT_EQ(found, nullptr) << "libcudart listed twice";  // one file, several mappings
    found = &l;
  }
  return found;
}

TEST(DiscoverMaps, ParsesLiteralText) {
  const std::string text =
      "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n"
      "7f0e1c000000-7f0e1c021000 rw-p 00000000 00:00 0 \n"
      "7f0e2c5d2000-7f0e2c5f4000 r-xp 00002000 fd:01 1311       "
      "/opt/my libs/libcudart.so.12 (deleted)\n"
      "7f0e2c600000-7f0e2c700000 r-xp 0001a000 103:02 99   /home/u/a  b/libnccl.so.2\n"
      "7fff5d0c1000-7fff5d0e2000 rw-p 00000000 00:00 0                          [stack]\n"
      "garbage line\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";
  const auto maps = parse_maps(text);
  ASSERT_EQ(maps.size(), 6u);

  EXPECT_EQ(maps[0].start, 0x400000u);
  EXPECT_EQ(maps[0].end, 0x452000u);
  EXPECT_EQ(maps[0].perms, "r-xp");
  EXPECT_TRUE(maps[0].executable());
  EXPECT_EQ(maps[0].dev_major, 8u);
  EXPECT_EQ(maps[0].dev_minor, 2u);
  EXPECT_EQ(maps[0].inode, 173521u);
  EXPECT_EQ(maps[0].path, "/usr/bin/dbus-daemon");
  EXPECT_FALSE(maps[0].deleted);

  EXPECT_EQ(maps[1].path, "");  // anonymous
  EXPECT_FALSE(maps[1].executable());
  EXPECT_EQ(maps[1].inode, 0u);

  EXPECT_EQ(maps[2].path, "/opt/my libs/libcudart.so.12 (deleted)");
  EXPECT_TRUE(maps[2].deleted);
  EXPECT_EQ(maps[2].offset, 0x2000u);
  EXPECT_EQ(maps[2].dev_major, 0xfdu);

  EXPECT_EQ(maps[3].path, "/home/u/a  b/libnccl.so.2");  // double space kept
  EXPECT_EQ(maps[3].dev_major, 0x103u);                  // majors above 255 are printed in hex too
  EXPECT_EQ(maps[3].offset, 0x1a000u);

  EXPECT_EQ(maps[4].path, "[stack]");
  EXPECT_EQ(maps[5].start, 0xffffffffff600000u);
  EXPECT_EQ(maps[5].path, "[vsyscall]");
}

TEST(DiscoverMaps, EmptyAndPartialInput) {
  EXPECT_TRUE(parse_maps("").empty());
  EXPECT_TRUE(parse_maps("\n\n").empty());
  EXPECT_TRUE(parse_maps("00400000-00452000 r-xp").empty());
  EXPECT_TRUE(parse_maps("zz-00452000 r-xp 00000000 08:02 1 /x").empty());
}

TEST(DiscoverProcStat, CommWithSpacesAndParentheses) {
  const auto st = parse_proc_stat(
      "4242 (my (odd) ) prog) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
      "987654 1000 100 18446744073709551615\n");
  ASSERT_TRUE(st.ok()) << st.error().line();
  EXPECT_EQ(st->pid, 4242u);
  EXPECT_EQ(st->comm, "my (odd) ) prog");
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->ppid, 17u);
  EXPECT_EQ(st->start_ticks, 987654u);
}

TEST(DiscoverProcStat, MalformedLines) {
  EXPECT_FALSE(parse_proc_stat("").ok());
  EXPECT_FALSE(parse_proc_stat("12 no-parens S 1").ok());
  EXPECT_FALSE(parse_proc_stat("12 (short) S 1 2 3").ok());
  EXPECT_FALSE(parse_proc_stat("x (a) S 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5").ok());
}

TEST(DiscoverAllowedCpus, ParsesTheStatusLine) {
  const AllowedCpus a =
      parse_allowed_cpus("Name:\tx\nCpus_allowed:\t0f\nCpus_allowed_list:\t0-3,8,10-11\nMems:\t1\n");
  EXPECT_EQ(a.list, "0-3,8,10-11");
  EXPECT_EQ(a.count, 7u);
  EXPECT_EQ(parse_allowed_cpus("Cpus_allowed_list:\t5").count, 1u);
  EXPECT_EQ(parse_allowed_cpus("Name:\tx\n").count, 0u);         // no such line
  EXPECT_EQ(parse_allowed_cpus("Cpus_allowed_list:\t3-1\n").count, 0u);  // not a range
  EXPECT_EQ(parse_allowed_cpus("Cpus_allowed_list:\tx\n").count, 0u);
  // Ourselves: as many as sched_getaffinity says.
  cpu_set_t set;
  ASSERT_EQ(::sched_getaffinity(0, sizeof(set), &set), 0);
  const auto self = static_cast<uint32_t>(::getpid());
  EXPECT_EQ(read_allowed_cpus(self, self).count, static_cast<uint32_t>(CPU_COUNT(&set)));
}

TEST(DiscoverProcess, ReadsOurselves) {
  auto p = read_process(static_cast<uint32_t>(::getpid()));
  ASSERT_TRUE(p.ok()) << p.error().line();
  EXPECT_EQ(p->pid, static_cast<uint32_t>(::getpid()));
  EXPECT_EQ(p->ppid, static_cast<uint32_t>(::getppid()));
  char comm[32] = {};
  ASSERT_EQ(::prctl(PR_GET_NAME, comm), 0);
  EXPECT_EQ(p->comm, comm);
  char exe[4096] = {};
  ASSERT_GT(::readlink("/proc/self/exe", exe, sizeof exe - 1), 0);
  EXPECT_EQ(p->exe, exe);
  EXPECT_NE(p->cmdline.find(std::string(exe).substr(std::string(exe).rfind('/') + 1)),
            std::string::npos)
      << p->cmdline;
  EXPECT_EQ(p->cmdline.find('\0'), std::string::npos);
  EXPECT_FALSE(p->cgroup.empty());
  EXPECT_EQ(p->cgroup[0], '/');
  // Started before this binary's static initialisers ran, and not long before: clock ticks are
  // 10 ms, so allow that much on the late side.
  EXPECT_LE(p->start_ns, kLoadedAtNs + 20'000'000);
  EXPECT_GT(p->start_ns, kLoadedAtNs - 30'000'000'000);
  EXPECT_GT(p->start_ticks, 0u);
}

TEST(DiscoverProcess, CommOfAChildWithAnOddName) {
  Child child([] { return ::prctl(PR_SET_NAME, "a) (b c") == 0; });
  ASSERT_TRUE(child.ready());
  auto p = read_process(child.pid());
  ASSERT_TRUE(p.ok()) << p.error().line();
  EXPECT_EQ(p->comm, "a) (b c");
  EXPECT_EQ(p->ppid, static_cast<uint32_t>(::getpid()));
}

TEST(DiscoverProcess, MissingPidIsAnError) {
  EXPECT_FALSE(read_process(0x7ffffff0).ok());
  EXPECT_FALSE(gpu_libraries_of(0x7ffffff0).ok());
}

TEST(DiscoverProcess, ListPidsIncludesUs) {
  const auto pids = list_pids();
  EXPECT_TRUE(std::is_sorted(pids.begin(), pids.end()));
  EXPECT_TRUE(std::binary_search(pids.begin(), pids.end(), static_cast<uint32_t>(::getpid())));
}

TEST(DiscoverProcess, NoGpuLibrariesInUs) {
  auto libs = gpu_libraries_of(static_cast<uint32_t>(::getpid()));
  ASSERT_TRUE(libs.ok()) << libs.error().line();
  EXPECT_TRUE(libs->empty());
}

TEST(DiscoverProcess, ChildThatLoadsCudart) {
  if (::access(kCudart, R_OK) != 0) GTEST_SKIP() << kCudart << " is absent";
  Child child([] { return ::dlopen(kCudart, RTLD_NOW | RTLD_LOCAL) != nullptr; });
  ASSERT_TRUE(child.ready()) << "dlopen failed in the child";
  std::vector<SkippedLibrary> skipped;
  auto libs = gpu_libraries_of(child.pid(), &skipped);
  ASSERT_TRUE(libs.ok()) << libs.error().line();
  EXPECT_TRUE(skipped.empty());
  const LibraryFile* lib = cudart_in(*libs);
  ASSERT_NE(lib, nullptr);
  struct stat st {};
  ASSERT_EQ(::stat(kCudart, &st), 0);
  char real[4096];
  ASSERT_NE(::realpath(kCudart, real), nullptr);
  EXPECT_EQ(lib->map_path, real);  // maps show the resolved path
  EXPECT_EQ(lib->path, real);      // same mount namespace: opened as is
  EXPECT_EQ(lib->inode, st.st_ino);
  EXPECT_EQ(lib->dev, st.st_dev);
  EXPECT_EQ(lib->map_inode, st.st_ino);
  EXPECT_EQ(lib->soname, "libcudart.so.13");
  EXPECT_EQ(lib->version, "13");
  EXPECT_EQ(lib->build_id.size(), 40u);
}

TEST(DiscoverProcess, DeletedLibraryIsSkippedWithAReason) {
  if (::access(kCudart, R_OK) != 0) GTEST_SKIP() << kCudart << " is absent";
  const std::string dir = ::testing::TempDir() + "gw_deleted_" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  const std::string copy = dir + "/libcudart.so.13";
  Child child([&] {
    return copy_file(kCudart, copy) && ::dlopen(copy.c_str(), RTLD_NOW) != nullptr &&
           ::unlink(copy.c_str()) == 0;
  });
  ::unlink(copy.c_str());
  ::rmdir(dir.c_str());
  ASSERT_TRUE(child.ready());
  std::vector<SkippedLibrary> skipped;
  auto libs = gpu_libraries_of(child.pid(), &skipped);
  ASSERT_TRUE(libs.ok()) << libs.error().line();
  EXPECT_EQ(cudart_in(*libs), nullptr);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].map_path, copy);
  EXPECT_NE(skipped[0].reason.find("deleted"), std::string::npos) << skipped[0].reason;
}

TEST(DiscoverProcess, LibraryInAnotherMountNamespaceIsOpenedThroughProcRoot) {
  if (::access(kCudart, R_OK) != 0) GTEST_SKIP() << kCudart << " is absent";
  // Like a container: the child mounts a tmpfs that only its own mount namespace sees and loads
  // a copy of libcudart from there. The host path is empty; /proc/PID/root reaches the file.
  const std::string dir = ::testing::TempDir() + "gw_mntns_" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  const std::string copy = dir + "/libcudart.so.13";
  Child child([&] {
    return ::unshare(CLONE_NEWNS) == 0 &&
           ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
           ::mount("gw", dir.c_str(), "tmpfs", 0, nullptr) == 0 && copy_file(kCudart, copy) &&
           ::dlopen(copy.c_str(), RTLD_NOW) != nullptr;
  });
  const bool ready = child.ready();
  if (!ready) {
    ::rmdir(dir.c_str());
    GTEST_SKIP() << "cannot create a mount namespace here (needs CAP_SYS_ADMIN)";
  }
  EXPECT_NE(::access(copy.c_str(), F_OK), 0) << "the copy must not be visible on the host";
  std::vector<SkippedLibrary> skipped;
  auto libs = gpu_libraries_of(child.pid(), &skipped);
  ASSERT_TRUE(libs.ok()) << libs.error().line();
  EXPECT_TRUE(skipped.empty()) << skipped[0].reason;
  const LibraryFile* lib = cudart_in(*libs);
  ASSERT_NE(lib, nullptr);
  EXPECT_EQ(lib->map_path, copy);
  EXPECT_EQ(lib->path, "/proc/" + std::to_string(child.pid()) + "/root" + copy);
  struct stat st {};
  ASSERT_EQ(::stat(lib->path.c_str(), &st), 0);
  EXPECT_EQ(lib->inode, st.st_ino);
  EXPECT_EQ(lib->soname, "libcudart.so.13");
  auto original = read_elf(kCudart);
  ASSERT_TRUE(original.ok());
  EXPECT_EQ(lib->build_id, original->build_id);
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace gpuwhy::discover
