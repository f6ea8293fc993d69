// SPDX-License-Identifier: Apache-2.0
#include "store/redact.hpp"

#include <cctype>
#include <vector>

namespace gpuwhy::store {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool names_secret(std::string_view name, bool with_key) {
  const std::string n = lower(name);
  for (std::string_view word : {"token", "password", "passwd", "secret", "credential"})
    if (n.find(word) != std::string::npos) return true;
  return with_key && n.find("key") != std::string::npos;
}

// An env-style name: letters, digits and '_' (or '-', '.'), starting with a letter or '_'.
bool env_name(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

// scheme://user:password@host -> scheme://user:***@host
std::string redact_url(std::string arg) {
  const size_t scheme = arg.find("://");
  if (scheme == std::string::npos) return arg;
  const size_t at = arg.find('@', scheme + 3);
  if (at == std::string::npos) return arg;
  const size_t slash = arg.find('/', scheme + 3);
  if (slash != std::string::npos && slash < at) return arg;
  const size_t colon = arg.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return arg;
  return arg.substr(0, colon + 1) + std::string(kRedacted) + arg.substr(at);
}

}  // namespace

std::string redact_command_line(std::string_view cmdline) {
  std::vector<std::string> args;
  size_t i = 0;
  while (i <= cmdline.size()) {
    const size_t sp = cmdline.find(' ', i);
    const size_t end = sp == std::string_view::npos ? cmdline.size() : sp;
    args.emplace_back(cmdline.substr(i, end - i));
    i = end + 1;
  }
  bool hide_next = false;
  for (size_t a = 0; a < args.size(); ++a) {
    std::string& arg = args[a];
    if (hide_next && !arg.empty()) {
      hide_next = false;
      if (!arg.starts_with('-')) {
        arg = kRedacted;
        continue;
      }
    }
    // argv[0] is the program: never a secret by these rules.
    if (a == 0) continue;
    const size_t dashes = arg.starts_with("--") ? 2 : arg.starts_with('-') ? 1 : 0;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos && eq > dashes) {
      const std::string_view name = std::string_view(arg).substr(dashes, eq - dashes);
      if ((dashes || env_name(name)) && names_secret(name, /*with_key=*/true)) {
        arg = arg.substr(0, eq + 1) + std::string(kRedacted);
        continue;
      }
    } else if (dashes && names_secret(std::string_view(arg).substr(dashes), false)) {
      hide_next = true;
      continue;
    }
    arg = redact_url(std::move(arg));
  }
  std::string out;
  for (size_t a = 0; a < args.size(); ++a) out += (a ? " " : "") + args[a];
  return out;
}

}  // namespace gpuwhy::store
