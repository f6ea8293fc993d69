// SPDX-License-Identifier: Apache-2.0
#include "mcp/capped_rows.hpp"

#include "store/json_cell.hpp"

namespace gpuwhy::mcp {
namespace {

using ojson = nlohmann::ordered_json;
using store::ValueType;

// Thrown from the row callback to end the statement early: for_each_row finalizes it on the
// way out (its statement is held by an RAII guard; no SQLite frame is between).
struct EnoughRows {};

}  // namespace

Result<CappedRows> capped_rows(const store::TraceFile& file, const std::string& sql,
                               const RowLimits& limits) {
  CappedRows r;
  std::vector<std::string> keys;
  size_t bytes = 0;
  Status st;
  try {
    st = store::for_each_row(
        file, sql,
        [&](const std::vector<std::string>& cols) {
          keys = store::unique_keys(cols);
          for (const std::string& c : cols) r.columns.push_back(c);
        },
        [&](const std::vector<std::string>& values, const std::vector<ValueType>& types) {
          if (static_cast<int64_t>(r.rows.size()) >= limits.max_rows) {
            r.truncated_by = "max_rows";
            throw EnoughRows{};
          }
          ojson row = limits.as_objects ? ojson::object() : ojson::array();
          for (size_t i = 0; i < values.size(); ++i) {
            if (limits.as_objects)
              row[keys[i]] = store::json_cell(values[i], types[i]);
            else
              row.push_back(store::json_cell(values[i], types[i]));
          }
          bytes += row.dump(-1, ' ', false, ojson::error_handler_t::replace).size() + 1;
          if (bytes > limits.max_bytes) {
            r.truncated_by = "max_bytes";
            throw EnoughRows{};
          }
          r.rows.push_back(std::move(row));
        });
  } catch (const EnoughRows&) {
    st = {};
  }
  if (!st) return st.error();
  return r;
}

ojson rows_json(CappedRows r, const RowLimits& limits) {
  ojson out = ojson::object();
  const size_t n = r.rows.size();
  out["columns"] = std::move(r.columns);
  out["rows"] = std::move(r.rows);
  out["row_count"] = n;
  out["truncated"] = !r.truncated_by.empty();
  if (r.truncated_by == "max_rows")
    out["note"] = "only the first " + std::to_string(limits.max_rows) +
                  " rows: the statement has more; raise max_rows (at most the server's cap), "
                  "aggregate, or add WHERE/LIMIT/OFFSET";
  else if (r.truncated_by == "max_bytes")
    out["note"] = "only the first " + std::to_string(n) + " rows: the result passed " +
                  std::to_string(limits.max_bytes >> 10) +
                  " KiB of JSON; select fewer columns, aggregate, or add WHERE/LIMIT/OFFSET";
  return out;
}

}  // namespace gpuwhy::mcp
