// SPDX-License-Identifier: Apache-2.0
// The folded CRC-32 against zlib's: every length around the 64-byte and 16-byte steps, odd
// starting addresses, a running CRC carried in, and the chunk sizes explain reads.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "store/crc32.hpp"

namespace gpuwhy::store {
namespace {

TEST(Crc32, AgreesWithZlibOnEveryLengthAndAlignment) {
  std::mt19937_64 rng(11);
  std::vector<uint8_t> buf(70'000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t n = 0; n <= 600; ++n) {
    for (size_t off : {0, 1, 3, 8, 15}) {
      const uint32_t start = n % 3 == 0 ? 0 : static_cast<uint32_t>(rng());
      ASSERT_EQ(crc32_of(start, buf.data() + off, n), crc32_zlib(start, buf.data() + off, n))
          << "length " << n << " offset " << off;
    }
  }
  for (size_t n : {4'096, 16'383, 32'768, 65'537, 69'999}) {
    EXPECT_EQ(crc32_of(0, buf.data() + 1, n), crc32_zlib(0, buf.data() + 1, n)) << n;
  }
  // Known answer: the CRC-32 check value of "123456789".
  EXPECT_EQ(crc32_of(0, "123456789", 9), 0xCBF43926u);
  const std::string s(100, 'a');
  EXPECT_EQ(crc32_of(0, s.data(), s.size()), crc32_zlib(0, s.data(), s.size()));
}

}  // namespace
}  // namespace gpuwhy::store
