// SPDX-License-Identifier: Apache-2.0
#include "cli/window_flags.hpp"

namespace gpuwhy::cli {

void add_window_flags(CLI::App* cmd, WindowFlags& w) {
  auto* since = cmd->add_option("--since", w.since,
                                "Only the last DURATION of the trace (counted back from the "
                                "trace's end, not from now): 30s, 5m, 2h");
  auto* from = cmd->add_option("--from", w.from,
                               "Window start: seconds from the trace start (2.5), a duration "
                               "(300ms), or wall-clock ns");
  auto* to = cmd->add_option("--to", w.to, "Window end, same forms as --from");
  since->excludes(from)->excludes(to);
  cmd->add_option("--pid", w.pids, "Only these processes (repeatable)");
}

}  // namespace gpuwhy::cli
