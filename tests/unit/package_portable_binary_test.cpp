// SPDX-License-Identifier: Apache-2.0
// The gpuwhy binary runs on any x86-64 Linux with glibc 2.28 or newer (docs/install.md,
// "Portability"): it is static (no program interpreter, no needed libraries), or, linked
// dynamically, it needs no glibc symbol version above 2.28 and no libstdc++ at all. Checked on
// the built ELF with readelf, as a packager would; the checker is first shown to see the needs of
// a binary that is not portable (this test binary itself).
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>

#include "shell_run.hpp"

namespace gpuwhy::testing {
namespace {

const std::string kGpuwhy = std::string(GW_BINARY_DIR) + "/gpuwhy";

struct ElfNeeds {
  bool readable = false;
  bool has_interpreter = false;          // PT_INTERP: loaded by the host's ld.so
  std::set<std::string> libraries;       // DT_NEEDED
  int glibc_major = 0, glibc_minor = 0;  // highest GLIBC_x.y version needed
  std::set<std::string> cxx_versions;    // GLIBCXX_* and CXXABI_* needed
};

ElfNeeds inspect(const std::string& path) {
  ElfNeeds n;
  const ShellResult headers = shell("readelf -lW " + shell_quote(path) + " 2>&1");
  const ShellResult dynamic = shell("readelf -dW " + shell_quote(path) + " 2>&1");
  const ShellResult versions = shell("readelf -VW " + shell_quote(path) + " 2>&1");
  n.readable = headers.exit_code == 0 && dynamic.exit_code == 0 && versions.exit_code == 0;
  n.has_interpreter =
      std::regex_search(headers.out, std::regex(R"(^\s*INTERP\s)", std::regex::multiline));
  const std::regex needed(R"(\(NEEDED\)\s+Shared library: \[([^\]]+)\])");
  for (std::sregex_iterator it(dynamic.out.begin(), dynamic.out.end(), needed), end; it != end;
       ++it)
    n.libraries.insert((*it)[1]);
  // .gnu.version_r lines: "0x0010:   Name: GLIBC_2.34  Flags: none  Version: 5"
  const std::regex version(R"(Name: ((GLIBC|GLIBCXX|CXXABI)_([0-9]+)\.([0-9]+)[.0-9]*))");
  for (std::sregex_iterator it(versions.out.begin(), versions.out.end(), version), end; it != end;
       ++it) {
    if ((*it)[2] != "GLIBC") {
      n.cxx_versions.insert((*it)[1]);
      continue;
    }
    const int major = std::stoi((*it)[3]), minor = std::stoi((*it)[4]);
    if (major > n.glibc_major || (major == n.glibc_major && minor > n.glibc_minor)) {
      n.glibc_major = major;
      n.glibc_minor = minor;
    }
  }
  return n;
}

bool portable(const ElfNeeds& n) {
  if (!n.has_interpreter) return n.libraries.empty();
  const bool old_glibc = n.glibc_major < 2 || (n.glibc_major == 2 && n.glibc_minor <= 28);
  return old_glibc && n.cxx_versions.empty();
}

TEST(PortableBinary, CheckerSeesTheNeedsOfADynamicBinary) {
  if (!have_tool("readelf")) GTEST_SKIP() << "readelf is not installed (Debian package binutils)";
  // This test binary is linked dynamically against Debian 12's glibc and libstdc++.
  const ElfNeeds self = inspect(std::filesystem::read_symlink("/proc/self/exe").string());
  ASSERT_TRUE(self.readable);
  EXPECT_TRUE(self.has_interpreter);
  EXPECT_TRUE(self.libraries.count("libc.so.6"));
  EXPECT_FALSE(self.cxx_versions.empty());
  EXPECT_EQ(self.glibc_major, 2);  // GLIBC_2.x versions are seen (2.34 at least on Debian 12)
  EXPECT_GE(self.glibc_minor, 34);
  EXPECT_FALSE(portable(self));
}

TEST(PortableBinary, GpuwhyNeedsNoHostLibraryNewerThanGlibc228) {
#if !GW_GPUWHY_STATIC
  GTEST_SKIP() << "this build links gpuwhy dynamically (a sanitizer or fuzz build, or "
                  "-DGPUWHY_STATIC=OFF)";
#endif
  if (!have_tool("readelf")) GTEST_SKIP() << "readelf is not installed (Debian package binutils)";
  const ElfNeeds n = inspect(kGpuwhy);
  ASSERT_TRUE(n.readable) << kGpuwhy;
  std::string libs;
  for (const auto& l : n.libraries) libs += l + " ";
  std::string cxx;
  for (const auto& v : n.cxx_versions) cxx += v + " ";
  EXPECT_TRUE(portable(n)) << "interpreter: " << n.has_interpreter << ", needed: " << libs
                           << ", highest GLIBC_" << n.glibc_major << "." << n.glibc_minor
                           << ", C++ runtime versions: " << cxx;
  // The build links it fully static (cmake/StaticLink.cmake): say so if that ever changes.
  EXPECT_FALSE(n.has_interpreter) << "gpuwhy is no longer static";
  // Static, it asks the host's loader for nothing: no library and no symbol version at all (no
  // .gnu.version_r), so the host's glibc version does not enter into it; only the kernel does.
  EXPECT_TRUE(n.libraries.empty()) << "needed: " << libs;
  EXPECT_EQ(n.glibc_major, 0) << "needs GLIBC_" << n.glibc_major << "." << n.glibc_minor;
  EXPECT_TRUE(n.cxx_versions.empty()) << cxx;
  const ShellResult ldd = shell("ldd " + shell_quote(kGpuwhy) + " 2>&1");
  EXPECT_NE(ldd.out.find("statically linked"), std::string::npos) << ldd.out;
}

// A static binary that called getpwnam or getaddrinfo would load the host's NSS modules at run
// time, which work only with the glibc it was built with: no such entry point is linked. (The
// static glibc and libstdc++ still carry dlopen, used by SQLite's load_extension, which gpuwhy
// disables, and setlocale/iconv_open, used by libstdc++ for named locales, which gpuwhy never
// sets; tests/root/service_sandbox_test.cpp runs the binary in an empty chroot.)
TEST(PortableBinary, GpuwhyLinksNoHostModuleLoader) {
#if !GW_GPUWHY_STATIC
  GTEST_SKIP() << "this build links gpuwhy dynamically (a sanitizer or fuzz build, or "
                  "-DGPUWHY_STATIC=OFF)";
#endif
  if (!have_tool("nm")) GTEST_SKIP() << "nm is not installed (Debian package binutils)";
  const ShellResult symbols = shell("nm " + shell_quote(kGpuwhy) + " 2>&1");
  ASSERT_EQ(symbols.exit_code, 0) << symbols.out.substr(0, 300);
  ASSERT_NE(symbols.out.find(" main\n"), std::string::npos) << "nm sees the symbol table";
  for (const char* loader :
       {"getpwnam", "getpwuid", "getgrnam", "getgrgid", "getgrouplist", "initgroups", "getaddrinfo",
        "gethostbyname", "gethostbyaddr", "getservbyname", "getnameinfo", "getlogin"}) {
    EXPECT_EQ(symbols.out.find(std::string(" ") + loader + "\n"), std::string::npos) << loader;
  }
}

}  // namespace
}  // namespace gpuwhy::testing
