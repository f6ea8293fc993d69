// SPDX-License-Identifier: Apache-2.0
// A trace that holds no event at all (the agent was killed while it started, or stopped before
// any GPU call or scheduler event reached the file) has a span of zero, and every window of it
// is empty. The readers say that, about the file, instead of blaming the window flags.
#pragma once

#include <optional>
#include <string>

#include "core/result.hpp"
#include "store/store.hpp"

namespace gpuwhy::cli {

// Exit code for a trace with nothing to analyse or export: the file is readable, the flags are
// fine, the data is missing (docs/cli.md, exit codes).
inline constexpr int kExitNoData = 1;

// The one line to print for a file with no event, or nullopt when it holds some.
std::optional<Error> no_events_error(const store::TraceFile& file);

}  // namespace gpuwhy::cli
