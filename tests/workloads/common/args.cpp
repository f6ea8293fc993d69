// SPDX-License-Identifier: Apache-2.0
#include "common/args.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace gw {

Args::Args(int argc, char** argv, std::set<std::string> valued, std::set<std::string> flags,
           std::string usage)
    : usage_(std::move(usage)) {
  program_ = argc > 0 ? argv[0] : "workload";
  if (const auto slash = program_.rfind('/'); slash != std::string::npos) {
    program_ = program_.substr(slash + 1);
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::printf("usage: %s %s\n", program_.c_str(), usage_.c_str());
      std::exit(0);
    }
    if (arg.rfind("--", 0) != 0) fail("unexpected argument '" + arg + "'");
    const std::string name = arg.substr(2);
    if (flags.count(name)) {
      values_[name] = "";
    } else if (valued.count(name)) {
      if (i + 1 >= argc) fail("option --" + name + " needs a value");
      values_[name] = argv[++i];
    } else {
      fail("unknown option '" + arg + "'");
    }
  }
}

void Args::fail(std::string_view message) const {
  std::fprintf(stderr, "%s: %.*s\nusage: %s %s\n", program_.c_str(),
               static_cast<int>(message.size()), message.data(), program_.c_str(), usage_.c_str());
  std::exit(2);
}

std::string Args::str(const std::string& name, const std::string& fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

uint64_t Args::u64(const std::string& name, uint64_t fallback) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& v = it->second;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || *end != '\0' || errno != 0) {
    fail("--" + name + " needs a non-negative integer, got '" + v + "'");
  }
  return n;
}

int64_t Args::i64(const std::string& name, int64_t fallback) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& v = it->second;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0) {
    fail("--" + name + " needs an integer, got '" + v + "'");
  }
  return n;
}

double Args::f64(const std::string& name, double fallback) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& v = it->second;
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(d >= 0)) {
    fail("--" + name + " needs a non-negative number, got '" + v + "'");
  }
  return d;
}

uint64_t env_ms(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*end != '\0' || errno != 0 || *v == '-') {
    std::fprintf(stderr, "%s must be a number of milliseconds, got '%s'\n", name, v);
    std::exit(2);
  }
  return n;
}

}  // namespace gw
