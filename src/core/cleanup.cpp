// SPDX-License-Identifier: Apache-2.0
#include "core/cleanup.hpp"

#include <limits.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <mutex>

namespace gpuwhy::cleanup {
namespace {

// A fixed table (no allocation in the handler): a reader's copy is 4 paths, an export's files one
// per table (about 30) plus its directory.
constexpr int kSlots = 128;
constexpr int kFatalSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
enum SlotState : int { kFree = 0, kFilling = 1, kFile = 2, kDirectory = 3 };

char g_paths[kSlots][PATH_MAX];
std::atomic<int> g_state[kSlots];

void remove_on_signal(int sig) {
  for (int i = 0; i < kSlots; ++i)
    if (g_state[i].load() == kFile) unlink(g_paths[i]);
  for (int i = kSlots - 1; i >= 0; --i)  // the newest first: a directory made inside another
    if (g_state[i].load() == kDirectory) rmdir(g_paths[i]);
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_handlers() {
  for (int sig : kFatalSignals) {
    struct sigaction old {};
    sigaction(sig, nullptr, &old);
    if (old.sa_handler != SIG_DFL) continue;  // someone else handles it, or it is ignored
    struct sigaction sa {};
    sa.sa_handler = remove_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

Guard::Guard(const std::string& path, bool directory) {
  if (path.empty() || path.size() >= PATH_MAX) return;
  static std::once_flag once;
  std::call_once(once, install_handlers);
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_state[i].compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_paths[i], path.c_str(), path.size() + 1);
    g_state[i].store(directory ? kDirectory : kFile);
    slot_ = i;
    return;
  }
}

Guard& Guard::operator=(Guard&& o) noexcept {
  if (this != &o) {
    release();
    slot_ = o.slot_;
    o.slot_ = -1;
  }
  return *this;
}

void Guard::release() {
  if (slot_ < 0) return;
  g_state[slot_].store(kFree);
  slot_ = -1;
}

HoldSignals::HoldSignals() {
  sigset_t fatal;
  sigemptyset(&fatal);
  for (int sig : kFatalSignals) sigaddset(&fatal, sig);
  pthread_sigmask(SIG_BLOCK, &fatal, &old_);
}

HoldSignals::~HoldSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

int registered_count() {
  int n = 0;
  for (int i = 0; i < kSlots; ++i) n += g_state[i].load() >= kFile;
  return n;
}

}  // namespace gpuwhy::cleanup
