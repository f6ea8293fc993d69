// SPDX-License-Identifier: Apache-2.0
#include "store/wal_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "store/big_endian.hpp"

namespace gpuwhy::store {
namespace {

constexpr uint32_t kMagicLe = 0x377f0682, kMagicBe = 0x377f0683;
constexpr size_t kHeader = 32, kFrameHeader = 24;

// SQLite's WAL checksum over `n` bytes (a multiple of 8), continuing from s[0], s[1]. The words
// are read big-endian when the magic says so, little-endian otherwise.
void checksum(const uint8_t* p, size_t n, bool big, uint32_t s[2]) {
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint32_t a, b;
    if (big) {
      a = be32(p + i);
      b = be32(p + i + 4);
    } else {
      a = uint32_t{p[i]} | uint32_t{p[i + 1]} << 8 | uint32_t{p[i + 2]} << 16 |
          uint32_t{p[i + 3]} << 24;
      b = uint32_t{p[i + 4]} | uint32_t{p[i + 5]} << 8 | uint32_t{p[i + 6]} << 16 |
          uint32_t{p[i + 7]} << 24;
    }
    s[0] += a + s[1];
    s[1] += b + s[0];
  }
}

}  // namespace

WalCheck check_wal(const std::string& wal_path) {
  WalCheck out;
  const int fd = open(wal_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st {};
  uint8_t head[kHeader];
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < static_cast<off_t>(kHeader) ||
      pread(fd, head, kHeader, 0) != static_cast<ssize_t>(kHeader)) {
    close(fd);
    return out;
  }
  const uint32_t magic = be32(head);
  const uint32_t page = be32(head + 8);
  const bool big = magic == kMagicBe;
  uint32_t s[2] = {0, 0};
  checksum(head, 24, big, s);
  if ((magic != kMagicLe && magic != kMagicBe) || page < 512 || page > 65536 ||
      (page & (page - 1)) || s[0] != be32(head + 24) || s[1] != be32(head + 28)) {
    // A log of zeros is what a reset leaves: not damage. Anything else is.
    bool zero = true;
    for (uint8_t b : head) zero = zero && b == 0;
    out.header_damaged = !zero;
    close(fd);
    return out;
  }
  const uint32_t salt1 = be32(head + 16), salt2 = be32(head + 20);
  std::vector<uint8_t> frame(kFrameHeader + page);
  bool chain_ok = true;
  for (off_t at = kHeader; at + static_cast<off_t>(frame.size()) <= st.st_size;
       at += static_cast<off_t>(frame.size())) {
    if (pread(fd, frame.data(), frame.size(), at) != static_cast<ssize_t>(frame.size())) break;
    if (be32(frame.data() + 8) != salt1 || be32(frame.data() + 12) != salt2) {
      if (chain_ok) break;  // an older generation's frames: the log ends here
      continue;
    }
    if (chain_ok) {
      uint32_t t[2] = {s[0], s[1]};
      checksum(frame.data(), 8, big, t);
      checksum(frame.data() + kFrameHeader, page, big, t);
      if (t[0] == be32(frame.data() + 16) && t[1] == be32(frame.data() + 20)) {
        s[0] = t[0];
        s[1] = t[1];
        ++out.valid_frames;
        continue;
      }
      chain_ok = false;
    }
    ++out.ignored_frames;
  }
  close(fd);
  return out;
}

}  // namespace gpuwhy::store
