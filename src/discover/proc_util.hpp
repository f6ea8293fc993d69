// SPDX-License-Identifier: Apache-2.0
// Small file-system helpers shared by the discover sources (internal to the module).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace gpuwhy::discover {

// Whole file as text. Works on /proc files, whose size stat() reports as 0.
Result<std::string> read_small_file(const std::string& path);

// Target of a symbolic link; nullopt when it is not one or cannot be read.
std::optional<std::string> read_link(const std::string& path);

// "/a/b/libx.so.1" -> "libx.so.1".
std::string_view base_name(std::string_view path);

// "/proc/123/root" when `path` goes through a process root, else "".
std::string_view proc_root_prefix(std::string_view path);

}  // namespace gpuwhy::discover
