// SPDX-License-Identifier: Apache-2.0
// One error model inside the agent: functions return Result<T>; the CLI edge turns an Error into
// one line ("what is wrong; what to do") and a non-zero exit code.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace gpuwhy {

struct Error {
  std::string what;  // what is wrong
  std::string hint;  // what to do about it (may be empty)
  int exit_code = 1;

  std::string line() const { return hint.empty() ? what : what + "; " + hint; }
};

inline Error errno_error(const std::string& what, int err = errno, std::string hint = {}) {
  return Error{what + ": " + std::strerror(err), std::move(hint)};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error e) : v_(std::move(e)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : err_(std::move(e)), ok_(false) {}
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace gpuwhy
