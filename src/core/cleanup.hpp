// SPDX-License-Identifier: Apache-2.0
// Files that must not outlive the command that made them, whatever ends it: the private copy of a
// trace a reader makes in $TMPDIR, an export's files before the export is complete. Their owner
// removes them on every normal path out (errors included); a signal that ends the process
// (SIGINT, SIGTERM, SIGHUP, SIGQUIT, and SIGPIPE: `gpuwhy query ... | head`) skips destructors,
// so a handler removes the registered paths with unlink/rmdir only (async-signal-safe), then
// dies by the same signal, as the process would have without it. Signals some other part of the
// program already handles or ignores (the agent's stop signals; SIGPIPE under `mcp` and `trace`)
// are left alone.
#pragma once

#include <signal.h>

#include <string>

namespace gpuwhy::cleanup {

// Registers `path` for removal on a fatal signal until the guard is destroyed or released; the
// guard never removes the path itself (its owner decides: remove a partial file, keep a finished
// one). Directories are removed after files, and only when empty (rmdir). A path that does not
// fit, or a full table, leaves the guard unarmed (armed() false): the path is then only removed
// on the normal paths.
class Guard {
 public:
  Guard() = default;
  explicit Guard(const std::string& path, bool directory = false);
  ~Guard() { release(); }
  Guard(Guard&& o) noexcept : slot_(o.slot_) { o.slot_ = -1; }
  Guard& operator=(Guard&& o) noexcept;
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

  bool armed() const { return slot_ >= 0; }
  void release();  // no longer removed on a signal

 private:
  int slot_ = -1;
};

// Holds the signals above back (this thread) while it lives: between making a file and
// registering it (mkdtemp, then Guard) a signal would leave the file; held, it arrives once both
// are done, and the handler removes it.
class HoldSignals {
 public:
  HoldSignals();
  ~HoldSignals();
  HoldSignals(const HoldSignals&) = delete;
  HoldSignals& operator=(const HoldSignals&) = delete;

 private:
  sigset_t old_;
};

// How many paths are registered now (for tests).
int registered_count();

}  // namespace gpuwhy::cleanup
