// SPDX-License-Identifier: Apache-2.0
// The agent's parser of the CUPTI client's datagrams (src/gpu_activity/records.cpp) and the
// conversion of their records into gpu_activity rows (receiver.cpp, Converter): any bytes, no
// read outside them; every row has a kind and a non-negative duration, and every kernel row's
// name id is one of the names already converted.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <span>

#include "gpu_activity/receiver.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuwhy;
  gpu_activity::Converter conv(ClockConverter(1'000'000), size > 0 ? data[0] * 1000ull : 0);
  // The first byte sets the time box; the rest is split into datagrams at each 0xA5 0x5A pair,
  // so one input holds several.
  size_t start = size > 0 ? 1 : 0;
  for (size_t i = start; i + 1 < size; ++i)
    if (data[i] == 0xA5 && data[i + 1] == 0x5A) {
      conv.add_datagram(std::span<const uint8_t>(data + start, i - start));
      start = i + 2;
    }
  if (start <= size) conv.add_datagram(std::span<const uint8_t>(data + start, size - start));
  std::set<int64_t> ids;
  for (const auto& n : conv.take_names()) ids.insert(n.id);
  for (const auto& r : conv.take_rows()) {
    if (r.kind.empty() || r.dur < 0) std::abort();
    if (r.kind == "kernel" && r.name_id >= 0 && !ids.count(r.name_id)) std::abort();
  }
  (void)conv.losses();
  (void)conv.family_state();
  return 0;
}
