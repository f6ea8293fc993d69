// SPDX-License-Identifier: Apache-2.0
// Leveled logging (spdlog) to stderr. Never log per event on a hot path.
#pragma once

#include <spdlog/spdlog.h>

namespace gpuwhy {

// verbosity: 0 = warnings and errors, 1 = info, 2+ = debug (libbpf's own output included).
void setup_logging(int verbosity);

}  // namespace gpuwhy
