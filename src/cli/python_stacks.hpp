// SPDX-License-Identifier: Apache-2.0
// The Python stacks of a trace: finds the Python processes among the traced ones (discovery
// thread), gives each new stack key the kernel reports a small id and names its frames while the
// process surely lives (reader thread, within milliseconds of the call), and hands the named
// frames to the writer thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "discover/python.hpp"
#include "store/store.hpp"

namespace gpuwhy::cli {

class PythonStacks {
 public:
  using ReadStack = std::function<bool(uint64_t key, gw_py_stack* out)>;
  explicit PythonStacks(ReadStack read) : read_(std::move(read)) {}

  // Discovery thread: a look at a traced process. Returns the Python process found (supported
  // or not, for the trace's python_processes) the first time only; the caller gives a supported
  // one's layout to the probes. A process found to run no Python is looked at again on the next
  // scan: a fork child caught between fork and exec (multiprocessing's spawn) runs Python later.
  std::optional<discover::PythonProcess> discover(uint32_t pid);

  // Discovery thread: `pid` ran exec; the next discover() looks at its new program.
  void forget(uint32_t pid) { looked_at_.erase(pid); }

  // Reader thread: the id of the Python stack `key` of `pid`; the first time a key comes, its
  // frames are read from the kernel's map and named. -1 when the map no longer has it.
  int32_t intern(uint32_t pid, uint64_t key);

  // Writer thread: the frames named since the last call.
  std::vector<store::PythonFrameRow> take_rows();

  uint64_t frames_unresolved() const { return unresolved_.load(); }
  uint64_t unsupported_processes() const { return unsupported_.load(); }

 private:
  ReadStack read_;
  discover::PythonNamer namer_;
  std::set<uint32_t> looked_at_;                 // discovery thread only
  std::unordered_map<uint64_t, int32_t> ids_;    // reader thread only
  int32_t next_id_ = 0;
  std::mutex mu_;                                // guards rows_
  std::vector<store::PythonFrameRow> rows_;
  std::atomic<uint64_t> unresolved_{0}, unsupported_{0};
};

}  // namespace gpuwhy::cli
