// SPDX-License-Identifier: Apache-2.0
// The start handshake every workload offers a tracer: either "--wait-file PATH" (poll until the
// file exists: a test creates it once its tracer is attached), or a plain delay from
// GW_START_DELAY_MS so that a tracer started alongside has time to attach.
#pragma once

#include <cstdint>

#include "common/args.hpp"

namespace gw {

// Waits for --wait-file if given (then only an explicit GW_START_DELAY_MS adds a delay), else
// sleeps GW_START_DELAY_MS, defaulting to `default_delay_ms`.
void wait_for_start(const Args& args, uint64_t default_delay_ms);

}  // namespace gw
