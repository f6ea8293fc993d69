// SPDX-License-Identifier: Apache-2.0
// The window flags every reader of a trace file shares (explain, audit, export): --since or
// --from/--to, and --pid. One definition, so their help and their rules stay the same.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace gpuwhy::cli {

struct WindowFlags {
  std::string since, from, to;
  std::vector<uint32_t> pids;
  bool any() const { return !since.empty() || !from.empty() || !to.empty() || !pids.empty(); }
};

// Adds --since, --from, --to (--since excludes the other two) and --pid to `cmd`.
void add_window_flags(CLI::App* cmd, WindowFlags& w);

}  // namespace gpuwhy::cli
