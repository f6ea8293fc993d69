// SPDX-License-Identifier: Apache-2.0
// The output schemas (MCP 2025-06-18 `outputSchema`) of the tools whose result a client may want
// as data: explain (gpuwhy.explain/1), audit (gpuwhy.audit/1) and query. A client validates a
// result's structuredContent against them (the TypeScript SDK does, in callTool), so each
// describes what the renderers always write, and leaves room for members a later version adds
// (additionalProperties is not closed where the reports may grow).
#pragma once

#include <nlohmann/json.hpp>

namespace gpuwhy::mcp {

nlohmann::json explain_output_schema();
nlohmann::json audit_output_schema();
nlohmann::json query_output_schema();

}  // namespace gpuwhy::mcp
