// SPDX-License-Identifier: Apache-2.0
#include "store/secret_token.hpp"

#include <cctype>
#include <cstddef>

namespace gpuwhy::store {
namespace {

bool token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

// `word` starts with `prefix` and has at least `min_rest` token characters after it, and nothing
// else: "sk-learn" and "ghp_" alone are not keys.
bool prefixed(std::string_view word, std::string_view prefix, size_t min_rest) {
  if (!word.starts_with(prefix) || word.size() < prefix.size() + min_rest) return false;
  for (char c : word.substr(prefix.size()))
    if (!token_char(c)) return false;
  return true;
}

// AKIA/ASIA + 16 upper-case letters or digits: an AWS access key id.
bool aws_key_id(std::string_view w) {
  if (w.size() != 20 || !(w.starts_with("AKIA") || w.starts_with("ASIA"))) return false;
  for (char c : w.substr(4))
    if (!(std::isupper(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c))))
      return false;
  return true;
}

// Three base64url parts joined by '.', the first a JSON header ("eyJ" is base64 of '{"').
bool jwt(std::string_view w) {
  if (!w.starts_with("eyJ") || w.size() < 32) return false;
  int dots = 0;
  for (char c : w) {
    if (c == '.')
      ++dots;
    else if (!token_char(c) && c != '=')
      return false;
  }
  return dots == 2;
}

bool known_prefix(std::string_view w) {
  struct Prefix {
    std::string_view text;
    size_t min_rest;
  };
  static constexpr Prefix kPrefixes[] = {
      {"ghp_", 30},        {"gho_", 30},   {"ghu_", 30},  {"ghs_", 30},  {"ghr_", 30},
      {"github_pat_", 30}, {"glpat-", 20}, {"sk-", 20},   {"xoxb-", 10}, {"xoxp-", 10},
      {"xoxa-", 10},       {"xoxr-", 10},  {"xoxs-", 10}, {"xapp-", 10}, {"hf_", 30},
      {"npm_", 30},        {"pypi-", 50},  {"AIza", 35},
  };
  for (const Prefix& p : kPrefixes)
    if (prefixed(w, p.text, p.min_rest)) return true;
  return aws_key_id(w) || jwt(w);
}

bool random_looking(std::string_view w) {
  while (!w.empty() && w.back() == '=') w.remove_suffix(1);  // base64 padding
  if (w.size() < 32) return false;
  bool upper = false, lower = false, digit = false;
  size_t separators = 0, lower_run = 0;
  for (char ch : w) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::islower(c)) {
      lower = true;
      if (++lower_run >= 7) return false;  // a word
      continue;
    }
    lower_run = 0;
    if (std::isupper(c))
      upper = true;
    else if (std::isdigit(c))
      digit = true;
    else if (ch == '-' || ch == '_' || ch == '+')
      ++separators;
    else
      return false;  // '/', '.', ':' ...: a path, a version, a URL
  }
  return upper && lower && digit && separators * 16 <= w.size();
}

}  // namespace

bool looks_like_secret_token(std::string_view word) {
  return known_prefix(word) || random_looking(word);
}

}  // namespace gpuwhy::store
