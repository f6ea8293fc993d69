// SPDX-License-Identifier: Apache-2.0
#include "core/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace gpuwhy {

void setup_logging(int verbosity) {
  spdlog::drop("gpuwhy");  // set up again (tests, several commands in one process): replace it
  auto logger = spdlog::stderr_color_mt("gpuwhy");
  logger->set_pattern("gpuwhy: %^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbosity <= 0   ? spdlog::level::warn
                    : verbosity == 1 ? spdlog::level::info
                                     : spdlog::level::debug);
}

}  // namespace gpuwhy
