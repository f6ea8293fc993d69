// SPDX-License-Identifier: Apache-2.0
// A deliberately small command-line parser for the test workloads: "--name value" and bare
// "--flag" options only. Any misuse (unknown option, missing or malformed value) prints the
// usage and exits with status 2, so a test that passes a wrong option fails loudly.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace gw {

class Args {
 public:
  // `valued` options take a value; `flags` do not. `usage` is printed on misuse.
  Args(int argc, char** argv, std::set<std::string> valued, std::set<std::string> flags,
       std::string usage);

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string str(const std::string& name, const std::string& fallback) const;
  uint64_t u64(const std::string& name, uint64_t fallback) const;
  int64_t i64(const std::string& name, int64_t fallback) const;
  double f64(const std::string& name, double fallback) const;

  // Prints "program: message" and the usage, then exits with status 2.
  [[noreturn]] void fail(std::string_view message) const;

  const std::string& program() const { return program_; }

 private:
  std::string program_;
  std::string usage_;
  std::map<std::string, std::string> values_;
};

// Milliseconds from an environment variable, or `fallback` when unset (exits 2 when malformed).
uint64_t env_ms(const char* name, uint64_t fallback);

}  // namespace gw
