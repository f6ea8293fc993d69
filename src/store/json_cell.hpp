// SPDX-License-Identifier: Apache-2.0
// One SQL result cell (store::for_each_row gives text and its type) as a JSON value: what
// `gpuwhy query --format json` and the MCP query tool both print.
#pragma once

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

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

}  // namespace gpuwhy::store
