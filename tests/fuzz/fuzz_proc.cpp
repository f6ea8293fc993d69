// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the /proc parsers (src/discover/proc.cpp): maps and stat text as a process
// could make it look (a comm with spaces, parentheses, newlines; paths with anything).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "discover/discover.hpp"
#include "discover/proc_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuwhy::discover;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)parse_maps(text);
  (void)parse_proc_stat(text);
  (void)base_name(text);
  (void)proc_root_prefix(text);
  (void)version_from_file_name(text);
  return 0;
}
