// SPDX-License-Identifier: Apache-2.0
#include "mcp/output_schemas.hpp"

#include <string>

namespace gpuwhy::mcp {
namespace {

using json = nlohmann::json;

json of_type(const char* type, const char* description = nullptr) {
  json s = {{"type", type}};
  if (description) s["description"] = description;
  return s;
}

// An object with these members, all required; others allowed unless `closed`.
json members(json properties, bool closed = false) {
  json required = json::array();
  for (const auto& [name, _] : properties.items()) required.push_back(name);
  json s = {{"type", "object"}, {"properties", std::move(properties)}, {"required", required}};
  if (closed) s["additionalProperties"] = false;
  return s;
}

json array_of(json items) { return {{"type", "array"}, {"items", std::move(items)}}; }

// {kind, text}: explain's and audit's caveats (a damaged -wal is one of them).
json caveats_schema() {
  return array_of(members({{"kind", of_type("string")}, {"text", of_type("string")}}));
}

json task_schema() { return members({{"pid", of_type("integer")}, {"comm", of_type("string")}}); }

json window_schema() {
  return members({{"start_rel_ns", of_type("integer")},
                  {"end_rel_ns", of_type("integer")},
                  {"duration_ns", of_type("integer")}});
}

json chain_schema() {
  return members({
      {"rank", {{"type", "integer"}, {"minimum", 1}}},
      {"kind", of_type("string", "hidden_sync, lock_wait, cpu_contention, ...")},
      {"title", of_type("string")},
      {"severity", {{"type", "string"}, {"enum", {"HIGH", "MEDIUM", "LOW"}}}},
      {"summary", of_type("string")},
      {"lost_ns", of_type("integer")},
      {"span_ns", of_type("integer")},
      {"share", of_type("number", "lost_ns / span_ns")},
      {"process", task_schema()},
      {"thread", {{"anyOf", {task_schema(), of_type("null")}}}},
      {"culprit", {{"anyOf", {task_schema(), of_type("null")}}}},
      {"evidence", array_of(members({{"text", of_type("string")}}))},
      {"fix", of_type("string")},
      {"metrics", of_type("object")},
  });
}

}  // namespace

json explain_output_schema() {
  json s = members({
      {"schema", {{"const", "gpuwhy.explain/1"}}},
      {"verdict", of_type("string", "One line: the top cause and its share, or CLEAN")},
      {"clean", of_type("boolean")},
      {"trace", members({{"host", of_type("string")},
                         {"start_ns", of_type("integer")},
                         {"end_ns", of_type("integer")},
                         {"window", window_schema()},
                         {"calls", of_type("integer")},
                         {"processes", of_type("integer")},
                         {"threads", of_type("integer")},
                         {"lost_events", of_type("integer")}})},
      {"caveats", caveats_schema()},
      {"chains", array_of(chain_schema())},
      {"budgets", array_of(of_type("object"))},
      {"phases", array_of(of_type("object"))},
      {"gpu_time", of_type("object")},
      {"stats", members({{"calls", of_type("integer")},
                         {"ops", array_of(of_type("object"))},
                         {"processes", array_of(of_type("object"))},
                         {"rates", array_of(of_type("object"))}})},
  });
  s["description"] =
      "The report of `gpuwhy explain --json` (docs/explain.md); times in ns, *_rel_ns from the "
      "trace start";
  return s;
}

json audit_output_schema() {
  json s = members({
      {"schema", {{"const", "gpuwhy.audit/1"}}},
      {"window", window_schema()},
      {"caveats", caveats_schema()},
      {"processes", array_of(of_type("object"))},
  });
  // Only with a price.
  s["properties"]["price_per_gpu_hour"] = {{"type", "number"}, {"minimum", 0}};
  s["properties"]["window_cost"] = of_type("number");
  s["description"] = "The report of `gpuwhy audit --json` (docs/audit.md)";
  return s;
}

json query_output_schema() {
  json s = members(
      {
          {"columns", array_of(of_type("string"))},
          {"rows", array_of(of_type("array", "One row: its values in column order"))},
          {"row_count", {{"type", "integer"}, {"minimum", 0}}},
          {"truncated", of_type("boolean", "The statement had more rows than came back")},
      },
      true);
  s["properties"]["note"] = of_type("string", "Why the rows were cut, when truncated");
  s["properties"]["damaged"] =
      of_type("string", "The trace's -wal is damaged: rows after the damage are missing");
  return s;
}

}  // namespace gpuwhy::mcp
