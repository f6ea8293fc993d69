// SPDX-License-Identifier: Apache-2.0
// `gpuwhy generate man|bash-completion|zsh-completion`: the man page and the shell completions,
// written to standard output from the parser this binary runs, so they cannot go stale. Hidden
// from --help (it is for packagers: the build runs it, see cmake/Packaging.cmake).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/completion_scripts.hpp"
#include "cli/man_page.hpp"

namespace gpuwhy::cli {

void add_generate_command(CLI::App& root, Runner& run) {
  auto what = std::make_shared<std::string>();
  CLI::App* cmd = root.add_subcommand("generate", "Write the man page or a shell completion");
  cmd->group("");  // hidden
  cmd->add_option("what", *what, "man, bash-completion or zsh-completion")
      ->required()
      ->check(CLI::IsMember({"man", "bash-completion", "zsh-completion"}));
  cmd->callback([&run, &root, what] {
    run = [&root, what] {
      const CommandSpec spec = describe_cli(root);
      const std::string text = *what == "man"               ? man_page(spec, GPUWHY_VERSION)
                               : *what == "bash-completion" ? bash_completion(spec)
                                                            : zsh_completion(spec);
      if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
          std::fflush(stdout) != 0)
        return fail("could not write the " + *what + " to standard output", 1);
      return 0;
    };
  });
}

}  // namespace gpuwhy::cli
