// SPDX-License-Identifier: Apache-2.0
// The Python frame reader from the interpreter's published layout: _Py_DebugOffsets blocks as
// 3.13 and 3.14 (and the free-threaded 3.14t) lay them out, and a process memory image built
// exactly as those versions' headers lay out thread states, frames, code objects, strings and
// bytes, walked the way the probe walks it (walk_python_thread mirrors bpf/python.bpf.h) and
// named by PythonNamer. No 3.14 interpreter exists on the machines of this project: this is
// what 3.14 and 3.14t are tested on (3.10-3.13 also run live: tests/root/python_frames_test).
//
// Offsets of 3.14 objects, x86-64: offsetof() on CPython 3.14.10's own headers (Debian's
// libpython3.14-dev 3.14.10-1; the v3.14.0 tag was not to be had here), compiled as a GIL build
// and with Py_GIL_DISABLED; _Py_DebugOffsets_INIT of the same headers gives the same values:
//  - PyObject (Include/object.h): 16 bytes, ob_type at 8; free-threaded: ob_tid, ob_flags,
//    ob_mutex, ob_gc_bits, ob_ref_local, ob_ref_shared, then ob_type at 24 (32 bytes).
//  - _PyInterpreterFrame (Include/internal/pycore_interpframe_structs.h): f_executable 0,
//    previous 8, instr_ptr 56, stackpointer 64, then (3.14t) int32_t tlbc_index 72,
//    return_offset, owner at 74 (3.14t: 78), visited, localsplus at 80; 88 bytes.
//  - PyCodeObject (Include/cpython/code.h, _PyCode_DEF): co_firstlineno 68, co_filename 112,
//    co_name 120, co_qualname 128, co_linetable 136, co_code_adaptive 208 (216 bytes); 3.14t:
//    each + 16, with co_tlbc at 224 and co_code_adaptive at 232 (240 bytes).
//  - PyASCIIObject (Include/cpython/unicodeobject.h): length 16, state 32, 40 bytes (compact:
//    56); 3.14t: length 32, state 48 (interned a byte of its own: kind from bit 8), 56 (72).
//  - PyBytesObject: ob_size 16, ob_sval 32; 3.14t: 32, 48.
//  - _PyRuntimeState.interpreters.head 808, PyInterpreterState.threads.head 7344,
//    PyThreadState next 8, current_frame 72, native_thread_id 160 (the GIL build's: the reader
//    takes whatever the block says).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "../support/memory_image.hpp"
#include "discover/python.hpp"

namespace gpuwhy::discover {
namespace {

// The 3.13.0 location table of python_lines_test.cpp's f() (first line 2); 3.14's location
// table has the same format (Include/cpython/code.h _PyCodeLocationInfoKind, Objects/
// locations.md). Code unit 33 is on line 6, 40 on line 7, 49 on line 8.
const std::string kTable(
    "\x80\x00\xd8\x08\x09\x88\x41\x89\x05\x80\x41\xe4\x14\x19\x98\x21\x94\x48\xd3\x08\x1d\x91"
    "\x48\x88\x71\x8a\x11\x91\x48\x80\x41\xd0\x08\x1d\xde\x07\x08\xdc\x0f\x12\x90\x31\x8b\x76"
    "\x88\x0d\xd8\x0b\x0c\xf9\xf2\x07\x00\x09\x1e",
    55);
constexpr int kUnits = 55;

// One version's object layout, as its headers give it (see the top of this file).
struct Objects {
  bool ft;
  uint32_t head = ft ? 32 : 16, ob_type = head - 8, ob_size = head;
  uint32_t str_length = head, str_state = head + 16, str_ascii = ft ? 56 : 40;
  uint32_t bytes_data = head + 16;
  uint32_t fr_exec = 0, fr_prev = 8, fr_instr = 56, fr_tlbc = ft ? 72u : 0u,
           fr_owner = ft ? 78u : 74u, fr_size = 88;
  uint32_t co_first = ft ? 84u : 68u, co_file = ft ? 128u : 112u, co_name = co_file + 8,
           co_qual = co_file + 16, co_table = co_file + 24, co_tlbc = ft ? 224u : 0u,
           co_adaptive = ft ? 232u : 208u, co_size = co_adaptive + 8;
  // Thread and runtime offsets: any the block says; 3.14.10's.
  uint32_t interp_head = 808, threads_head = 7344, ts_next = 8, ts_frame = 72, ts_id = 160;
};

// The 3.14 _Py_DebugOffsets block (Include/internal/pycore_debug_offsets.h), 95 words: the
// words the reader takes, as _Py_DebugOffsets_INIT sets them (word numbers: python_layout.cpp).
std::string block_314(const Objects& o) {
  std::vector<uint64_t> w(95, 0);
  std::memcpy(w.data(), "xdebugpy", 8);
  w[1] = 0x030e00f0;  // 3.14.0 final
  w[2] = o.ft;
  w[5] = o.interp_head;
  w[6] = 100000, w[9] = o.threads_head;                                  // interpreter_state
  w[22] = 8000, w[24] = o.ts_next, w[26] = o.ts_frame, w[28] = o.ts_id;  // thread_state
  w[31] = o.fr_size, w[32] = o.fr_prev, w[33] = o.fr_exec, w[34] = o.fr_instr;
  w[35] = 80, w[36] = o.fr_owner, w[37] = 64, w[38] = o.fr_tlbc;  // 0 in a GIL build
  w[39] = o.co_size, w[40] = o.co_file, w[41] = o.co_name, w[42] = o.co_qual;
  w[43] = o.co_table, w[44] = o.co_first, w[48] = o.co_adaptive, w[49] = o.co_tlbc;
  w[50] = o.head, w[51] = o.ob_type;
  w[56] = o.head + 16, w[57] = o.head + 8, w[58] = o.ob_size;  // tuple: size, ob_item, ob_size
  w[74] = o.head + 24, w[75] = o.ob_size, w[76] = o.bytes_data;
  w[77] = o.str_ascii + 24, w[78] = o.str_state, w[79] = o.str_length, w[80] = o.str_ascii;
  return std::string(reinterpret_cast<const char*>(w.data()), w.size() * 8);
}

// A process image of one version: strings, code objects, threads and their frames.
struct Process {
  Objects o;
  test::Image mem;
  uint64_t runtime = 0, code_type = 0, str_type = 0, bytes_type = 0, interp = 0;
  uint64_t last_ts = 0;

  explicit Process(bool ft) : o{ft} {
    runtime = mem.alloc(1024);
    code_type = mem.alloc(64), str_type = mem.alloc(64), bytes_type = mem.alloc(64);
    interp = mem.alloc(o.threads_head + 8);
    mem.u64(runtime + o.interp_head, interp);
  }
  // A compact str: ASCII, or (latin1) 1-byte non-ASCII text, whose data follow
  // PyCompactUnicodeObject.
  uint64_t str(const std::string& latin1, bool ascii) {
    const uint32_t data = ascii ? o.str_ascii : o.str_ascii + 16;
    const uint64_t a = mem.alloc(data + latin1.size() + 1);
    mem.u64(a + o.ob_type, str_type);
    mem.u64(a + o.str_length, latin1.size());
    const uint32_t shift = o.ft ? 8 : 2;  // interned: a byte (3.14t) or 2 bits
    mem.u32(a + o.str_state, ((1u /*kind*/) | (1u << 3) /*compact*/ | (ascii ? 1u << 4 : 0u))
                                 << shift);
    mem.put(a + data, latin1.data(), latin1.size());
    return a;
  }
  uint64_t bytes(const std::string& b) {
    const uint64_t a = mem.alloc(o.bytes_data + b.size() + 1);
    mem.u64(a + o.ob_type, bytes_type);
    mem.u64(a + o.ob_size, b.size());
    mem.put(a + o.bytes_data, b.data(), b.size());
    return a;
  }
  // A code object; 3.14t: with `copies` per-thread bytecode copies besides its own (co_tlbc's
  // entries[0] is co_code_adaptive itself: Include/cpython/code.h). Returns its address.
  uint64_t code(const std::string& file, const std::string& qualname, bool ascii_name, int copies,
                std::vector<uint64_t>* tlbc) {
    const uint64_t c = mem.alloc(o.co_adaptive + kUnits * 2);
    mem.u64(c + o.ob_type, code_type);
    mem.u64(c + o.ob_size, kUnits);
    mem.u64(c + o.co_file, str(file, true));
    mem.u64(c + o.co_name, str("f", true));
    mem.u64(c + o.co_qual, str(qualname, ascii_name));
    mem.u64(c + o.co_table, bytes(kTable));
    mem.u32(c + o.co_first, 2);
    if (o.ft) {
      const uint64_t arr = mem.alloc(8 + 8 * (copies + 1));
      mem.u64(arr, copies + 1);
      mem.u64(arr + 8, c + o.co_adaptive);
      if (tlbc) tlbc->push_back(c + o.co_adaptive);
      for (int i = 1; i <= copies; ++i) {
        const uint64_t copy = mem.alloc(kUnits * 2);
        mem.u64(arr + 8 + 8 * i, copy);
        if (tlbc) tlbc->push_back(copy);
      }
      mem.u64(c + o.co_tlbc, arr);
    }
    return c;
  }
  struct Frame {
    uint64_t executable;  // tag bits included
    uint8_t owner;
    uint64_t instr_ptr;
    int32_t tlbc_index;
  };
  // A thread whose frames are `frames`, innermost first, laid one after the other in its data
  // stack (callers below callees); added at the head of the interpreter's thread list.
  void thread(uint64_t native_id, const std::vector<Frame>& frames) {
    const uint64_t ts = mem.alloc(GW_PY_READ_TSTATE + 64);
    const uint64_t stack = mem.alloc(o.fr_size * frames.size());
    for (size_t i = 0; i < frames.size(); ++i) {
      // frames[0] is the innermost: the highest address.
      const uint64_t f = stack + o.fr_size * (frames.size() - 1 - i);
      mem.u64(f + o.fr_exec, frames[i].executable);
      mem.u64(f + o.fr_prev, i + 1 < frames.size() ? f - o.fr_size : 0);
      mem.u64(f + o.fr_instr, frames[i].instr_ptr);
      mem.u8(f + o.fr_owner, frames[i].owner);
      if (o.ft) mem.u32(f + o.fr_tlbc, static_cast<uint32_t>(frames[i].tlbc_index));
      if (i == 0) mem.u64(ts + o.ts_frame, f);
    }
    mem.u64(ts + o.ts_id, native_id);
    mem.u64(ts + o.ts_next, last_ts);
    mem.u64(interp + o.threads_head, ts);
    last_ts = ts;
  }
  MemoryReader reader() const {
    return [this](uint64_t a, void* out, size_t n) { return mem.read(a, out, n); };
  }
};

// frame owners, Include/internal/pycore_interpframe_structs.h (3.14)
constexpr uint8_t kThread = 0, kGenerator = 1, kInterpreter = 3, kCStack = 4;

struct Named {
  std::string function;
  int line;
};

std::vector<Named> walk_and_name(const Process& p, const gw_py_layout& l, const PyCodeLayout& c,
                                 uint64_t native_id) {
  auto frames = walk_python_thread(l, p.reader(), native_id);
  EXPECT_TRUE(frames.has_value());
  if (!frames) return {};
  PythonNamer namer(
      [&p](uint32_t, uint64_t a, void* out, size_t n) { return p.mem.read(a, out, n); });
  PythonProcess proc;
  proc.pid = 7;
  proc.supported = true;
  proc.layout = l;
  proc.code = c;
  proc.code_type = p.code_type;
  namer.add_process(proc);
  std::vector<Named> out;
  for (const gw_py_frame& f : *frames) {
    PyFrameName n = namer.name(7, f.code, f.instr);
    EXPECT_TRUE(n.resolved);
    EXPECT_EQ(n.file, "/srv/train.py");
    out.push_back({n.function, n.line});
  }
  return out;
}

void expect_frames(const std::vector<Named>& got, const std::vector<Named>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].function, want[i].function) << "frame " << i;
    EXPECT_EQ(got[i].line, want[i].line) << "frame " << i;
  }
}

TEST(PythonLayout314, DebugOffsetsGiveTheLayout) {
  for (const bool ft : {false, true}) {
    SCOPED_TRACE(ft ? "3.14t" : "3.14");
    const Objects o{ft};
    bool free_threaded = !ft;
    auto got = layout_from_debug_offsets(block_314(o), &free_threaded);
    ASSERT_TRUE(got.ok()) << got.error().line();
    EXPECT_EQ(free_threaded, ft);
    const gw_py_layout& l = got->first;
    const PyCodeLayout& c = got->second;
    EXPECT_EQ(l.interp_head, 808);
    EXPECT_EQ(l.threads_head, 7344);
    EXPECT_EQ(l.tstate_frame, 72);
    EXPECT_EQ(l.tstate_id, 160);
    EXPECT_EQ(l.cframe_frame, GW_PY_NONE);
    EXPECT_EQ(l.frame_code, 0);
    EXPECT_EQ(l.frame_prev, 8);
    EXPECT_EQ(l.frame_instr, 56);
    EXPECT_EQ(l.frame_owner, ft ? 78 : 74);
    EXPECT_EQ(l.code_adaptive, ft ? 232 : 208);
    EXPECT_EQ(l.code_tag, 3);
    EXPECT_EQ(l.frame_tlbc, ft ? 72 : GW_PY_NONE);
    EXPECT_EQ(l.code_tlbc, ft ? 224 : GW_PY_NONE);
    EXPECT_EQ(l.frame_read, ft ? 86 : 82);
    EXPECT_EQ(c.ob_type, ft ? 24u : 8u);
    EXPECT_EQ(c.ob_size, ft ? 32u : 16u);
    EXPECT_EQ(c.name, ft ? 144u : 128u);  // co_qualname
    EXPECT_EQ(c.unicode_ascii, ft ? 56u : 40u);
    EXPECT_EQ(c.unicode_compact, ft ? 72u : 56u);
    EXPECT_EQ(c.str_kind_shift, ft ? 8u : 2u);
    EXPECT_EQ(c.bytes_data, ft ? 48u : 32u);
  }
}

// 3.14: the innermost frame's f_executable is tagged (a deferred _PyStackRef), a C-stack shim
// (owner 4) and the interpreter's own entry frame (owner 3) are skipped, a generator's frame is
// named; each frame's line is the executing one.
TEST(PythonLayout314, FramesBuiltToTheHeadersAreNamed) {
  Process p(false);
  const uint64_t step = p.code("/srv/train.py", "Trainer.step", true, 0, nullptr);
  const uint64_t loop = p.code("/srv/train.py", "loop", true, 0, nullptr);
  const uint32_t ad = p.o.co_adaptive;
  p.thread(4242, {{step | 1, kThread, step + ad + 2 * 33, 0},
                  {0, kCStack, 0, 0},
                  {loop, kGenerator, loop + ad + 2 * 49, 0},
                  {0, kInterpreter, 0, 0}});
  auto got = layout_from_debug_offsets(block_314(p.o));
  ASSERT_TRUE(got.ok()) << got.error().line();
  got->first.runtime = p.runtime;
  expect_frames(walk_and_name(p, got->first, got->second, 4242),
                {{"Trainer.step", 6}, {"loop", 8}});
  // Without the tag mask the innermost frame would name no code object.
  gw_py_layout untagged = got->first;
  untagged.code_tag = 0;
  auto frames = walk_python_thread(untagged, p.reader(), 4242);
  ASSERT_TRUE(frames);
  ASSERT_FALSE(frames->empty());
  EXPECT_EQ((*frames)[0].code, step | 1);
}

// 3.14t: two threads run the same function at once, each in its own bytecode copy (tlbc_index
// 1 and 2 in co_tlbc), at different lines; the main thread runs co_code_adaptive itself
// (index 0). Each thread's walk names its own line. Non-ASCII names (compact, not ASCII) are
// read past PyCompactUnicodeObject, whose header is larger in the free-threaded build.
TEST(PythonLayout314, FreeThreadedThreadsEachNameTheirOwnLine) {
  Process p(true);
  std::vector<uint64_t> tlbc;
  const uint64_t work = p.code("/srv/train.py", "sch\xf6n", false, 2, &tlbc);
  const uint64_t run = p.code("/srv/train.py", "run", true, 0, nullptr);
  ASSERT_EQ(tlbc.size(), 3u);
  const uint32_t ad = p.o.co_adaptive;
  p.thread(100, {{work | 1, kThread, tlbc[0] + 2 * 49, 0}, {run, kThread, run + ad + 2 * 40, 0}});
  p.thread(101, {{work | 1, kThread, tlbc[1] + 2 * 33, 1},
                 {0, kInterpreter, 0, 0},
                 {run | 1, kThread, run + ad + 2 * 49, 0}});
  p.thread(102, {{work, kThread, tlbc[2] + 2 * 40, 2}, {0, kCStack, 0, 0}});
  auto got = layout_from_debug_offsets(block_314(p.o));
  ASSERT_TRUE(got.ok()) << got.error().line();
  got->first.runtime = p.runtime;
  const std::string name = "sch\xc3\xb6n";  // as UTF-8
  expect_frames(walk_and_name(p, got->first, got->second, 100), {{name, 8}, {"run", 7}});
  expect_frames(walk_and_name(p, got->first, got->second, 101), {{name, 6}, {"run", 8}});
  expect_frames(walk_and_name(p, got->first, got->second, 102), {{name, 7}});

  // Taken against co_code_adaptive instead of the thread's copy, the index would be no index
  // of the object: the copy is what names the line.
  gw_py_layout no_tlbc = got->first;
  no_tlbc.frame_tlbc = GW_PY_NONE;
  auto frames = walk_python_thread(no_tlbc, p.reader(), 101);
  ASSERT_TRUE(frames);
  ASSERT_FALSE(frames->empty());
  EXPECT_NE((*frames)[0].instr, 33);
  // A tlbc_index beyond the array's size is no copy: the walk fails rather than guess.
  Process bad(true);
  std::vector<uint64_t> one;
  const uint64_t c = bad.code("/srv/train.py", "f", true, 1, &one);
  bad.thread(5, {{c, kThread, one[1] + 2 * 33, 2}});
  auto l = layout_from_debug_offsets(block_314(bad.o));
  ASSERT_TRUE(l.ok());
  l->first.runtime = bad.runtime;
  EXPECT_FALSE(walk_python_thread(l->first, bad.reader(), 5).has_value());
}

// A code object compiled and dropped again and again (exec'd or generated code) is often made
// at the address of the last one: the namer's cache by address must not give the new object
// the old one's name. A freed object that is no code object any more keeps the name it had
// (the frame ran it).
TEST(PythonNamer, ACodeObjectMadeAtAReusedAddressIsReadAnew) {
  Process p(false);
  const uint64_t c = p.code("/srv/train.py", "gen0.step", true, 0, nullptr);
  auto got = layout_from_debug_offsets(block_314(p.o));
  ASSERT_TRUE(got.ok()) << got.error().line();
  PythonNamer namer(
      [&p](uint32_t, uint64_t a, void* out, size_t n) { return p.mem.read(a, out, n); });
  PythonProcess proc;
  proc.pid = 7;
  proc.supported = true;
  proc.layout = got->first;
  proc.code = got->second;
  proc.code_type = p.code_type;
  namer.add_process(proc);
  EXPECT_EQ(namer.name(7, c, 33).function, "gen0.step");
  // Freed: its type word overwritten. The cached name stays.
  p.mem.u64(c + p.o.ob_type, 0);
  EXPECT_EQ(namer.name(7, c, 33).function, "gen0.step");
  // Another code object at the same address: other names, another first line.
  p.mem.u64(c + p.o.ob_type, p.code_type);
  p.mem.u64(c + p.o.co_qual, p.str("gen1.step", true));
  p.mem.u64(c + p.o.co_file, p.str("<gen1>", true));
  const PyFrameName n = namer.name(7, c, 33);
  EXPECT_EQ(n.function, "gen1.step");
  EXPECT_EQ(n.file, "<gen1>");
  EXPECT_EQ(n.line, 6);
}

TEST(PythonLayout314, BlocksThatAreNoLayoutAreRefused) {
  const Objects gil{false}, ft{true};
  {
    std::string b = block_314(gil);
    b[0] = 'y';
    EXPECT_FALSE(layout_from_debug_offsets(b).ok()) << "cookie";
  }
  {
    std::string b = block_314(gil);
    EXPECT_FALSE(layout_from_debug_offsets(b.substr(0, 73 * 8)).ok()) << "short of 3.14's size";
  }
  {
    std::string b = block_314(gil);
    const uint64_t v315 = 0x030f00a1;
    std::memcpy(b.data() + 8, &v315, 8);
    auto r = layout_from_debug_offsets(b);
    ASSERT_FALSE(r.ok()) << "3.15: a format not known here";
    EXPECT_NE(r.error().what.find("3.15"), std::string::npos) << r.error().what;
  }
  {
    // A GIL build's header with free_threaded = 1: the PyObject header says otherwise.
    std::string b = block_314(gil);
    const uint64_t one = 1;
    std::memcpy(b.data() + 16, &one, 8);
    EXPECT_FALSE(layout_from_debug_offsets(b).ok());
  }
  {
    // 3.14t whose block names no tlbc_index.
    std::string b = block_314(ft);
    const uint64_t zero = 0;
    std::memcpy(b.data() + 38 * 8, &zero, 8);
    EXPECT_FALSE(layout_from_debug_offsets(b).ok());
  }
  {
    // A frame field past the frame's size (a format read at the wrong words).
    std::string b = block_314(gil);
    const uint64_t far = 4000;
    std::memcpy(b.data() + 34 * 8, &far, 8);
    EXPECT_FALSE(layout_from_debug_offsets(b).ok());
  }
}

// 3.13 runs from its debug offsets alone: the block as 3.13.0 publishes it (values read from the
// live pyenv 3.13.0, Include/internal/pycore_runtime.h's format) gives exactly the offsets
// measured with offsetof on that build (docs: /work/shared/design/python-frames.md's table).
TEST(PythonLayout313, DebugOffsetsAgreeWithTheMeasuredTable) {
  std::vector<uint64_t> w(73, 0);
  std::memcpy(w.data(), "xdebugpy", 8);
  w[1] = 0x030d00f0;
  w[5] = 632, w[9] = 7344, w[21] = 8, w[23] = 72, w[25] = 160;
  w[28] = 80, w[29] = 8, w[30] = 0, w[31] = 56, w[32] = 72, w[33] = 70;
  w[34] = 208, w[35] = 112, w[36] = 120, w[37] = 128, w[38] = 136, w[39] = 68, w[43] = 200;
  w[44] = 16, w[45] = 8, w[52] = 16;
  w[64] = 33, w[65] = 16, w[66] = 32;
  w[67] = 64, w[68] = 32, w[69] = 16, w[70] = 40;
  const std::string raw(reinterpret_cast<const char*>(w.data()), w.size() * 8);
  auto got = layout_from_debug_offsets(raw);
  ASSERT_TRUE(got.ok()) << got.error().line();
  const gw_py_layout& l = got->first;
  // The measured table (3.13.0, offsetof).
  EXPECT_EQ(l.interp_head, 632);
  EXPECT_EQ(l.threads_head, 7344);
  EXPECT_EQ(l.tstate_next, 8);
  EXPECT_EQ(l.tstate_frame, 72);
  EXPECT_EQ(l.tstate_id, 160);
  EXPECT_EQ(l.cframe_frame, GW_PY_NONE);
  EXPECT_EQ(l.frame_code, 0);
  EXPECT_EQ(l.frame_prev, 8);
  EXPECT_EQ(l.frame_instr, 56);
  EXPECT_EQ(l.frame_owner, 70);
  EXPECT_EQ(l.code_adaptive, 200);
  EXPECT_EQ(l.code_tag, 0) << "3.13's f_executable is a plain PyObject *";
  EXPECT_EQ(l.frame_tlbc, GW_PY_NONE);
  EXPECT_EQ(l.code_tlbc, GW_PY_NONE);
  EXPECT_EQ(l.frame_read, 78);
  const PyCodeLayout& c = got->second;
  EXPECT_EQ(c.filename, 112u);
  EXPECT_EQ(c.name, 128u);  // co_qualname
  EXPECT_EQ(c.firstlineno, 68u);
  EXPECT_EQ(c.linetable, 136u);
  EXPECT_EQ(c.unicode_ascii, 40u);
  EXPECT_EQ(c.unicode_compact, 56u);
  EXPECT_EQ(c.ob_type, 8u);
  EXPECT_EQ(c.ob_size, 16u);
  EXPECT_EQ(c.bytes_size, 16u);
  EXPECT_EQ(c.bytes_data, 32u);
  EXPECT_EQ(c.str_length, 16u);
  EXPECT_EQ(c.str_state, 32u);
  EXPECT_EQ(c.str_kind_shift, 2u);
  // The code layout agrees with 3.12's table where 3.12 and 3.13 share it.
  const PyCodeLayout t312 = *builtin_code_layout(0x030c);
  EXPECT_EQ(c.filename, t312.filename);
  EXPECT_EQ(c.name, t312.name);
  EXPECT_EQ(c.linetable, t312.linetable);
  EXPECT_EQ(c.firstlineno, t312.firstlineno);

  w[2] = 1;  // 3.13t
  const std::string ft(reinterpret_cast<const char*>(w.data()), w.size() * 8);
  EXPECT_FALSE(layout_from_debug_offsets(ft).ok());
}

TEST(PythonLayout, TestedHowPerVersion) {
  EXPECT_EQ(python_tested(0x030a, false), "tested on a live interpreter");
  EXPECT_EQ(python_tested(0x030d, false), "tested on a live interpreter");
  EXPECT_EQ(python_tested(0x030e, false), "tested from the published layout");
  EXPECT_EQ(python_tested(0x030e, true), "tested from the published layout");
  EXPECT_EQ(python_tested(0x030f, false), "");
  PythonProcess p;
  p.interpreter = "/usr/lib/libpython3.14t.so.1.0";
  p.version = "3.14.0t";
  p.minor_hex = 0x030e;
  p.free_threaded = true;
  p.supported = true;
  p.layout_from = "_Py_DebugOffsets";
  EXPECT_EQ(python_check_line(p),
            "Python 3.14.0t (libpython3.14t.so.1.0): supported, Python lines recorded (layout: "
            "_Py_DebugOffsets; tested from the published layout)");
  // What python_processes.detail says of it: what was found, not an empty field.
  EXPECT_EQ(python_detail(p), "layout: _Py_DebugOffsets; tested from the published layout");
  p.supported = false;
  p.why_not = "x";
  EXPECT_EQ(python_check_line(p),
            "Python 3.14.0t (libpython3.14t.so.1.0): not supported, no Python lines: x");
  EXPECT_EQ(python_detail(p), "x");
}

}  // namespace
}  // namespace gpuwhy::discover
