// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: ring-buffer records -> events (src/reader/decode.cpp). Any bytes must decode
// to an event or a status, never crash or read past the record.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "reader/decode.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuwhy;
  static const ClockConverter clock(1'600'000'000'000'000'000);
  Event ev;
  (void)reader::decode_record(data, size, clock, ev);
  std::vector<Event> out;
  (void)reader::decode_launch_batch(data, size, clock, out);
  if (size >= 2) (void)reader::kind_name(static_cast<uint16_t>(data[0] | data[1] << 8));
  return 0;
}
