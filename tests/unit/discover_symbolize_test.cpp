// SPDX-License-Identifier: Apache-2.0
// Naming an address from a file's functions (the frames of captured stacks).
#include <gtest/gtest.h>

#include "discover/symbolize.hpp"

namespace gpuwhy::discover {
namespace {

ElfSymbol fn(std::string name, uint64_t vaddr, uint64_t size) {
  ElfSymbol s;
  s.name = std::move(name);
  s.vaddr = vaddr;
  s.size = size;
  s.is_function = true;
  return s;
}

TEST(Symbolize, AnAddressIsNamedByTheFunctionHoldingIt) {
  const std::vector<ElfSymbol> functions = {fn("_ZN2gw7Trainer4stepEm", 0x1000, 0x100),
                                            fn("cudaLaunchKernel", 0x2000, 0)};
  EXPECT_EQ(symbol_at(functions, 0x1010), "gw::Trainer::step(unsigned long)+0x10");
  EXPECT_EQ(symbol_at(functions, 0x1000), "gw::Trainer::step(unsigned long)+0x0");
  EXPECT_EQ(symbol_at(functions, 0x1100), "") << "past the function's end";
  EXPECT_EQ(symbol_at(functions, 0x0fff), "") << "before the first function";
  EXPECT_EQ(symbol_at(functions, 0x2000), "cudaLaunchKernel+0x0") << "a size-0 symbol, exactly";
  EXPECT_EQ(symbol_at(functions, 0x2004), "");
  EXPECT_EQ(symbol_at({}, 0x1000), "");
}

// The call site is the first frame the application owns: not a GPU runtime's, not libc's or
// libstdc++'s, and not a frame whose file is unknown.
TEST(Symbolize, TheCallSiteIsTheFirstFrameOutsideTheRuntimes) {
  auto frame = [](std::string module) {
    Frame f;
    f.module = std::move(module);
    return f;
  };
  EXPECT_EQ(call_site_depth({frame("/usr/local/cuda/lib/libcudart.so.13"),
                             frame("/usr/lib/x86_64-linux-gnu/libcuda.so.1"), frame(""),
                             frame("/usr/lib/x86_64-linux-gnu/libc.so.6"),
                             frame("/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"),
                             frame("/opt/app/train"), frame("/opt/app/libmodel.so")}),
            5u);
  EXPECT_EQ(call_site_depth({frame("/x/libnccl.so.2"), frame("/x/libamdhip64.so.5")}), 2u)
      << "none: the size";
  EXPECT_TRUE(is_runtime_file("libcudart.so.13"));
  EXPECT_FALSE(is_runtime_file("libcudnn.so.9")) << "a library the application chose to call";
}

}  // namespace
}  // namespace gpuwhy::discover
