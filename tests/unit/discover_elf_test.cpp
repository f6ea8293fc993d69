// SPDX-License-Identifier: Apache-2.0
// ELF reading and probe placement against NVIDIA's and AMD's real binaries, checked against
// binutils' readelf, plus corrupt and truncated files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "discover/discover.hpp"

namespace gpuwhy::discover {
namespace {

constexpr const char* kCudart = "/usr/local/cuda/lib/libcudart.so.13";
constexpr const char* kNccl = "/usr/local/cuda/lib/libnccl.so.2";
constexpr const char* kHip = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5";

bool present(const char* path) { return ::access(path, R_OK) == 0; }

#define REQUIRE_FILE(path)                                           \
  if (!present(path))                                                \
  GTEST_SKIP() << path << " is absent (install the CUDA 13 toolkit " \
               << "under /usr/local/cuda and libamdhip64-5)"

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

// readelf's view of one dynamic symbol: value and the "name@@version" column.
struct ReadelfSym {
  uint64_t value = 0;
  std::string full_name;
};

std::map<std::string, ReadelfSym> readelf_dynsyms(const std::string& path) {
  std::map<std::string, ReadelfSym> out;
  std::istringstream in(run("readelf --dyn-syms -W '" + path + "' 2>/dev/null"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    if (!(f >> num >> value >> size >> type >> bind >> vis >> ndx >> name)) continue;
    if (ndx == "UND" || type != "FUNC") continue;
    const std::string bare = name.substr(0, name.find('@'));
    // Keep the default version when a name has several.
    if (out.count(bare) == 0 || name.find("@@") != std::string::npos) {
      out[bare] = {std::stoull(value, nullptr, 16), name};
    }
  }
  return out;
}

// readelf's PT_LOAD rows: offset, vaddr, filesz.
std::vector<LoadSegment> readelf_loads(const std::string& path) {
  std::vector<LoadSegment> out;
  std::istringstream in(run("readelf -lW '" + path + "' 2>/dev/null"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string type, off, vaddr, paddr, filesz, memsz;
    if (!(f >> type >> off >> vaddr >> paddr >> filesz >> memsz) || type != "LOAD") continue;
    LoadSegment s;
    s.file_offset = std::stoull(off, nullptr, 16);
    s.vaddr = std::stoull(vaddr, nullptr, 16);
    s.file_size = std::stoull(filesz, nullptr, 16);
    s.mem_size = std::stoull(memsz, nullptr, 16);
    out.push_back(s);
  }
  return out;
}

const ElfSymbol* find_sym(const ElfInfo& info, const std::string& name, bool want_default = true) {
  const ElfSymbol* any = nullptr;
  for (const auto& s : info.dynamic_symbols) {
    if (s.name != name) continue;
    if (s.default_version == want_default) return &s;
    any = &s;
  }
  return any;
}

std::vector<uint8_t> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string write_temp(const std::vector<uint8_t>& bytes, const char* tag) {
  std::string path = ::testing::TempDir() + "gw_elf_" + tag + "_" + std::to_string(::getpid());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return path;
}

void expect_matches_readelf(const std::string& path, const std::string& name) {
  if (run("command -v readelf").empty()) GTEST_SKIP() << "readelf (binutils) not installed";
  auto info = read_elf(path);
  ASSERT_TRUE(info.ok()) << info.error().line();
  const auto syms = readelf_dynsyms(path);
  const auto loads = readelf_loads(path);
  ASSERT_TRUE(syms.count(name)) << name << " not in readelf output";
  ASSERT_FALSE(loads.empty());
  const ElfSymbol* s = find_sym(*info, name);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->vaddr, syms.at(name).value);
  const std::string expected_name =
      s->version.empty() ? name : name + (s->default_version ? "@@" : "@") + s->version;
  EXPECT_EQ(expected_name, syms.at(name).full_name);
  ASSERT_EQ(info->load_segments.size(), loads.size());
  // The offset, computed here independently from readelf's program headers.
  uint64_t expected_offset = 0;
  for (const auto& l : loads) {
    if (s->vaddr >= l.vaddr && s->vaddr < l.vaddr + l.file_size) {
      expected_offset = s->vaddr - l.vaddr + l.file_offset;
    }
  }
  EXPECT_NE(expected_offset, 0u);
  EXPECT_EQ(s->file_offset, expected_offset);
}

TEST(DiscoverElf, CudartVersionedSymbolMatchesReadelf) {
  REQUIRE_FILE(kCudart);
  auto info = read_elf(kCudart);
  ASSERT_TRUE(info.ok()) << info.error().line();
  EXPECT_EQ(info->soname, "libcudart.so.13");
  EXPECT_EQ(info->machine, 62);           // EM_X86_64
  EXPECT_EQ(info->build_id.size(), 40u);  // SHA-1 build-id, hex
  const ElfSymbol* s = find_sym(*info, "cudaLaunchKernel");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->version, "libcudart.so.13");
  EXPECT_TRUE(s->default_version);
  EXPECT_TRUE(s->is_function);
  EXPECT_FALSE(s->is_weak);
  EXPECT_GT(s->size, 0u);
  expect_matches_readelf(kCudart, "cudaLaunchKernel");
  expect_matches_readelf(kCudart, "cudaMemcpyAsync");
}

TEST(DiscoverElf, CudartBuildIdMatchesReadelf) {
  REQUIRE_FILE(kCudart);
  if (run("command -v readelf").empty()) GTEST_SKIP() << "readelf (binutils) not installed";
  auto info = read_elf(kCudart);
  ASSERT_TRUE(info.ok());
  const std::string notes = run(std::string("readelf -n ") + kCudart + " 2>/dev/null");
  EXPECT_NE(notes.find("Build ID: " + info->build_id), std::string::npos) << info->build_id;
}

TEST(DiscoverElf, HipSymbolVersionIsHip42) {
  REQUIRE_FILE(kHip);
  auto info = read_elf(kHip);
  ASSERT_TRUE(info.ok()) << info.error().line();
  EXPECT_EQ(info->soname, "libamdhip64.so.5");
  EXPECT_FALSE(info->build_id.empty());
  const ElfSymbol* s = find_sym(*info, "hipMemcpy");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->version, "hip_4.2");
  EXPECT_TRUE(s->default_version);
  expect_matches_readelf(kHip, "hipMemcpy");
  expect_matches_readelf(kHip, "hipLaunchKernel");
}

TEST(DiscoverElf, NcclHasWeakUnversionedSymbols) {
  REQUIRE_FILE(kNccl);
  auto info = read_elf(kNccl);
  ASSERT_TRUE(info.ok()) << info.error().line();
  EXPECT_EQ(info->soname, "libnccl.so.2");
  EXPECT_FALSE(info->build_id.empty());
  const ElfSymbol* s = find_sym(*info, "ncclAllReduce");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->is_weak);
  EXPECT_TRUE(s->version.empty());
  EXPECT_TRUE(s->default_version);
  expect_matches_readelf(kNccl, "ncclAllReduce");
}

TEST(DiscoverElf, OnlyDefinedSymbols) {
  REQUIRE_FILE(kCudart);
  auto info = read_elf(kCudart);
  ASSERT_TRUE(info.ok());
  // libcudart imports malloc from libc: an undefined symbol, which must not be listed.
  EXPECT_EQ(find_sym(*info, "malloc"), nullptr);
}

TEST(DiscoverElf, FileOffsetThroughSegments) {
  // A data segment loaded 2 MiB above its file offset, as libnccl's is.
  const std::vector<LoadSegment> segs = {{0x0, 0x0, 0x1000, 0x1000, true},
                                         {0x201000, 0x1000, 0x100, 0x900, false}};
  EXPECT_EQ(file_offset_of(segs, 0x10), 0x10u);
  EXPECT_EQ(file_offset_of(segs, 0x201010), 0x1010u);
  EXPECT_FALSE(file_offset_of(segs, 0x201200));  // .bss: in memory only
  EXPECT_FALSE(file_offset_of(segs, 0x5000));    // between segments
}

TEST(DiscoverElf, MissingFileIsAnError) {
  auto info = read_elf("/nonexistent/libcudart.so.13");
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.error().what.find("/nonexistent/libcudart.so.13"), std::string::npos);
}

TEST(DiscoverElf, NotAnElfIsAnError) {
  const std::string path = write_temp({'h', 'e', 'l', 'l', 'o', '\n'}, "text");
  auto info = read_elf(path);
  EXPECT_FALSE(info.ok());
  ::unlink(path.c_str());
}

TEST(DiscoverElf, TruncatedCopiesGiveErrorsNotCrashes) {
  REQUIRE_FILE(kCudart);
  const std::vector<uint8_t> whole = slurp(kCudart);
  ASSERT_GT(whole.size(), 0x10000u);
  for (size_t len : {size_t{0}, size_t{4}, size_t{16}, size_t{63}, size_t{64}, size_t{0x100},
                     size_t{0x1000}, size_t{0x5000}, whole.size() / 2, whole.size() - 64}) {
    const std::string path = write_temp({whole.begin(), whole.begin() + len}, "trunc");
    auto info = read_elf(path);
    // Cut before the dynamic symbols end, the file must be refused; section headers sit at the
    // end of the file, so every cut here loses them.
    EXPECT_FALSE(info.ok()) << "length " << len;
    if (!info.ok()) {
      EXPECT_FALSE(info.error().what.empty());
    }
    ::unlink(path.c_str());
  }
}

TEST(DiscoverElf, CorruptHeadersGiveErrorsOrSaneResults) {
  REQUIRE_FILE(kCudart);
  const std::vector<uint8_t> whole = slurp(kCudart);
  // Overwrite header fields (section/program header offsets, counts, entry sizes) and the
  // start of .dynsym/.gnu.version_d with junk; reading must not crash (run under ASan).
  const size_t spots[] = {0x20, 0x28, 0x36, 0x38, 0x3a, 0x3c, 0x3e, 0x40, 0x48, 0xef0, 0x7bc0};
  for (size_t spot : spots) {
    for (uint8_t junk : {uint8_t{0x00}, uint8_t{0xff}, uint8_t{0x7f}}) {
      std::vector<uint8_t> bad = whole;
      for (size_t i = 0; i < 8 && spot + i < bad.size(); ++i) bad[spot + i] = junk;
      const std::string path = write_temp(bad, "corrupt");
      auto info = read_elf(path);
      if (info.ok()) {
        for (const auto& s : info->dynamic_symbols) EXPECT_FALSE(s.name.empty());
      } else {
        EXPECT_FALSE(info.error().what.empty());
      }
      ::unlink(path.c_str());
    }
  }
}

TEST(DiscoverElf, RandomlyDamagedCopiesNeverCrash) {
  REQUIRE_FILE(kCudart);
  const std::vector<uint8_t> whole = slurp(kCudart);
  // Headers, .dynsym, .dynstr, .gnu.version* and the notes all sit in the first 64 KiB.
  const size_t region = std::min<size_t>(whole.size(), 0x10000);
  std::mt19937_64 rng(20240601);  // fixed: a failure must reproduce
  size_t refused = 0;
  for (int i = 0; i < 150; ++i) {
    std::vector<uint8_t> bad = whole;
    const int flips = 1 + static_cast<int>(rng() % 16);
    for (int k = 0; k < flips; ++k) bad[rng() % region] = static_cast<uint8_t>(rng());
    if (rng() % 8 == 0) bad.resize(rng() % bad.size());
    const std::string path = write_temp(bad, "fuzz");
    auto info = read_elf(path);
    if (info.ok()) {
      (void)resolve_probe_sites(path, Family::Cudart);  // must not crash either
    } else {
      ++refused;
    }
    ::unlink(path.c_str());
  }
  EXPECT_GT(refused, 0u);
}

TEST(DiscoverElf, ReadFileBytesStopsAtEnd) {
  const std::string path = write_temp({1, 2, 3, 4, 5}, "bytes");
  auto b = read_file_bytes(path, 3, 16);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<uint8_t>{4, 5}));
  auto past = read_file_bytes(path, 100, 4);
  ASSERT_TRUE(past.ok());
  EXPECT_TRUE(past->empty());
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace gpuwhy::discover
