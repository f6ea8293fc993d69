// SPDX-License-Identifier: Apache-2.0
// gpuwhy(1) in roff, made from the CLI description (cli_spec.hpp): every command and every
// option the binary accepts, with CLI11's help text. The long explanations stay in docs/cli.md,
// which the page points to (installed under /usr/share/doc/gpuwhy by the package).
#pragma once

#include <string>

#include "cli/cli_spec.hpp"

namespace gpuwhy::cli {

std::string man_page(const CommandSpec& root, const std::string& version);

}  // namespace gpuwhy::cli
