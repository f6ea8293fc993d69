// SPDX-License-Identifier: Apache-2.0
// Bash and zsh completion scripts for gpuwhy, made from the CLI description (cli_spec.hpp), so
// that they complete exactly the commands, options and option values (CLI11 set checks) the
// binary accepts. Options that take a free value complete file names, as a shell does without a
// completion; after `trace --` the command to launch completes as a command.
#pragma once

#include <string>

#include "cli/cli_spec.hpp"

namespace gpuwhy::cli {

std::string bash_completion(const CommandSpec& root);
std::string zsh_completion(const CommandSpec& root);

}  // namespace gpuwhy::cli
