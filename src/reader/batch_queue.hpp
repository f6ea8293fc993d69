// SPDX-License-Identifier: Apache-2.0
// Hands batches of decoded events from the reader thread to the writer thread. Bounded: when the
// writer falls behind, the reader waits, the kernel ring fills, and the kernel counts what it
// drops, so every loss is counted in one place.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "model/events.hpp"

namespace gpuwhy::reader {

using Batch = std::vector<Event>;

class BatchQueue {
 public:
  explicit BatchQueue(size_t max_batches) : max_(max_batches) {}

  void push(Batch&& b) {
    std::unique_lock lock(mu_);
    not_full_.wait(lock, [&] { return q_.size() < max_ || closed_; });
    q_.push_back(std::move(b));
    not_empty_.notify_one();
  }

  // Empty optional when closed and drained, or on timeout (then `timed_out` is set).
  std::optional<Batch> pop(std::chrono::milliseconds timeout, bool* timed_out = nullptr) {
    std::unique_lock lock(mu_);
    const bool ready = not_empty_.wait_for(lock, timeout, [&] { return !q_.empty() || closed_; });
    if (timed_out) *timed_out = !ready;
    if (q_.empty()) return std::nullopt;
    Batch b = std::move(q_.front());
    q_.pop_front();
    not_full_.notify_one();
    return b;
  }

  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  bool closed_and_empty() {
    std::lock_guard lock(mu_);
    return closed_ && q_.empty();
  }

 private:
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<Batch> q_;
  size_t max_;
  bool closed_ = false;
};

}  // namespace gpuwhy::reader
