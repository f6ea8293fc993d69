// SPDX-License-Identifier: Apache-2.0
// The little of the protobuf wire format the Perfetto export needs (varints, fixed64, doubles,
// length-delimited strings and messages), so the binary carries no libprotobuf. A message is
// built into a string; a nested one is built separately and added with message().
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gpuwhy::exporter {

class ProtoWriter {
 public:
  enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

  void varint(uint32_t field, uint64_t v) {
    tag(field, kVarint);
    raw_varint(v);
  }
  // int32/int64 fields: negative values as their 64-bit two's complement (10 bytes), as protoc.
  void int64(uint32_t field, int64_t v) { varint(field, static_cast<uint64_t>(v)); }
  void boolean(uint32_t field, bool v) { varint(field, v ? 1 : 0); }
  void fixed64(uint32_t field, uint64_t v) {
    tag(field, kFixed64);
    char b[8];
    std::memcpy(b, &v, 8);  // little-endian, as the wire format (x86-64, aarch64)
    buf_.append(b, 8);
  }
  void dbl(uint32_t field, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    fixed64(field, bits);
  }
  void bytes(uint32_t field, std::string_view v) {
    tag(field, kLengthDelimited);
    raw_varint(v.size());
    buf_.append(v);
  }
  void string(uint32_t field, std::string_view v) { bytes(field, v); }
  void message(uint32_t field, const ProtoWriter& m) { bytes(field, m.buf_); }

  const std::string& data() const { return buf_; }
  size_t size() const { return buf_.size(); }
  void clear() { buf_.clear(); }

 private:
  void tag(uint32_t field, WireType t) { raw_varint((uint64_t{field} << 3) | t); }
  void raw_varint(uint64_t v) {
    while (v >= 0x80) {
      buf_ += static_cast<char>(static_cast<uint8_t>(v) | 0x80);
      v >>= 7;
    }
    buf_ += static_cast<char>(v);
  }
  std::string buf_;
};

}  // namespace gpuwhy::exporter
