// SPDX-License-Identifier: Apache-2.0
// Runs per-thread analysis work (one traced thread's joins or statistics) on every core: the
// items are independent, and a 10-million-event trace has enough of them to keep the cores busy.
// Also sizes the big vectors with every core taking the page faults.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
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

// parallel_for over items of uneven size (a trace's threads: a dispatch thread with millions of
// calls beside helpers with a few): the biggest first, by cost(i), so the last item to start is a
// small one and no core idles while another finishes a big one alone.
template <class Cost, class Fn>
void parallel_for_largest_first(size_t n, Cost cost, Fn fn) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return cost(a) > cost(b); });
  parallel_for(n, [&](size_t i) { fn(order[i]); });
}

// Grows `v` by n elements (default ones; unwritten ones where its allocator is a RowAllocator,
// for the caller to write), their pages faulted in by every core first: a vector of millions of
// rows costs mostly page faults, which resize() alone would take one by one here.
template <class T, class A>
void grow_parallel(std::vector<T, A>& v, size_t n) {
  const size_t old = v.size();
  // A vector with the room already (a batch's buffers reused: LoadOptions::reuse) has its pages:
  // asking the kernel again walks hundreds of MB of page tables for nothing.
  const bool fresh = v.capacity() < old + n;
  v.reserve(old + n);
#ifdef MADV_POPULATE_WRITE  // Linux 5.14; elsewhere resize() faults the pages in
  constexpr uintptr_t kPage = 4096;
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(v.data() + old) + kPage - 1) & ~(kPage - 1);
  const uintptr_t hi = reinterpret_cast<uintptr_t>(v.data() + old + n) & ~(kPage - 1);
  if (fresh && hi > lo + (kPage << 8)) {  // not worth threads for a megabyte
    const size_t pieces = std::max(1u, std::thread::hardware_concurrency());
    const uintptr_t step = ((hi - lo) / pieces + kPage - 1) & ~(kPage - 1);
    parallel_for(pieces, [&](size_t k) {
      const uintptr_t a = lo + k * step, b = std::min(hi, a + step);
      // Only a head start: pages the kernel does not populate, resize() faults in.
      if (a < b) (void)madvise(reinterpret_cast<void*>(a), b - a, MADV_POPULATE_WRITE);
    });
  }
#endif
  v.resize(old + n);
}

}  // namespace gpuwhy::analysis
