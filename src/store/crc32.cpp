// SPDX-License-Identifier: Apache-2.0
// The folding follows "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ
// Instruction" (Gopal, Ozturk et al., Intel, 2009): four 128-bit lanes are each multiplied
// forward by x^(512) mod P (k1, k2) and added to the next 64 bytes; the lanes are then folded into
// one by x^(128) mod P (k3, k4), that one down to 64 bits (k5) and reduced to 32 bits by Barrett
// reduction (P and mu). All constants are in the bit-reflected domain of zlib's polynomial.
#include "store/crc32.hpp"

#include <zlib.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gpuwhy::store {

uint32_t crc32_zlib(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {  // zlib takes uInt lengths
    const uInt step = n > (1u << 30) ? (1u << 30) : static_cast<uInt>(n);
    crc = static_cast<uint32_t>(crc32(crc, p, step));
    p += step;
    n -= step;
  }
  return crc;
}

#if defined(__x86_64__)
namespace {

#define GW_CLMUL __attribute__((target("pclmul,sse4.1")))

GW_CLMUL inline __m128i fold_load(const uint8_t* q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}

// a * x^(distance) + b, with `k` the two constants for that distance.
GW_CLMUL inline __m128i fold_step(__m128i a, __m128i k, __m128i b) {
  const __m128i lo = _mm_clmulepi64_si128(a, k, 0x00);
  const __m128i hi = _mm_clmulepi64_si128(a, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(lo, hi), b);
}

// The CRC register (inverted, as the folding wants it) over `n` bytes, n >= 64 and a multiple
// of 16.
GW_CLMUL uint32_t fold_all(const uint8_t* p, size_t n, uint32_t reg) {
  const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
  const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
  const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);
  const __m128i poly_mu = _mm_set_epi64x(0x01f7011641, 0x01db710641);
  const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);
  __m128i l0 = _mm_xor_si128(fold_load(p), _mm_cvtsi32_si128(static_cast<int>(reg)));
  __m128i l1 = fold_load(p + 16), l2 = fold_load(p + 32), l3 = fold_load(p + 48);
  p += 64;
  n -= 64;
  for (; n >= 64; p += 64, n -= 64) {
    l0 = fold_step(l0, k1k2, fold_load(p));
    l1 = fold_step(l1, k1k2, fold_load(p + 16));
    l2 = fold_step(l2, k1k2, fold_load(p + 32));
    l3 = fold_step(l3, k1k2, fold_load(p + 48));
  }
  __m128i x = fold_step(l0, k3k4, l1);
  x = fold_step(x, k3k4, l2);
  x = fold_step(x, k3k4, l3);
  for (; n >= 16; p += 16, n -= 16) x = fold_step(x, k3k4, fold_load(p));
  // 128 bits to 64.
  x = _mm_xor_si128(_mm_srli_si128(x, 8), _mm_clmulepi64_si128(x, k3k4, 0x10));
  x = _mm_xor_si128(_mm_srli_si128(x, 4), _mm_clmulepi64_si128(_mm_and_si128(x, low32), k5, 0x00));
  // Barrett reduction to 32 bits.
  __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x, low32), poly_mu, 0x10);
  t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), poly_mu, 0x00);
  return static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(x, t), 1));
}

#undef GW_CLMUL

bool has_pclmul() {
  static const bool yes = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  return yes;
}

}  // namespace
#endif

uint32_t crc32_of(uint32_t crc, const void* data, size_t n) {
#if defined(__x86_64__)
  if (n >= 64 && has_pclmul()) {
    const size_t body = n & ~size_t{15};
    crc = ~fold_all(static_cast<const uint8_t*>(data), body, ~crc);
    return crc32_zlib(crc, static_cast<const uint8_t*>(data) + body, n - body);
  }
#endif
  return crc32_zlib(crc, data, n);
}

}  // namespace gpuwhy::store
