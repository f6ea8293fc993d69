// SPDX-License-Identifier: Apache-2.0
#include "store/redact.hpp"

#include <cctype>
#include <vector>

#include "store/secret_token.hpp"

namespace gpuwhy::store {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The name without '-', '_' and '.', lower case: "API_Key" and "api-key" both read "apikey".
std::string squeezed(std::string_view name) {
  std::string out;
  for (char c : name)
    if (c != '-' && c != '_' && c != '.')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The last word of a flag or variable name ("db-pass" -> "pass", "HTTP_AUTH" -> "auth").
std::string last_word(std::string_view name) {
  const size_t cut = name.find_last_of("-_.");
  return lower(cut == std::string_view::npos ? name : name.substr(cut + 1));
}

// Names whose value is a secret whatever follows: the words anywhere in the name, or, for the
// short words that are also parts of other words (pass in "bypass", "passes"; auth in
// "author"), as the name's last word.
bool names_secret_value(std::string_view name) {
  const std::string n = lower(name);
  for (std::string_view word :
       {"token", "password", "passwd", "secret", "credential", "passphrase"})
    if (n.find(word) != std::string::npos) return true;
  const std::string last = last_word(name);
  for (std::string_view word : {"pass", "pwd", "pw", "auth", "authorization", "apikey", "cookie"})
    if (last == word) return true;
  return false;
}

// Key names that hold a credential itself, not a file or an id: --api-key, --access-key,
// --private-key (but not --key-file, --sort-key, --keyring).
bool names_credential_key(std::string_view name) {
  const std::string n = squeezed(name);
  if (n.find("file") != std::string::npos || n.find("path") != std::string::npos ||
      n.find("dir") != std::string::npos)
    return false;
  for (std::string_view k : {"apikey", "accesskey", "privatekey", "authkey", "licensekey",
                             "clientkey", "masterkey", "signingkey", "encryptionkey", "sessionkey"})
    if (n.find(k) != std::string::npos) return true;
  return false;
}

// NAME=VALUE: any name with "key" in it too (--aws-key=..., WANDB_API_KEY=...): a key given
// inline is a value, never a file name in practice.
bool names_secret(std::string_view name, bool with_key) {
  if (names_secret_value(name) || names_credential_key(name)) return true;
  return with_key && lower(name).find("key") != std::string::npos;
}

// An env-style name: letters, digits and '_' (or '-', '.'), starting with a letter or '_'.
bool env_name(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

// scheme://user:password@host -> scheme://user:***@host; and a query's secret parameters
// (?api_key=..., &token=...) -> ***.
std::string redact_url(std::string arg) {
  const size_t scheme = arg.find("://");
  if (scheme == std::string::npos) return arg;
  const size_t at = arg.find('@', scheme + 3);
  const size_t slash = arg.find('/', scheme + 3);
  const size_t colon = arg.find(':', scheme + 3);
  if (at != std::string::npos && (slash == std::string::npos || slash > at) &&
      colon != std::string::npos && colon < at)
    arg = arg.substr(0, colon + 1) + std::string(kRedacted) + arg.substr(at);
  for (size_t q = arg.find('?'); q != std::string::npos; q = arg.find('&', q + 1)) {
    const size_t eq = arg.find('=', q + 1);
    if (eq == std::string::npos) break;
    const size_t end = std::min(arg.find('&', eq), arg.find('#', eq));
    if (names_secret(std::string_view(arg).substr(q + 1, eq - q - 1), true))
      arg.replace(eq + 1, (end == std::string::npos ? arg.size() : end) - eq - 1, kRedacted);
  }
  return arg;
}

// Programs whose short flag takes a password. `-p` alone is not redacted for every program: it
// is a port (ssh, docker, redis-cli), "preserve" (cp), "parents" (mkdir) far more often than a
// password, and hiding a port or a path loses what the reader needs. Only where the program is
// known to read a password there: sshpass -p PW (or -pPW), before the command it runs
// (`sshpass -p PW ssh -p 22 host`: the second -p is ssh's port); the MySQL clients' -pPW
// (attached only: `mysql -p db` prompts, and db is the database's name); redis-cli -a PW.
struct ShortSecretFlag {
  std::string_view program;
  std::string_view flag;
  bool separate;          // the value may be the next argument
  bool until_positional;  // the program's own options end at its first positional argument
};
constexpr ShortSecretFlag kShortSecretFlags[] = {
    {"sshpass", "-p", true, true},      {"mysql", "-p", false, false},
    {"mariadb", "-p", false, false},    {"mysqldump", "-p", false, false},
    {"mysqladmin", "-p", false, false}, {"mysqlimport", "-p", false, false},
    {"mysqlcheck", "-p", false, false}, {"mysqlshow", "-p", false, false},
    {"redis-cli", "-a", true, true},
};

// A header name given as its own word ("Authorization:", "X-Api-Key:", "-HCookie:",
// "--header=Authorization:"): the words after it are its value.
bool secret_header(std::string_view arg) {
  if (!arg.ends_with(':') || arg.size() < 2) return false;
  arg.remove_suffix(1);
  if (const size_t eq = arg.rfind('='); eq != std::string_view::npos) arg = arg.substr(eq + 1);
  if (arg.starts_with("-H")) arg.remove_prefix(2);
  return !arg.empty() && names_secret(arg, true);
}

bool auth_scheme(std::string_view arg) {
  const std::string a = lower(arg);
  return a == "bearer" || a == "basic" || a == "token" || a == "digest";
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
  const std::string program(
      args.empty() ? std::string_view() : std::string_view(args[0]).substr(args[0].rfind('/') + 1));
  bool hide_next = false;
  bool positional_seen = false;  // an argument that is neither an option nor a hidden value
  for (size_t a = 0; a < args.size(); ++a) {
    std::string& arg = args[a];
    if (hide_next && !arg.empty()) {
      hide_next = false;
      // "Authorization: Bearer X": the scheme is kept, the credential after it hidden.
      if (auth_scheme(arg)) {
        hide_next = true;
        continue;
      }
      if (!arg.starts_with('-')) {
        arg = kRedacted;
        continue;
      }
    }
    // argv[0] is the program: never a secret by these rules.
    if (a == 0) continue;
    const bool was_positional = positional_seen;
    if (!arg.starts_with('-')) positional_seen = true;
    if (lower(arg) == "bearer" || secret_header(arg)) {
      hide_next = true;
      continue;
    }
    bool short_flag = false;
    for (const ShortSecretFlag& s : kShortSecretFlags) {
      if (program != s.program || !arg.starts_with(s.flag) ||
          (s.until_positional && was_positional))
        continue;
      if (arg.size() == s.flag.size()) {
        hide_next = s.separate;
      } else {
        arg = std::string(s.flag) + std::string(kRedacted);
      }
      short_flag = true;
    }
    if (short_flag) continue;
    const size_t dashes = arg.starts_with("--") ? 2 : arg.starts_with('-') ? 1 : 0;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos && eq > dashes) {
      const std::string_view name = std::string_view(arg).substr(dashes, eq - dashes);
      const std::string_view value = std::string_view(arg).substr(eq + 1);
      if (((dashes || env_name(name)) && names_secret(name, /*with_key=*/true)) ||
          looks_like_secret_token(value)) {
        arg = arg.substr(0, eq + 1) + std::string(kRedacted);
        continue;
      }
    } else if (dashes) {
      const std::string_view name = std::string_view(arg).substr(dashes);
      // --api-key VALUE hides VALUE unless it is a path (--private-key ~/.ssh/id: not the key).
      if (names_secret_value(name)) {
        hide_next = true;
        continue;
      }
      if (names_credential_key(name) && a + 1 < args.size() &&
          args[a + 1].find('/') == std::string::npos) {
        hide_next = true;
        continue;
      }
    }
    if (looks_like_secret_token(arg)) {
      arg = kRedacted;
      continue;
    }
    arg = redact_url(std::move(arg));
  }
  std::string out;
  for (size_t a = 0; a < args.size(); ++a) out += (a ? " " : "") + args[a];
  return out;
}

}  // namespace gpuwhy::store
