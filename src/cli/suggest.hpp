// SPDX-License-Identifier: Apache-2.0
// "Did you mean": the known word closest to a mistyped one (a flag, a command), for the one-line
// error a bad command line gets.
#pragma once

#include <string>
#include <vector>

namespace gpuwhy::cli {

// Edits (insert, delete, substitute, swap two neighbours) between `a` and `b`.
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `word`, if it is close enough to be a typo of it (at most a third of
// its letters wrong, and never more than 3), else "". Ties go to the first in `candidates`.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace gpuwhy::cli
