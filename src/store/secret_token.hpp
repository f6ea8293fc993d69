// SPDX-License-Identifier: Apache-2.0
// Whether one word of a command line is a credential by its shape alone, with no flag name to say
// so (`curl -H "Authorization: Bearer ghp_..."`, `run.py sk-proj-...`): redact.cpp hides such
// words. Two rules:
//   - a known issuer's prefix and enough characters after it: GitHub (ghp_, gho_, ghu_, ghs_,
//     ghr_, github_pat_), GitLab (glpat-), OpenAI/Anthropic-style sk-, Slack (xoxb-, xoxp-,
//     xoxa-, xoxr-, xoxs-, xapp-), Hugging Face (hf_), npm (npm_), PyPI (pypi-), AWS access key
//     ids (AKIA, ASIA + 16), Google API keys (AIza + 35), JWTs (eyJ....);
//   - a long random-looking word: 32 or more characters of [A-Za-z0-9] (with at most one '-',
//     '_' or '+' per 16 characters, and '=' padding), upper case, lower case and a digit all
//     present, and no run of 7 or more lower-case letters (words: model and run names such as
//     "ResNet50ImageNetPretrained" are kept). A git sha or a sha256 (lower-case hex), a UUID and
//     a path (its '/' and '.') are kept: they are not secrets and are what a reader needs.
// A heuristic: a random token has a few percent chance of a 7-letter lower-case run and is then
// kept; `trace --keep-secret-args` turns all redaction off.
#pragma once

#include <string_view>

namespace gpuwhy::store {

bool looks_like_secret_token(std::string_view word);

}  // namespace gpuwhy::store
