// SPDX-License-Identifier: Apache-2.0
// PythonStacks: a stack key the kernel reports again is named from what was read before, unless
// a code object of it was freed and another made at its address (the same key, another
// function); frames that cannot be named are counted by why. On a memory image of 3.12 code
// objects (the layout of builtin_code_layout), read as process_vm_readv would.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <string>

#include "../support/memory_image.hpp"
#include "cli/python_stacks.hpp"

namespace gpuwhy::cli {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr uint32_t kPid = 7;
constexpr uint64_t kCodeType = 0x5000;  // PyCode_Type's address in the image

// A 3.11+ location table of one entry: 8 code units on firstlineno + 3, no columns
// (Objects/locations.md: 0x80 | code 13 << 3 | length - 1, then the line delta as a signed
// varint, zigzag: 3 -> 6).
const std::string kTable("\xef\x06", 2);

struct Fixture {
  discover::PyCodeLayout c = *discover::builtin_code_layout(0x030c);
  test::Image mem;
  steady_clock::time_point now{};
  std::map<uint64_t, gw_py_stack> kernel;  // the kernel's map of stacks
  PythonStacks stacks{
      [this](uint64_t key, gw_py_stack* out) {
        auto it = kernel.find(key);
        if (it == kernel.end()) return false;
        *out = it->second;
        return true;
      },
      [this](uint32_t, uint64_t a, void* out, size_t n) { return mem.read(a, out, n); },
      [this] { return now; }};

  Fixture() {
    discover::PythonProcess p;
    p.pid = kPid;
    p.supported = true;
    p.minor_hex = 0x030c;
    p.layout = *discover::builtin_py_layout(0x030c);
    p.code = c;
    p.code_type = kCodeType;
    stacks.adopt(p);
  }
  uint64_t str(const std::string& ascii) {
    const uint64_t a = mem.alloc(c.unicode_ascii + ascii.size() + 1);
    mem.u64(a + c.str_length, ascii.size());
    mem.u32(a + c.str_state, (1u | 1u << 3 | 1u << 4) << c.str_kind_shift);  // 1-byte, compact
    mem.put(a + c.unicode_ascii, ascii.data(), ascii.size());
    return a;
  }
  uint64_t bytes(const std::string& b) {
    const uint64_t a = mem.alloc(c.bytes_data + b.size());
    mem.u64(a + c.bytes_size, b.size());
    mem.put(a + c.bytes_data, b.data(), b.size());
    return a;
  }
  // A code object at `at` (a new allocation when 0) naming `function` in `file`.
  uint64_t code(const std::string& file, const std::string& function, int firstlineno,
                uint64_t at = 0) {
    if (!at) at = mem.alloc(code_head_size(c));
    mem.u64(at + c.ob_type, kCodeType);
    mem.u64(at + c.ob_size, 8);
    mem.u64(at + c.filename, str(file));
    mem.u64(at + c.name, str(function));
    mem.u64(at + c.linetable, bytes(kTable));
    mem.u32(at + c.firstlineno, static_cast<uint32_t>(firstlineno));
    return at;
  }
  // The kernel reports `key`: a stack of one frame at instruction 2 of `code_addr`.
  void report(uint64_t key, uint64_t code_addr) {
    gw_py_stack st{};
    st.pid = kPid;
    st.n = 1;
    st.frames[0] = {code_addr, 2, 0};
    kernel[key] = st;
  }
  // A code object at a new address whose stack `key` was named once (id 0).
  uint64_t named_once(const std::string& file, const std::string& function, uint64_t key) {
    const uint64_t a = code(file, function, 10);
    report(key, a);
    EXPECT_EQ(stacks.intern(kPid, key), 0);
    (void)stacks.take_rows();
    return a;
  }
  uint64_t gap(const std::string& cause) {
    for (const auto& [name, n] : stacks.gaps())
      if (name == cause) return n;
    ADD_FAILURE() << "no cause " << cause;
    return 0;
  }
};

TEST(PythonStacks, CodeObjectReplacedAtItsAddressIsNamedAgain) {
  Fixture f;
  const uint64_t a = f.code("/srv/train.py", "train_step", 10);
  f.report(0x55, a);
  EXPECT_EQ(f.stacks.intern(kPid, 0x55), 0);
  auto rows = f.stacks.take_rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].function, "train_step");
  EXPECT_EQ(rows[0].line, 13);

  // Seen again, nothing changed: the same id, no new rows, the map not read again.
  f.kernel.clear();
  f.now += PythonStacks::kRecheck;
  EXPECT_EQ(f.stacks.intern(kPid, 0x55), 0);
  EXPECT_TRUE(f.stacks.take_rows().empty());

  // train_step's code object freed, another made at its address: the kernel's key is the same
  // (same address, same instruction). Within the recheck interval the old id stands (the cost
  // bound: at most one look per code object per interval) ...
  f.code("/srv/gen.py", "generated_fn", 40, a);
  f.now += PythonStacks::kRecheck / 2;
  EXPECT_EQ(f.stacks.intern(kPid, 0x55), 0);
  // ... after it the stack is named again, under a new id, from the frames kept.
  f.now += PythonStacks::kRecheck;
  EXPECT_EQ(f.stacks.intern(kPid, 0x55), 1);
  rows = f.stacks.take_rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].py_stack_id, 1);
  EXPECT_EQ(rows[0].file, "/srv/gen.py");
  EXPECT_EQ(rows[0].function, "generated_fn");
  EXPECT_EQ(rows[0].line, 43);
  EXPECT_EQ(f.stacks.stacks_renamed(), 1u);
  // And it stays so.
  f.now += PythonStacks::kRecheck;
  EXPECT_EQ(f.stacks.intern(kPid, 0x55), 1);
  EXPECT_TRUE(f.stacks.take_rows().empty());
}

// Code made by exec in a loop (tests/workloads/python/short_lived.py, traced: calls of
// "<generated 3>" were named "<generated 2>"): the new code object, its file name string and
// its line table all land where the freed ones were, so every pointer is the same; the names
// differ.
TEST(PythonStacks, SamePointersOtherNamesIsNamedAgain) {
  Fixture f;
  const uint64_t a = f.named_once("<generated 2>", "<module>", 0x66);
  uint64_t file = 0;
  ASSERT_TRUE(f.mem.read(a + f.c.filename, &file, 8));
  f.mem.put(file + f.c.unicode_ascii + 11, "3", 1);  // "<generated 3>", in place
  f.now += PythonStacks::kRecheck;
  EXPECT_EQ(f.stacks.intern(kPid, 0x66), 1);
  const auto rows = f.stacks.take_rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].file, "<generated 3>");
}

TEST(PythonStacks, FreedCodeObjectKeepsItsNameAndIsNotRenamed) {
  Fixture f;
  const uint64_t a = f.named_once("/srv/train.py", "train_step", 0x55);
  // Freed, its memory reused for something that is no code object: the frame the call ran
  // was train_step's; nothing to rename.
  f.mem.u64(a + f.c.ob_type, 0x1234);
  f.now += 2 * PythonStacks::kRecheck;
  EXPECT_EQ(f.stacks.intern(kPid, 0x55), 0);
  EXPECT_EQ(f.stacks.stacks_renamed(), 0u);
}

TEST(PythonStacks, UnnamedFramesAreCountedByWhy) {
  Fixture f;
  const uint64_t not_code = f.code("/srv/x.py", "x", 1);
  f.mem.u64(not_code + f.c.ob_type, 0x1234);  // freed and reused
  f.report(1, not_code);
  f.report(2, 0x10);  // no memory there
  const uint64_t bad_name = f.code("/srv/y.py", "y", 1);
  f.mem.u64(bad_name + f.c.name, 0x20);  // its name points nowhere
  f.report(3, bad_name);
  for (uint64_t key : {1, 2, 3}) EXPECT_GE(f.stacks.intern(kPid, key), 0);
  EXPECT_EQ(f.stacks.intern(kPid, 4), -1) << "a key the kernel's map no longer has";
  EXPECT_EQ(f.gap("frame_not_code"), 1u);
  EXPECT_EQ(f.gap("frame_unreadable"), 1u);
  EXPECT_EQ(f.gap("frame_names_unreadable"), 1u);
  EXPECT_EQ(f.gap("stack_evicted"), 1u);
  EXPECT_EQ(f.gap("frame_no_process"), 0u);
  for (const auto& row : f.stacks.take_rows()) EXPECT_TRUE(row.function.empty());
  EXPECT_EQ(f.stacks.intern(kPid, 1), 0) << "seen again at once: the same, unnamed";

  // A stack of a process not named here.
  gw_py_stack st{};
  st.pid = 99;
  st.n = 1;
  st.frames[0] = {0x10, 2, 0};
  f.kernel[5] = st;
  EXPECT_GE(f.stacks.intern(99, 5), 0);
  EXPECT_EQ(f.gap("frame_no_process"), 1u);

  (void)f.stacks.take_rows();

  // An unnamed frame's address that later holds a code object (in a PyTorch start-up, a module
  // body freed before it was named, then a live function made there: 70 frames of 51 stacks
  // went unnamed): a new stack there is named at once ...
  f.code("/srv/z.py", "late", 5, not_code);
  f.report(6, not_code);
  EXPECT_EQ(f.stacks.intern(kPid, 6), 4);
  auto rows = f.stacks.take_rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].function, "late");
  // ... and the old key, seen again after the recheck interval, is named again too.
  f.now += PythonStacks::kRecheck;
  EXPECT_EQ(f.stacks.intern(kPid, 1), 5);
  rows = f.stacks.take_rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].function, "late");
  // A frame unnamed then and still: the same id, not a new one on every look.
  f.now += PythonStacks::kRecheck;
  EXPECT_EQ(f.stacks.intern(kPid, 2), 1);
}

}  // namespace
}  // namespace gpuwhy::cli
