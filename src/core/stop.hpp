// SPDX-License-Identifier: Apache-2.0
// SIGINT/SIGTERM -> a flag the long-running loops poll; a second signal asks them to hurry (drop
// what is in flight, finish the file at once); a third exits at once.
#pragma once

#include <atomic>

namespace gpuwhy {

void install_stop_signals();
bool stop_requested();
bool hurry_requested();  // a second signal came
void request_stop();

}  // namespace gpuwhy
