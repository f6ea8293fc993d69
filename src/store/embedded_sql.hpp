// SPDX-License-Identifier: Apache-2.0
// The SQL files of sql/ (schema and views), embedded at build time so explain, query and the
// tests run exactly the same text.
#pragma once

#include <span>
#include <string_view>

namespace gpuwhy {

struct EmbeddedSql {
  std::string_view name;  // file name, e.g. "schema.sql", "v_calls.sql"
  std::string_view text;
};

std::span<const EmbeddedSql> embedded_sql();

}  // namespace gpuwhy
