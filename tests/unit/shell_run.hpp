// SPDX-License-Identifier: Apache-2.0
// Runs a shell command line and captures its standard output (and standard error when the
// command says 2>&1): for the unit tests that check what the build made with real tools
// (readelf, bash, man, dpkg-deb, systemd-analyze).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace gpuwhy::testing {

struct ShellResult {
  int exit_code = -1;  // -1 when it did not exit normally
  std::string out;
};

inline ShellResult shell(const std::string& command) {
  ShellResult r;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Whether `tool` is on PATH.
inline bool have_tool(const std::string& tool) {
  return shell("command -v '" + tool + "' >/dev/null 2>&1").exit_code == 0;
}

// A single-quoted shell word.
inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace gpuwhy::testing
