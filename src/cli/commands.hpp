// SPDX-License-Identifier: Apache-2.0
// Each subcommand lives in its own file and registers itself on the root CLI11 app through one of
// these functions. The callback it stores in `run` is executed after parsing; its return value is
// the process exit code.
#pragma once

#include <functional>
#include <string>

// CLI11 (header-only in Debian 12) costs seconds of compile time in every file that includes it:
// only the files that build the app include <CLI/CLI.hpp>.
namespace CLI {
class App;
}  // namespace CLI

namespace gpuwhy::cli {

using Runner = std::function<int()>;

// The default trace file, used by trace --out and by --db of the readers.
inline constexpr const char* kDefaultDb = "gpuwhy.db";

void add_check_command(CLI::App& root, Runner& run);
void add_trace_command(CLI::App& root, Runner& run);
void add_explain_command(CLI::App& root, Runner& run);
void add_audit_command(CLI::App& root, Runner& run);
void add_query_command(CLI::App& root, Runner& run);
void add_export_command(CLI::App& root, Runner& run);
void add_mcp_command(CLI::App& root, Runner& run);
void add_generate_command(CLI::App& root, Runner& run);

// The command line as typed (recorded in the trace's session row).
const std::string& invocation();

// Prints "gpuwhy: <line>" to stderr; returns the exit code to use.
int fail(const std::string& line, int code = 1);

int run_cli(int argc, char** argv);

}  // namespace gpuwhy::cli
