// SPDX-License-Identifier: Apache-2.0
#include "cli/cli_spec.hpp"

#include <CLI/CLI.hpp>

namespace gpuwhy::cli {
namespace {

// CLI11 writes a set check into the type name as "TEXT:{a,b,c}".
std::vector<std::string> choices_of(const std::string& type_name) {
  std::vector<std::string> out;
  const size_t open = type_name.find(":{");
  if (open == std::string::npos) return out;
  const size_t close = type_name.find('}', open);
  if (close == std::string::npos) return out;
  std::string item;
  for (size_t i = open + 2; i < close; ++i) {
    if (type_name[i] == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else {
      item += type_name[i];
    }
  }
  if (!item.empty()) out.push_back(item);
  return out;
}

OptionSpec describe_option(const CLI::Option& o) {
  OptionSpec s;
  for (const auto& n : o.get_snames()) s.names.push_back("-" + n);
  for (const auto& n : o.get_lnames()) s.names.push_back("--" + n);
  if (!o.nonpositional()) s.positional = o.get_name(true);
  if (o.get_items_expected_max() > 0) {
    const std::string type = o.get_type_name();
    s.value_name = type.substr(0, type.find(':'));
    if (s.value_name.empty()) s.value_name = "VALUE";
    s.choices = choices_of(type);
  }
  s.description = o.get_description();
  s.default_value = o.get_default_str();
  s.repeatable = o.get_items_expected_max() > 1;
  return s;
}

}  // namespace

CommandSpec describe_cli(const CLI::App& app) {
  CommandSpec c;
  c.name = app.get_name();
  c.description = app.get_description();
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_group().empty()) continue;  // hidden
    OptionSpec s = describe_option(*o);
    (s.positional.empty() ? c.options : c.positionals).push_back(std::move(s));
  }
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_group().empty()) continue;  // hidden
    c.subcommands.push_back(describe_cli(*sub));
  }
  return c;
}

}  // namespace gpuwhy::cli
