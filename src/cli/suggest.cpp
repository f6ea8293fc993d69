// SPDX-License-Identifier: Apache-2.0
#include "cli/suggest.hpp"

#include <algorithm>

namespace gpuwhy::cli {

size_t edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment: three rows of the Damerau-Levenshtein table.
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  // Compare what was typed with what the candidates spell: the leading dashes are not letters.
  const auto letters = [](const std::string& s) {
    return s.substr(s.find_first_not_of('-') == std::string::npos ? s.size()
                                                                  : s.find_first_not_of('-'));
  };
  const std::string w = letters(word);
  if (w.empty()) return "";
  const size_t allowed = std::min<size_t>(3, std::max<size_t>(1, w.size() / 3));
  std::string best;
  size_t best_d = allowed + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(w, letters(c));
    if (d < best_d) best = c, best_d = d;
  }
  return best;
}

}  // namespace gpuwhy::cli
