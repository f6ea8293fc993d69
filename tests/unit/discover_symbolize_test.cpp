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

}  // namespace
}  // namespace gpuwhy::discover
