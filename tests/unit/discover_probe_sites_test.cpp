// SPDX-License-Identifier: Apache-2.0
// Probe placement: the endbr64 decoder, symbol choice between versions, and resolve_probe_sites
// on the real libcudart, libnccl and libamdhip64.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "discover/discover.hpp"

namespace gpuwhy::discover {
namespace {

constexpr const char* kCudart = "/usr/local/cuda/lib/libcudart.so.13";
constexpr const char* kNccl = "/usr/local/cuda/lib/libnccl.so.2";
constexpr const char* kHip = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5";

#define REQUIRE_FILE(path)                                \
  if (::access(path, R_OK) != 0)                          \
  GTEST_SKIP() << path << " is absent (install the CUDA " \
               << "13 toolkit and libamdhip64-5)"

std::set<std::string> names_of(const std::vector<ProbeSite>& sites) {
  std::set<std::string> names;
  for (const auto& s : sites) names.emplace(s.api->name);
  return names;
}

const ProbeSite* site_of(const std::vector<ProbeSite>& sites, std::string_view name) {
  for (const auto& s : sites) {
    if (s.api->name == name) return &s;
  }
  return nullptr;
}

TEST(DiscoverEntry, Endbr64IsSkipped) {
  const uint8_t endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5};
  EXPECT_EQ(entry_skip_bytes(endbr64, sizeof endbr64), 4u);
  EXPECT_EQ(entry_skip_bytes(endbr64, 4), 4u);
}

TEST(DiscoverEntry, OtherInstructionsAreNot) {
  const uint8_t push_rbp[] = {0x55, 0x48, 0x89, 0xe5};
  const uint8_t endbr32[] = {0xf3, 0x0f, 0x1e, 0xfb};  // 32-bit variant: not ours to skip
  const uint8_t nop5[] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
  const uint8_t rep_ret[] = {0xf3, 0xc3};
  const uint8_t shifted[] = {0x90, 0xf3, 0x0f, 0x1e, 0xfa};
  EXPECT_EQ(entry_skip_bytes(push_rbp, sizeof push_rbp), 0u);
  EXPECT_EQ(entry_skip_bytes(endbr32, sizeof endbr32), 0u);
  EXPECT_EQ(entry_skip_bytes(nop5, sizeof nop5), 0u);
  EXPECT_EQ(entry_skip_bytes(rep_ret, sizeof rep_ret), 0u);
  EXPECT_EQ(entry_skip_bytes(shifted, sizeof shifted), 0u);
}

TEST(DiscoverEntry, ShortOrMissingInputIsNotSkipped) {
  const uint8_t endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
  EXPECT_EQ(entry_skip_bytes(endbr64, 3), 0u);  // cannot prove the whole instruction is there
  EXPECT_EQ(entry_skip_bytes(endbr64, 0), 0u);
  EXPECT_EQ(entry_skip_bytes(nullptr, 4), 0u);
}

TEST(DiscoverEntry, FindFunctionPrefersDefaultVersion) {
  ElfInfo info;
  auto sym = [](const char* name, const char* version, bool dflt, uint64_t off, bool fn = true) {
    ElfSymbol s;
    s.name = name;
    s.version = version;
    s.default_version = dflt;
    s.file_offset = s.vaddr = off;
    s.is_function = fn;
    return s;
  };
  info.dynamic_symbols = {
      sym("hipMemcpy", "hip_4.0", false, 0x100), sym("hipMemcpy", "hip_4.2", true, 0x200),
      sym("hipOld", "hip_4.0", false, 0x300), sym("hipData", "hip_4.2", true, 0x400, false),
      sym("hipNoCode", "", true, 0)};
  ASSERT_NE(find_function(info, "hipMemcpy"), nullptr);
  EXPECT_EQ(find_function(info, "hipMemcpy")->version, "hip_4.2");
  ASSERT_NE(find_function(info, "hipOld"), nullptr);  // only a non-default version: still taken
  EXPECT_EQ(find_function(info, "hipOld")->file_offset, 0x300u);
  EXPECT_EQ(find_function(info, "hipData"), nullptr);  // an object, not code
  EXPECT_EQ(find_function(info, "hipNoCode"), nullptr);
  EXPECT_EQ(find_function(info, "hipMissing"), nullptr);
}

TEST(DiscoverProbeSites, CudartExportsTheLaunchFamily) {
  REQUIRE_FILE(kCudart);
  auto sites = resolve_probe_sites(kCudart, Family::Cudart);
  ASSERT_TRUE(sites.ok()) << sites.error().line();
  const auto names = names_of(*sites);
  for (const char* n : {"cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cudaLaunchKernelExC",
                        "cudaLaunchKernelExC_ptsz", "cudaMemcpyAsync_ptsz", "cudaStreamSynchronize",
                        "cudaGraphLaunch_ptsz"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
  const ProbeSite* launch = site_of(*sites, "cudaLaunchKernel");
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->symbol_version, "libcudart.so.13");
  // NVIDIA's entry points begin with push %rbp, which the kernel emulates: probe in place.
  EXPECT_EQ(launch->skipped_bytes, 0u);
  EXPECT_EQ(launch->probe_offset(), launch->symbol_offset);
  auto elf = read_elf(kCudart);
  ASSERT_TRUE(elf.ok());
  EXPECT_EQ(launch->symbol_offset, find_function(*elf, "cudaLaunchKernel")->file_offset);
  for (const auto& s : *sites) EXPECT_EQ(s.api->family, Family::Cudart);
}

TEST(DiscoverProbeSites, OtherFamiliesAreNotTakenFromCudart) {
  REQUIRE_FILE(kCudart);
  auto sites = resolve_probe_sites(kCudart, Family::Nccl);
  ASSERT_TRUE(sites.ok());
  EXPECT_TRUE(sites->empty());
}

TEST(DiscoverProbeSites, NcclWeakSymbols) {
  REQUIRE_FILE(kNccl);
  auto sites = resolve_probe_sites(kNccl, Family::Nccl);
  ASSERT_TRUE(sites.ok()) << sites.error().line();
  const auto names = names_of(*sites);
  for (const char* n : {"ncclAllReduce", "ncclSend", "ncclRecv", "ncclGroupStart", "ncclGroupEnd",
                        "ncclCommInitRank"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
  EXPECT_EQ(site_of(*sites, "ncclAllReduce")->symbol_version, "");
}

TEST(DiscoverProbeSites, HipEntriesOnThisBuild) {
  REQUIRE_FILE(kHip);
  auto sites = resolve_probe_sites(kHip, Family::Hip);
  ASSERT_TRUE(sites.ok()) << sites.error().line();
  const ProbeSite* memcpy = site_of(*sites, "hipMemcpy");
  ASSERT_NE(memcpy, nullptr);
  EXPECT_EQ(memcpy->symbol_version, "hip_4.2");
  // The skip must follow the bytes actually in the file: Debian 12's libamdhip64 is built
  // without -fcf-protection (hipMemcpy starts with push %rbp), CET builds start with endbr64.
  auto code = read_file_bytes(kHip, memcpy->symbol_offset, 4);
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(memcpy->skipped_bytes, entry_skip_bytes(code->data(), code->size()));
}

TEST(DiscoverProbeSites, Endbr64EntryIsSkippedInARealLibrary) {
  REQUIRE_FILE(kCudart);
  // A copy of libcudart whose cudaLaunchKernel starts with endbr64, as a CET build's would.
  auto elf = read_elf(kCudart);
  ASSERT_TRUE(elf.ok());
  const ElfSymbol* launch = find_function(*elf, "cudaLaunchKernel");
  ASSERT_NE(launch, nullptr);
  std::ifstream in(kCudart, std::ios::binary);
  std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const char endbr64[] = {'\xf3', '\x0f', '\x1e', '\xfa'};
  std::copy(std::begin(endbr64), std::end(endbr64), bytes.begin() + launch->file_offset);
  const std::string path =
      ::testing::TempDir() + "gw_cet_" + std::to_string(::getpid()) + "_libcudart.so.13";
  std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());

  auto sites = resolve_probe_sites(path, Family::Cudart);
  ASSERT_TRUE(sites.ok()) << sites.error().line();
  size_t shifted = 0;
  for (const auto& s : *sites) {
    if (s.api->name == "cudaLaunchKernel") {
      EXPECT_EQ(s.skipped_bytes, 4u);
      EXPECT_EQ(s.probe_offset(), launch->file_offset + 4);
    } else {
      EXPECT_EQ(s.skipped_bytes, 0u) << s.api->name;
    }
    shifted += s.skipped_bytes > 0;
  }
  EXPECT_EQ(shifted, 1u);
  ::unlink(path.c_str());
}

TEST(DiscoverProbeSites, UnreadableFileIsAnError) {
  auto sites = resolve_probe_sites("/nonexistent/libcudart.so.13", Family::Cudart);
  EXPECT_FALSE(sites.ok());
}

}  // namespace
}  // namespace gpuwhy::discover
