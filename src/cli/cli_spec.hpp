// SPDX-License-Identifier: Apache-2.0
// A plain description of the CLI11 app (commands, their options and positionals), read from the
// app itself so that the man page and the shell completions made from it (man_page.hpp,
// completion_scripts.hpp) always match the flags the binary accepts. Hidden options and
// commands (CLI11 group "") are left out, as CLI11's own --help leaves them out.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;  // <CLI/CLI.hpp> is costly to compile: the man page and completions do not need it
}  // namespace CLI

namespace gpuwhy::cli {

struct OptionSpec {
  std::vector<std::string> names;    // "-d", "--duration" (short first); empty for a positional
  std::string positional;            // the positional's name ("sql", "command"), else ""
  std::string value_name;            // "TEXT", "UINT", ... ; "" for a flag
  std::vector<std::string> choices;  // the accepted values when the option checks for a set
  std::string description;
  std::string default_value;  // as --help shows it, "" when none
  bool repeatable = false;    // may be given more than once (or takes several values)
  bool takes_value() const { return !value_name.empty(); }
};

struct CommandSpec {
  std::string name;  // "gpuwhy", "trace", ...
  std::string description;
  std::vector<OptionSpec> options;      // named options, in the order they were added
  std::vector<OptionSpec> positionals;  // positionals, in order
  std::vector<CommandSpec> subcommands;
};

// `app` as a CommandSpec, recursively.
CommandSpec describe_cli(const CLI::App& app);

}  // namespace gpuwhy::cli
