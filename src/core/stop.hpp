// SPDX-License-Identifier: Apache-2.0
// SIGINT/SIGTERM -> a flag the long-running loops poll; a second signal exits at once.
#pragma once

#include <atomic>

namespace gpuwhy {

void install_stop_signals();
bool stop_requested();
void request_stop();

}  // namespace gpuwhy
