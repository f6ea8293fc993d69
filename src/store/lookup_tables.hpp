// SPDX-License-Identifier: Apache-2.0
// The lookup tables written once into every new trace file (apis, copy_kinds, syscall_names), so
// the file explains its own numbers to someone who has only sqlite3.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace gpuwhy::store {

struct SyscallName {
  uint32_t nr;
  std::string_view name;
};

std::vector<SyscallName> x86_64_syscall_names();

// Fills apis (from the API catalogue), copy_kinds and syscall_names; inside the caller's
// transaction.
Status fill_lookup_tables(sqlite3* db);

}  // namespace gpuwhy::store
