// SPDX-License-Identifier: Apache-2.0
#include "export/html_escape.hpp"

#include "core/untrusted.hpp"

namespace gpuwhy::render {

std::string html_markup(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string html_text(std::string_view raw) { return html_markup(untrusted::shown(raw)); }

}  // namespace gpuwhy::render
