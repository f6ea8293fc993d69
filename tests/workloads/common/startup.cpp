// SPDX-License-Identifier: Apache-2.0
#include "common/startup.hpp"

#include <unistd.h>

#include <cstdlib>

#include "gwsim/clock.hpp"

namespace gw {

void wait_for_start(const Args& args, uint64_t default_delay_ms) {
  if (args.has("wait-file")) {
    const std::string path = args.str("wait-file", "");
    while (access(path.c_str(), F_OK) != 0) gwsim::sleep_ns(1'000'000);
    default_delay_ms = 0;
  }
  const uint64_t delay_ms = env_ms("GW_START_DELAY_MS", default_delay_ms);
  gwsim::sleep_ns(delay_ms * 1'000'000);
}

}  // namespace gw
