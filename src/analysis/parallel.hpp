// SPDX-License-Identifier: Apache-2.0
// Runs per-thread analysis work (one traced thread's joins or statistics) on every core: the
// items are independent, and a 10-million-event trace has enough of them to keep the cores busy.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace gpuwhy::analysis {

// Calls fn(i) for i in [0, n), on up to hardware_concurrency() threads (the caller's included).
// fn must only write state that belongs to item i.
template <class Fn>
void parallel_for(size_t n, Fn fn) {
  const size_t workers = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
}

}  // namespace gpuwhy::analysis
