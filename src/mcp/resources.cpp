// SPDX-License-Identifier: Apache-2.0
#include "mcp/resources.hpp"

#include "mcp/embedded_docs.hpp"
#include "store/store.hpp"

namespace gpuwhy::mcp {
namespace {

constexpr const char* kSchemaUri = "gpuwhy://schema";
constexpr const char* kViewsUri = "gpuwhy://views";

std::string schema_text() {
  for (const EmbeddedDoc& d : embedded_docs())
    if (d.name == "schema.md") return std::string(d.text);
  return {};
}

// Each view's name, its header comment (the question it answers, its columns), and its SQL.
std::string views_text() {
  std::string out =
      "# The shipped views of gpuwhy\n\nEvery connection gpuwhy opens on a trace has these "
      "views; the query tool reads them like tables.\n";
  for (const store::ViewInfo& v : store::shipped_views()) {
    out += "\n## " + v.name + "\n\n" + v.description + "\n\n```sql\n" + std::string(v.sql);
    if (!out.ends_with('\n')) out += '\n';
    out += "```\n";
  }
  return out;
}

}  // namespace

nlohmann::json resource_list() {
  return nlohmann::json::array(
      {{{"uri", kSchemaUri},
        {"name", "schema"},
        {"title", "The gpuwhy trace file: tables, columns, views, example questions"},
        {"description",
         "docs/schema.md of this gpuwhy build: every table and column of the trace, the "
         "per-second rollups, the views, and example SQL. Read it before writing a query."},
        {"mimeType", "text/markdown"}},
       {{"uri", kViewsUri},
        {"name", "views"},
        {"title", "The shipped SQL views and the question each answers"},
        {"description", "Each v_* view: what it answers, its columns, and its SQL."},
        {"mimeType", "text/markdown"}}});
}

std::optional<nlohmann::json> read_resource(const std::string& uri) {
  std::string text;
  if (uri == kSchemaUri)
    text = schema_text();
  else if (uri == kViewsUri)
    text = views_text();
  else
    return std::nullopt;
  return nlohmann::json::array({{{"uri", uri}, {"mimeType", "text/markdown"}, {"text", text}}});
}

}  // namespace gpuwhy::mcp
