// SPDX-License-Identifier: Apache-2.0
// Names that come from a traced process (comm, argv, exe, cmdline, Python file and function
// names, source text, kernel names) or from a trace file someone handed over are untrusted: a
// process can name itself "\x1b]0;owned\x07" or "x\nVERDICT  CLEAN". Every text output passes
// such a name through shown() before it reaches a terminal, a log or a CSV cell, so that it can
// neither drive the reader's terminal nor forge a line of the report. Formats with their own
// quoting keep it (JSON: the encoder's \u escapes; HTML: entities after shown(); Prometheus:
// metrics::escape_label_value).
#pragma once

#include <string>
#include <string_view>

namespace gpuwhy::untrusted {

// `s` with every character that is not plain printable text written as a visible escape:
// \n \r \t; other C0 controls and DEL as \xNN; C1 controls (U+0080..U+009F, which some
// terminals obey like ESC sequences), the bidirectional overrides and isolates and the line and
// paragraph separators as \uNNNN; bytes that are not UTF-8 as \xNN. Everything else, UTF-8
// included, is kept. A backslash is kept as typed: the output is for reading, not for parsing
// back, and Python source text and Windows-style paths stay legible.
std::string shown(std::string_view s);

// Appends shown(s) to `out`.
void append_shown(std::string& out, std::string_view s);

// Whether shown(s) == s (nothing to escape): lets hot paths skip the copy.
bool plain(std::string_view s);

}  // namespace gpuwhy::untrusted
