// SPDX-License-Identifier: Apache-2.0
// What the *_calls workloads share: distinctive argument values, the one-JSON-line-per-call
// output a test matches against the trace, and loading a runtime with dlopen.
//
// Output, one line per call, flushed at once:
//   {"api":"cudaMemcpy","tid":1234,"args":{"dst":268480512,...},"ret":35,"ns":2100}
// "args" holds exactly the values passed (pointers as integers, struct arguments as nested
// objects); "out" holds what an out-pointer received, when the call has one; "ns" is the call's
// wall time, to show nothing hung.
#pragma once

#include <cstdint>
#include <string>

#include "common/json.hpp"
#include "gwsim/clock.hpp"
#include "gwsim/dim3.h"

namespace gw {

// Argument values for the call of catalogue row `id` (api_catalog.cpp): every pointer, size and
// handle differs from those of every other row, so each traced event names its call.
struct Distinct {
  explicit Distinct(int id);
  uint64_t dst, src, stream, event, graph, func, comm;
  uint64_t bytes;  // also element counts
  uint64_t width, height, dpitch, spitch;
  int kind;  // a valid cudaMemcpyKind / hipMemcpyKind, 1..4
  unsigned shared_mem, flags;
  dim3 grid, block;

  template <typename T>
  T as(uint64_t v) const {
    return reinterpret_cast<T>(static_cast<uintptr_t>(v));
  }
};

Json dim3_json(const dim3& d);

// Times one call and prints its line: Call c("cudaFree"); c.args.num(...); c.done(cudaFree(p));
class Call {
 public:
  explicit Call(std::string api) : api_(std::move(api)), start_ns_(gwsim::now_ns()) {}
  Json args;
  Json out;
  // Prints the line; returns `ret` so a caller can inspect it.
  long done(long ret);

 private:
  std::string api_;
  uint64_t start_ns_;
};

// A runtime opened with dlopen(RTLD_NOW | RTLD_LOCAL). Exits 1 with dlerror() if it cannot be
// loaded: a misconfigured test must fail, not pass vacuously.
class Library {
 public:
  explicit Library(const std::string& path);
  // The symbol typed as `Fn` (a prototype from gwsim/*.h, e.g. decltype(&cuMemcpy)), or
  // nullptr (and a note on stderr) when this library does not export it.
  template <typename Fn>
  Fn get(const char* name) const {
    return reinterpret_cast<Fn>(find(name));
  }
  void* find(const char* name) const;

 private:
  void* handle_;
};

}  // namespace gw
