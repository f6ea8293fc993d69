// SPDX-License-Identifier: Apache-2.0
// Text for an HTML page, shared by the explain report's parts (html_report.cpp, the whole-window
// timeline). Names from the traced process are untrusted (core/untrusted.hpp): they pass through
// html_text() wherever they land, element text or attribute value.
#pragma once

#include <string>
#include <string_view>

namespace gpuwhy::render {

// The four characters HTML markup reads (& < > "), as entities; everything else as it is.
std::string html_markup(std::string_view s);

// Untrusted text for a page: control characters first as visible escapes (untrusted::shown()),
// as the text report shows them (a page's text is also copied into terminals and tickets), then
// html_markup().
std::string html_text(std::string_view raw);

}  // namespace gpuwhy::render
