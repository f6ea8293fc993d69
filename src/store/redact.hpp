// SPDX-License-Identifier: Apache-2.0
// Command lines stored in a trace (processes.cmdline) can carry credentials: `--api-token=...`,
// `--password hunter2`, `AWS_SECRET_ACCESS_KEY=...` given to `env`, `https://user:pw@host`. A
// trace is meant to be copied and shared, so such values are replaced by "***" before they are
// stored, unless `trace --keep-secret-args` asks otherwise.
#pragma once

#include <string>
#include <string_view>

namespace gpuwhy::store {

inline constexpr std::string_view kRedacted = "***";

// `cmdline` is the arguments joined by single spaces (discover::ProcessInfo::cmdline). Rules
// (names compared case-insensitively):
//   --NAME=VALUE / -NAME=VALUE   NAME holds token, password, passwd, secret, key, credential
//   --NAME VALUE                 NAME holds token, password, passwd, secret or credential (not
//                                key: --key-file and the like take a path) -> the next argument
//   NAME=VALUE (no dash)         NAME holds one of the words above (env-style, e.g. `env X=...`)
//   scheme://user:PASSWORD@host  the password of a URL
std::string redact_command_line(std::string_view cmdline);

}  // namespace gpuwhy::store
