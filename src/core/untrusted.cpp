// SPDX-License-Identifier: Apache-2.0
#include "core/untrusted.hpp"

#include <cstdint>

namespace gpuwhy::untrusted {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

void append_hex_byte(std::string& out, unsigned char b) {
  out += "\\x";
  out += kHexDigits[b >> 4];
  out += kHexDigits[b & 0xf];
}

void append_code_point(std::string& out, uint32_t cp) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHexDigits[(cp >> shift) & 0xf];
}

// Code points that change how a terminal or a viewer lays text out although they print nothing:
// C1 controls (CSI is U+009B), the bidirectional embeddings, overrides and isolates ("Trojan
// Source": text that displays in another order than it reads) and the line/paragraph separators.
bool invisible_control(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

// The length of the well-formed UTF-8 sequence at s[i] and its code point, or 0 when the bytes
// there are not UTF-8 (overlong forms, surrogates and values past U+10FFFF included).
size_t utf8_sequence(std::string_view s, size_t i, uint32_t& cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t min;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2, cp = b0 & 0x1f, min = 0x80;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3, cp = b0 & 0x0f, min = 0x800;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// Appends the escape for s[i...] when one is needed and returns the bytes consumed; returns 0
// when s[i] starts plain text of `len` bytes (set in `len`).
size_t escape_at(std::string_view s, size_t i, std::string* out, size_t& len) {
  const auto b = static_cast<unsigned char>(s[i]);
  len = 1;
  if (b >= 0x20 && b < 0x7f) return 0;
  if (b < 0x20 || b == 0x7f) {
    if (out) {
      if (b == '\n')
        *out += "\\n";
      else if (b == '\r')
        *out += "\\r";
      else if (b == '\t')
        *out += "\\t";
      else
        append_hex_byte(*out, b);
    }
    return 1;
  }
  uint32_t cp = 0;
  const size_t n = utf8_sequence(s, i, cp);
  if (n == 0) {
    if (out) append_hex_byte(*out, b);
    return 1;
  }
  if (invisible_control(cp)) {
    if (out) append_code_point(*out, cp);
    return n;
  }
  len = n;
  return 0;
}

}  // namespace

void append_shown(std::string& out, std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t len = 0;
    const size_t used = escape_at(s, i, &out, len);
    if (used != 0) {
      i += used;
      continue;
    }
    out.append(s.substr(i, len));
    i += len;
  }
}

std::string shown(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  append_shown(out, s);
  return out;
}

bool plain(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t len = 0;
    if (escape_at(s, i, nullptr, len) != 0) return false;
    i += len;
  }
  return true;
}

}  // namespace gpuwhy::untrusted
