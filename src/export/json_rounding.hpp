// SPDX-License-Identifier: Apache-2.0
// How the JSON renderers round fractions: four decimals are plenty for shares and rates, and keep
// the output free of float noise that would make golden files flap between compilers.
#pragma once

#include <cmath>

namespace gpuwhy::render {

inline double round4(double v) { return std::round(v * 1e4) / 1e4; }

}  // namespace gpuwhy::render
