// SPDX-License-Identifier: Apache-2.0
// The Python stacks of a trace: finds the Python processes among the traced ones (discovery
// thread), gives each new stack key the kernel reports a small id and names its frames while the
// process surely lives (reader thread, within milliseconds of the call), and hands the named
// frames to the writer thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "discover/python.hpp"
#include "store/store.hpp"

namespace gpuwhy::cli {

class PythonStacks {
 public:
  using ReadStack = std::function<bool(uint64_t key, gw_py_stack* out)>;
  // How often a stack seen again has its code objects compared with the process's memory: a
  // code object freed and another made at its address gives the same stack key, and must not
  // keep the old one's names. Three reads per frame of a stack in use, every 250 ms.
  // Each frame's code object is compared then, whenever it was last compared for another stack:
  // one replaced just after a comparison would otherwise go unseen (in a loop of exec'd code, a
  // CPU sample compared it 7 ms before the call made from its successor's).
  static constexpr std::chrono::milliseconds kRecheck{250};
  // `memory` and `clock`: the process's memory and the time (tests give an image and a clock).
  explicit PythonStacks(ReadStack read,
                        discover::PythonNamer::Reader memory = discover::read_process_memory,
                        discover::PythonNamer::Clock clock = std::chrono::steady_clock::now)
      : read_(std::move(read)), clock_(clock), namer_(std::move(memory), std::move(clock)) {}

  // A Python process found without discover() (tests): its frames are named from now on.
  void adopt(const discover::PythonProcess& p) { namer_.add_process(p); }

  // Discovery thread: a look at a traced process. Returns the Python process found (supported
  // or not, for the trace's python_processes) the first time only; the caller gives a supported
  // one's layout to the probes. A process found to run no Python is looked at again on the next
  // scan: a fork child caught between fork and exec (multiprocessing's spawn) runs Python later.
  std::optional<discover::PythonProcess> discover(uint32_t pid);

  // Discovery thread: `pid` ran exec; the next discover() looks at its new program.
  void forget(uint32_t pid) { looked_at_.erase(pid); }

  // Reader thread: the id of the Python stack `key` of `pid`; the first time a key comes, its
  // frames are read from the kernel's map and named. -1 when the map no longer has it. A key
  // seen before whose code objects have since been replaced at their addresses gets a new id,
  // its frames named again.
  int32_t intern(uint32_t pid, uint64_t key);

  // Writer thread: the frames named since the last call, with their lines' source text.
  std::vector<store::PythonFrameRow> take_rows();

  // The gaps in the Python lines, each reason apart, as losses causes (source "python"):
  // stack_evicted (a stack gone from the kernel's map before it was read) and one per
  // discover::PyUnnamed reason, zeros included.
  std::vector<std::pair<std::string, uint64_t>> gaps() const;
  // Stacks seen again after a code object of theirs was replaced: named again, under a new id.
  uint64_t stacks_renamed() const { return renamed_.load(); }
  uint64_t unsupported_processes() const { return unsupported_.load(); }

 private:
  struct Known {
    int32_t id = -1;
    uint32_t pid = 0;
    std::vector<gw_py_frame> frames;    // as the kernel copied them
    std::vector<uint32_t> generations;  // per frame: its code object's when named (0: unnamed)
    std::chrono::steady_clock::time_point checked;  // when its frames were last compared
  };
  // Names `frames` under a new id for `key` and queues their rows.
  int32_t name_stack(uint32_t pid, uint64_t key, std::vector<gw_py_frame> frames);
  // Whether the code objects `k` was named from are still at their addresses (compared at
  // most every kRecheck: a stack seen on every call costs one clock read).
  bool still_current(Known& k);

  ReadStack read_;
  discover::PythonNamer::Clock clock_;
  discover::PythonNamer namer_;
  std::set<uint32_t> looked_at_;             // discovery thread only
  std::unordered_map<uint64_t, Known> ids_;  // reader thread only
  int32_t next_id_ = 0;
  std::mutex mu_;  // guards rows_
  std::vector<store::PythonFrameRow> rows_;
  std::atomic<uint64_t> evicted_{0}, renamed_{0}, unsupported_{0};
  std::array<std::atomic<uint64_t>, discover::kPyUnnamedReasons> unnamed_{};
};

}  // namespace gpuwhy::cli
