// SPDX-License-Identifier: Apache-2.0
// Describing library files and finding those installed on the host.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "discover/discover.hpp"

namespace gpuwhy::discover {
namespace {

constexpr const char* kCudart = "/usr/local/cuda/lib/libcudart.so.13";
constexpr const char* kHip = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5";

std::string real(const char* path) {
  char buf[4096];
  return ::realpath(path, buf) != nullptr ? buf : "";
}

const LibraryFile* find_path(const std::vector<LibraryFile>& libs, const std::string& path) {
  for (const auto& l : libs) {
    if (l.path == path) return &l;
  }
  return nullptr;
}

// A scratch directory removed at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    std::string templ = ::testing::TempDir() + "gw_libs_XXXXXX";
    if (::mkdtemp(templ.data()) != nullptr) path = templ;
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

TEST(DiscoverLibraries, VersionFromFileName) {
  EXPECT_EQ(version_from_file_name("libamdhip64.so.5.2.21153"), "5.2.21153");
  EXPECT_EQ(version_from_file_name("libcudart.so.13"), "13");
  EXPECT_EQ(version_from_file_name("libcudart-d0da41ae.so.11.0"), "11.0");
  EXPECT_EQ(version_from_file_name("libnccl.so.2.21.5"), "2.21.5");
  EXPECT_EQ(version_from_file_name("libcuda.so"), "");
  EXPECT_EQ(version_from_file_name("libcudart_static.a"), "");
}

TEST(DiscoverLibraries, DescribesHipThroughItsSymlink) {
  if (::access(kHip, R_OK) != 0) GTEST_SKIP() << kHip << " is absent (install libamdhip64-5)";
  auto lib = describe_library(kHip);
  ASSERT_TRUE(lib.ok()) << lib.error().line();
  EXPECT_EQ(lib->family, Family::Hip);
  EXPECT_EQ(lib->soname, "libamdhip64.so.5");
  // The version comes from the real file behind the soname link.
  EXPECT_EQ(lib->version, version_from_file_name(real(kHip).substr(real(kHip).rfind('/') + 1)));
  EXPECT_NE(lib->version.find('.'), std::string::npos) << lib->version;
  EXPECT_FALSE(lib->build_id.empty());
  struct stat st {};
  ASSERT_EQ(::stat(kHip, &st), 0);
  EXPECT_EQ(lib->inode, st.st_ino);
  EXPECT_EQ(lib->dev, st.st_dev);
}

TEST(DiscoverLibraries, DescribeRefusesWhatIsNotAGpuLibrary) {
  EXPECT_FALSE(describe_library("/nonexistent/libcudart.so.13").ok());
  EXPECT_FALSE(describe_library("/usr/local/cuda/lib").ok());  // a directory
  char self[4096] = {};
  ASSERT_GT(::readlink("/proc/self/exe", self, sizeof self - 1), 0);
  EXPECT_FALSE(describe_library(self).ok());  // not named like a runtime
  TempDir tmp;
  ASSERT_FALSE(tmp.path.empty());
  const std::string fake = tmp.path + "/libcudart.so.12";
  std::system(("echo 'not elf' > '" + fake + "'").c_str());
  EXPECT_FALSE(describe_library(fake).ok());
}

TEST(DiscoverLibraries, SearchDirsAreBoundedAndSkipStubs) {
  const auto dirs = library_search_dirs();
  for (const auto& d : dirs) {
    EXPECT_EQ(d.find("/stubs"), std::string::npos) << d;
    EXPECT_EQ(std::count(dirs.begin(), dirs.end(), d), 1) << d;
  }
  if (::access(kCudart, R_OK) == 0) {
    const std::string cuda_lib = real("/usr/local/cuda/lib");
    EXPECT_NE(std::find(dirs.begin(), dirs.end(), cuda_lib), dirs.end()) << cuda_lib;
  }
}

TEST(DiscoverLibraries, FindsTheHostRuntimesOnce) {
  if (::access(kCudart, R_OK) != 0) GTEST_SKIP() << kCudart << " is absent";
  const auto libs = host_gpu_libraries();
  const LibraryFile* cudart = find_path(libs, real(kCudart));
  ASSERT_NE(cudart, nullptr) << "libcudart.so.13 not found by the host scan";
  EXPECT_EQ(cudart->family, Family::Cudart);
  for (const auto& l : libs) {
    // Symlinks are followed to real files, and each file is listed once.
    EXPECT_EQ(l.path, real(l.path.c_str()));
    EXPECT_EQ(l.path.find("/stubs/"), std::string::npos) << l.path;
    size_t same = 0;
    for (const auto& o : libs) same += o.dev == l.dev && o.inode == l.inode;
    EXPECT_EQ(same, 1u) << l.path;
  }
  if (::access(kHip, R_OK) == 0) {
    EXPECT_NE(find_path(libs, real(kHip)), nullptr);
  }
}

TEST(DiscoverLibraries, ScanOfGivenDirectories) {
  if (::access(kCudart, R_OK) != 0) GTEST_SKIP() << kCudart << " is absent";
  TempDir tmp;
  ASSERT_FALSE(tmp.path.empty());
  ASSERT_EQ(::mkdir((tmp.path + "/stubs").c_str(), 0755), 0);
  // Two links to one file, a dangling link, a file in stubs/ and one whose name is not a runtime.
  ASSERT_EQ(::symlink(kCudart, (tmp.path + "/libcudart.so").c_str()), 0);
  ASSERT_EQ(::symlink(kCudart, (tmp.path + "/libcudart.so.13").c_str()), 0);
  ASSERT_EQ(::symlink("/nonexistent", (tmp.path + "/libnccl.so.2").c_str()), 0);
  ASSERT_EQ(::symlink(kCudart, (tmp.path + "/stubs/libcuda.so").c_str()), 0);
  ASSERT_EQ(::symlink(kCudart, (tmp.path + "/libfoo.so").c_str()), 0);
  const auto libs = host_gpu_libraries({tmp.path, tmp.path + "/stubs"});
  ASSERT_EQ(libs.size(), 1u);
  EXPECT_EQ(libs[0].path, real(kCudart));
  EXPECT_EQ(libs[0].map_path, tmp.path + "/libcudart.so");  // the first alias by name
  EXPECT_EQ(libs[0].soname, "libcudart.so.13");
}

TEST(DiscoverLibraries, LdLibraryPathIsSearched) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path.empty());
  const char* old = std::getenv("LD_LIBRARY_PATH");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("LD_LIBRARY_PATH", ("relative/dir::" + tmp.path).c_str(), 1);
  const auto dirs = library_search_dirs();
  if (old != nullptr) {
    ::setenv("LD_LIBRARY_PATH", saved.c_str(), 1);
  } else {
    ::unsetenv("LD_LIBRARY_PATH");
  }
  EXPECT_NE(std::find(dirs.begin(), dirs.end(), real(tmp.path.c_str())), dirs.end());
  for (const auto& d : dirs) EXPECT_EQ(d[0], '/') << d;
}

}  // namespace
}  // namespace gpuwhy::discover
