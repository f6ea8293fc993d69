// SPDX-License-Identifier: Apache-2.0
// A process's memory for the Python reader's unit tests (python_layout_test, python_stacks_test):
// regions at addresses, read as process_vm_readv would (all or nothing).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>

namespace gpuwhy::test {

class Image {
 public:
  uint64_t alloc(size_t size) {
    const uint64_t at = next_;
    next_ += (size + 0x100) & ~uint64_t{0xff};
    mem_[at] = std::string(size, '\0');
    return at;
  }
  void put(uint64_t addr, const void* p, size_t n) {
    auto it = region(addr, n);
    ASSERT_NE(it, mem_.end()) << std::hex << addr;
    std::memcpy(it->second.data() + (addr - it->first), p, n);
  }
  void u64(uint64_t addr, uint64_t v) { put(addr, &v, 8); }
  void u32(uint64_t addr, uint32_t v) { put(addr, &v, 4); }
  void u8(uint64_t addr, uint8_t v) { put(addr, &v, 1); }
  bool read(uint64_t addr, void* out, size_t n) const {
    auto it = const_cast<Image*>(this)->region(addr, n);
    if (it == mem_.end()) return false;
    std::memcpy(out, it->second.data() + (addr - it->first), n);
    return true;
  }

 private:
  std::map<uint64_t, std::string>::iterator region(uint64_t addr, size_t n) {
    auto it = mem_.upper_bound(addr);
    if (it == mem_.begin()) return mem_.end();
    --it;
    if (addr + n > it->first + it->second.size()) return mem_.end();
    return it;
  }
  uint64_t next_ = 0x7f0000010000;
  std::map<uint64_t, std::string> mem_;
};

}  // namespace gpuwhy::test
