// SPDX-License-Identifier: Apache-2.0
// Documents embedded at build time (cmake/EmbedDocs.cmake): the MCP server serves them as
// resources, so a client reading a copied trace on another machine gets the text of this build.
#pragma once

#include <span>
#include <string_view>

namespace gpuwhy::mcp {

struct EmbeddedDoc {
  std::string_view name;  // file name, e.g. "schema.md"
  std::string_view text;
};

std::span<const EmbeddedDoc> embedded_docs();

}  // namespace gpuwhy::mcp
