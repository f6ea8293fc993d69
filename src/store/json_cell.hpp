// SPDX-License-Identifier: Apache-2.0
// One SQL result cell (store::for_each_row gives text and its type) as a JSON value, and a row's
// column names as object keys: what `gpuwhy query --format json` and the MCP tools both print.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/store.hpp"

namespace gpuwhy::store {

inline nlohmann::ordered_json json_cell(const std::string& v, ValueType t) {
  switch (t) {
    case ValueType::Null:
      return nullptr;
    case ValueType::Integer:
      return std::strtoll(v.c_str(), nullptr, 10);
    case ValueType::Real: {
      // JSON has no NaN or infinity: such a value reads as null.
      const double d = std::strtod(v.c_str(), nullptr);
      return std::isfinite(d) ? nlohmann::ordered_json(d) : nlohmann::ordered_json(nullptr);
    }
    default:
      return v;  // text; a BLOB as its X'..' literal
  }
}

// A result's column names as the keys of a JSON object per row. Keys must be unique or a value is
// silently lost (SELECT 1 AS a, 2 AS a; a join's two pid columns): a second "pid" becomes "pid_2".
inline std::vector<std::string> unique_keys(const std::vector<std::string>& columns) {
  std::vector<std::string> keys;
  for (const std::string& c : columns) {
    std::string k = c;
    for (int i = 2; std::find(keys.begin(), keys.end(), k) != keys.end(); ++i)
      k = c + "_" + std::to_string(i);
    keys.push_back(std::move(k));
  }
  return keys;
}

}  // namespace gpuwhy::store
