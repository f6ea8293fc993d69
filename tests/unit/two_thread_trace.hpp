// SPDX-License-Identifier: Apache-2.0
// The damage tests' trace: two threads' full chunks of calls, finished. Thread 11 of pid 10 from
// kStart; thread 12 from kStart + 10 ms, of `second_api`.
#pragma once

#include <string>

#include "store_fixture.hpp"

namespace gpuwhy::testing {

inline void write_two_thread_trace(const std::string& path,
                                   const char* second_api = "cudaLaunchKernel") {
  auto w = make_writer(path);
  ASSERT_TRUE(w);
  ASSERT_TRUE(w->write_batch(full_chunk(kStart, 10, 11)).ok());
  ASSERT_TRUE(w->write_batch(full_chunk(kStart + 10 * kMs, 10, 12, second_api)).ok());
  ASSERT_TRUE(w->finish(kStart + 100 * kMs).ok());
}

}  // namespace gpuwhy::testing
