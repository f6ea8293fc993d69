// SPDX-License-Identifier: Apache-2.0
// Renderers of an AuditReport (analysis/audit.hpp): text for people, JSON ("gpuwhy.audit/1",
// docs/audit.md) for programs. They only read the report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/audit.hpp"

namespace gpuwhy::render {

std::string audit_text(const analysis::AuditReport& r);
nlohmann::ordered_json audit_json(const analysis::AuditReport& r);

}  // namespace gpuwhy::render
